// Calls to the server's public HTTP API: JSON requests and SSE streams read
// with fetch (EventSource cannot send the x-api-key header). The key is
// asked for once, when a request answers 401, and kept in sessionStorage.

const KEY_STORAGE = 'agentserver.console.apiKey';

/** ApiError is a non-2xx answer: its status and the server's message. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let askForKey = async () => null;
let pendingAsk = null;

/** setKeyPrompt installs the function that asks the user for a key. */
export function setKeyPrompt(fn) { askForKey = fn; }

export function currentKey() { return sessionStorage.getItem(KEY_STORAGE) || ''; }

export function storeKey(key) {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
}

// newKey asks once however many requests were refused at the same time.
async function newKey() {
  if (!pendingAsk) {
    pendingAsk = askForKey().finally(() => { pendingAsk = null; });
  }
  const key = await pendingAsk;
  if (key) storeKey(key);
  return key;
}

function headers(extra) {
  const h = { ...extra };
  const key = currentKey();
  if (key) h['x-api-key'] = key;
  return h;
}

// send fetches once more after each new key while the server answers 401.
async function send(path, init) {
  for (;;) {
    const res = await fetch(path, { ...init, headers: headers(init.headers) });
    if (res.status !== 401) return res;
    const refused = await errorOf(res);
    if (!(await newKey())) throw refused;
  }
}

async function errorOf(res) {
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    message = body.message || body.detail || message;
  } catch { /* not JSON: keep the status line */ }
  return new ApiError(res.status, message);
}

/** request sends a JSON request and returns the decoded answer (null when empty). */
export async function request(method, path, body, { signal } = {}) {
  const init = { method, signal, headers: {} };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers['content-type'] = 'application/json';
  }
  const res = await send(path, init);
  if (!res.ok) throw await errorOf(res);
  const text = await res.text();
  return text.trim() ? JSON.parse(text) : null;
}

export const get = (path, opts) => request('GET', path, undefined, opts);
export const post = (path, body, opts) => request('POST', path, body, opts);

/**
 * openStream reads the SSE stream at path and calls onEvent({event, data, id})
 * for each event (data parsed as JSON when it is JSON). It returns a handle
 * whose close() ends the stream. With reconnect, a dropped stream is opened
 * again with Last-Event-ID set to the last id seen. onState(live) reports
 * when the stream is open.
 */
export function openStream(path, { onEvent, onState = () => {}, onEnd = () => {}, lastEventId, reconnect = false }) {
  const ctrl = new AbortController();
  let lastId = lastEventId;
  let closed = false;
  const loop = async () => {
    while (!closed) {
      try {
        const extra = { accept: 'text/event-stream' };
        if (lastId !== undefined && lastId !== null) extra['last-event-id'] = String(lastId);
        const res = await send(path, { method: 'GET', headers: extra, signal: ctrl.signal });
        if (!res.ok) throw await errorOf(res);
        onState(true);
        await readEvents(res.body, (ev) => {
          if (ev.id !== undefined) lastId = ev.id;
          onEvent(ev);
        });
      } catch (err) {
        if (closed) return;
        if (err instanceof ApiError && err.status < 500) { onState(false); onEnd(err); return; }
      }
      onState(false);
      if (!reconnect || closed) { onEnd(null); return; }
      await new Promise((r) => setTimeout(r, 1000));
    }
  };
  loop();
  return { close() { closed = true; ctrl.abort(); onState(false); } };
}

// readEvents parses the text/event-stream body and calls emit per event.
async function readEvents(body, emit) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let ev = { data: [] };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, '');
      buf = buf.slice(nl + 1);
      if (line === '') {
        if (ev.data.length || ev.event) emit(finish(ev));
        ev = { data: [] };
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'data') ev.data.push(val);
      else if (field === 'event') ev.event = val;
      else if (field === 'id') ev.id = val;
    }
  }
}

function finish(ev) {
  const raw = ev.data.join('\n');
  let data = raw;
  try { data = JSON.parse(raw); } catch { /* plain text data */ }
  return { event: ev.event || 'message', id: ev.id, data };
}
