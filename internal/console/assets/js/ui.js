// Small DOM helpers shared by the views.

/** h builds an element: h('div', {class: 'x', onclick}, child, 'text', [more]). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** replace swaps el's children for the given ones. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function badge(status) {
  const s = String(status || 'unknown');
  return h('span', { class: `badge ${s}`, 'data-status': s }, s);
}

export function shortId(id) { return id ? String(id).slice(0, 8) + '…' + String(id).slice(-4) : '—'; }

/** time shows a timestamp as local time, the full value in its title. */
export function time(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return h('span', {}, String(iso));
  const today = new Date().toDateString() === d.toDateString();
  const text = today ? d.toLocaleTimeString() : d.toLocaleString();
  return h('time', { datetime: iso, title: iso, class: 'num' }, text);
}

/** json renders a value as indented, coloured JSON. */
export function json(value) {
  const pre = h('pre', { class: 'json' });
  const text = JSON.stringify(value, null, 2) ?? 'undefined';
  const re = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    pre.append(text.slice(last, m.index));
    if (m[1]) {
      pre.append(h('span', { class: m[2] ? 'k' : 's' }, m[1]));
      if (m[2]) pre.append(m[2]);
    } else if (m[3]) pre.append(h('span', { class: 'l' }, m[3]));
    else pre.append(h('span', { class: 'n' }, m[4]));
    last = m.index + m[0].length;
  }
  pre.append(text.slice(last));
  return pre;
}

/** textOf is the readable text of a message's content (string or parts). */
export function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === 'string' ? p : p?.text ?? '')).join('');
  return content == null ? '' : JSON.stringify(content);
}

const ROLES = { human: 'user', user: 'user', ai: 'assistant', assistant: 'assistant', AIMessageChunk: 'assistant', tool: 'tool', system: 'system' };

/** messages renders a list of chat messages. */
export function messages(list) {
  if (!Array.isArray(list) || list.length === 0) return h('p', { class: 'muted' }, 'No messages.');
  return h('div', { class: 'messages' }, list.map((m) => {
    const role = ROLES[m.type || m.role] || m.type || m.role || 'message';
    const calls = (m.tool_calls || []).map((c) => h('div', { class: 'tool-call' }, `→ ${c.name}(${JSON.stringify(c.args ?? {})})`));
    return h('div', { class: `msg ${role === 'user' ? 'human' : role}` },
      h('div', { class: 'role' }, role + (m.name ? ` · ${m.name}` : '')),
      h('div', { class: 'text' }, textOf(m.content)),
      calls);
  }));
}

let toastTimer;
/** toast shows a short message in the corner. */
export function toast(text, kind = '') {
  const el = document.getElementById('toast');
  el.textContent = text;
  el.className = `toast show ${kind}`;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.className = 'toast'; }, 3500);
}

/** guard runs fn and shows its error as a toast. */
export async function guard(fn) {
  try { return await fn(); } catch (err) { toast(err.message || String(err), 'error'); return undefined; }
}

/** debounce calls fn once, wait ms after the last of a burst of calls. */
export function debounce(fn, wait) {
  let t;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), wait); };
}

export function card(title, actions, ...body) {
  return h('section', { class: 'card' },
    h('div', { class: 'card-head' }, h('h2', {}, title), h('span', { class: 'grow' }), actions),
    h('div', { class: 'card-body' }, body));
}

/** eventLine is one line of a live event list. */
export function eventLine(ev) {
  const summary = typeof ev.data === 'string' ? ev.data : JSON.stringify(ev.data);
  return h('li', {}, h('span', { class: 'num' }, new Date().toLocaleTimeString()), h('span', { class: 'ev' }, ev.event), h('span', {}, summary?.slice(0, 300)));
}

/** appendEvent adds an event to a live list, drops the oldest past max, and keeps a list scrolled to its end there. */
export function appendEvent(list, ev, max) {
  const atBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - 4;
  list.append(eventLine(ev));
  if (list.children.length > max) list.firstChild.remove();
  if (atBottom) list.scrollTop = list.scrollHeight;
}

/** ms is the milliseconds between two timestamps (null when either is missing). */
export function ms(from, to) {
  const a = Date.parse(from);
  const b = Date.parse(to);
  return Number.isNaN(a) || Number.isNaN(b) ? null : Math.max(0, b - a);
}

/** duration shows milliseconds as "340 ms", "2.4 s" or "3 min 5 s". */
export function duration(msValue) {
  if (msValue === null || msValue === undefined) return '—';
  if (msValue < 1000) return `${Math.round(msValue)} ms`;
  if (msValue < 60000) return `${(msValue / 1000).toFixed(1)} s`;
  const m = Math.floor(msValue / 60000);
  return `${m} min ${Math.round((msValue % 60000) / 1000)} s`;
}

/** tokens shows a usage record ({input_tokens, output_tokens, total_tokens}) in one line. */
export function tokens(usage) {
  if (!usage || typeof usage !== 'object') return '—';
  const total = usage.total_tokens ?? ((usage.input_tokens || 0) + (usage.output_tokens || 0));
  if (!total) return '—';
  return `${total} tok (${usage.input_tokens ?? 0} in / ${usage.output_tokens ?? 0} out)`;
}

/** clip shortens text to n characters on one line. */
export function clip(text, n) {
  const s = String(text ?? '').replace(/\s+/g, ' ').trim();
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

/** firstHuman is the text of the first human message of a list, or ''. */
export function firstHuman(msgs) {
  const m = (msgs || []).find((x) => x && (x.type === 'human' || x.role === 'user'));
  return m ? textOf(m.content) : '';
}

/** lastAI is the newest AI message with text in a list, or null. */
export function lastAI(msgs) {
  return (msgs || []).filter((m) => m && (m.type === 'ai' || m.role === 'assistant') && textOf(m.content)).pop() || null;
}
