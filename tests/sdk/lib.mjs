// Shared helpers for the SDK compatibility suite. Not a test file (the runner
// only picks up *.test.mjs), so runs.test.mjs and later files can import it too.
import assert from "node:assert/strict";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { Client } from "@langchain/langgraph-sdk";

export const API_URL = process.env.LANGGRAPH_API_URL;
if (!API_URL) {
  throw new Error("LANGGRAPH_API_URL is not set; run the suite with tests/sdk/run.sh");
}

/** The graph every test uses; langgraph.json at the repo root must define it. */
export const GRAPH_ID = "echo";

/** uuid5 namespace the server uses for system assistants (see reference §3.8). */
export const NAMESPACE_GRAPH = "6ba7b821-9dad-11d1-80b4-00c04fd430c8";

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A real SDK client. Retries are turned off (the SDK retries 5xx/429 with
 * exponential back-off, which would turn one server bug into a ~15 s stall)
 * and every request gets a timeout so a hung handler fails the test quickly.
 */
export function makeClient(extra = {}) {
  return new Client({
    apiUrl: API_URL,
    timeoutMs: 10_000,
    callerOptions: { maxRetries: 0 },
    ...extra,
  });
}

/** A short unique tag for metadata / names / namespaces so tests never collide. */
export function uniqueTag(prefix = "t") {
  return `${prefix}${randomBytes(6).toString("hex")}`;
}

function uuidBytesToString(b) {
  const h = Buffer.from(b).toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** RFC 4122 §4.3 name-based UUID, version 5 (SHA-1). */
export function uuid5(namespace, name) {
  const ns = Buffer.from(namespace.replace(/-/g, ""), "hex");
  assert.equal(ns.length, 16, "namespace must be a UUID");
  const digest = createHash("sha1").update(ns).update(Buffer.from(name, "utf8")).digest();
  const b = Buffer.from(digest.subarray(0, 16));
  b[6] = (b[6] & 0x0f) | 0x50; // version 5
  b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
  return uuidBytesToString(b);
}

/** RFC 9562 UUIDv7: 48-bit Unix-ms timestamp, version 7, variant 10, random rest. */
export function uuid7() {
  const b = randomBytes(16);
  const ms = BigInt(Date.now());
  for (let i = 0; i < 6; i++) b[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  return uuidBytesToString(b);
}

export const uuid4 = () => randomUUID();

/** Asserts that `promise` rejects with the SDK's HTTPError carrying `status`. */
export async function rejectsWithStatus(promise, status, what = "") {
  let err;
  try {
    const value = await promise;
    assert.fail(`${what} expected HTTP ${status}, but the call resolved with ${JSON.stringify(value)}`);
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e;
    err = e;
  }
  assert.equal(
    err?.status,
    status,
    `${what} expected HTTP ${status}, got ${err?.status ?? "no status"}: ${err?.message}`,
  );
  return err;
}

/** Raw HTTP helper for wire-level checks the SDK hides. Returns {status, headers, text, json}. */
export async function raw(method, path, { body, headers = {}, json } = {}) {
  const init = { method, headers: { ...headers }, signal: AbortSignal.timeout(10_000) };
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers["content-type"] ??= "application/json";
  } else if (body !== undefined) {
    init.body = body;
  }
  const res = await fetch(`${API_URL}${path}`, init);
  const text = await res.text();
  let parsed;
  try {
    parsed = text.length ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, json: parsed };
}

/** Poll `fn` until it returns a truthy value or the deadline passes (no fixed sleeps). */
export async function pollUntil(fn, { timeoutMs = 10_000, intervalMs = 50, what = "condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > deadline) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Asserts `s` is a string that parses as a date. */
export function assertTimestamp(s, what = "timestamp") {
  assert.equal(typeof s, "string", `${what} should be a string, got ${JSON.stringify(s)}`);
  assert.ok(!Number.isNaN(Date.parse(s)), `${what} should be an ISO-8601 date, got ${JSON.stringify(s)}`);
}

export function assertUuid(s, what = "id") {
  assert.equal(typeof s, "string", `${what} should be a string`);
  assert.match(s, UUID_RE, `${what} should be a UUID`);
}

/** Sorted keys, for comparing `select` projections. */
export const keysOf = (o) => Object.keys(o).sort();

let cachedNode;
/**
 * The name of a real (non-"__start__"/"__end__") node of the echo graph, taken
 * from GET /assistants/echo/graph, for `asNode` in state updates.
 */
export async function echoNode(client) {
  if (cachedNode) return cachedNode;
  const graph = await client.assistants.getGraph(GRAPH_ID);
  const ids = (graph?.nodes ?? []).map((n) => String(n.id)).filter((id) => !id.startsWith("__"));
  cachedNode = ids[0] ?? "__start__";
  return cachedNode;
}

/** A LangChain-serialised human message as the SDK sends it inside `values`. */
export const human = (content, id) => ({ type: "human", content, id });

/**
 * Drains an SDK stream (runs.stream / runs.joinStream) into an array of
 * {event, data, id} parts. `id` is undefined when the server sent none.
 */
export async function collectStream(iterable) {
  const parts = [];
  for await (const part of iterable) parts.push({ event: part.event, data: part.data, id: part.id });
  return parts;
}

/** Parses an SSE body into [{id, event, data}] (data JSON-parsed; comments skipped). */
export function parseSSE(text) {
  const out = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let id;
    let event = "";
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line === "" || line.startsWith(":")) continue;
      const i = line.indexOf(":");
      const field = i === -1 ? line : line.slice(0, i);
      let value = i === -1 ? "" : line.slice(i + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "id") id = value;
      else if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (!event && !data.length && id === undefined) continue;
    out.push({ id, event, data: data.length ? JSON.parse(data.join("\n")) : null });
  }
  return out;
}

/**
 * Raw SSE request for wire-level checks (headers, `id:` lines) the SDK hides.
 * Reads the whole body (the stream must end). Returns {status, headers, text, events}.
 */
export async function rawSSE(method, path, { json, headers = {}, timeoutMs = 10_000 } = {}) {
  const init = { method, headers: { accept: "text/event-stream", ...headers }, signal: AbortSignal.timeout(timeoutMs) };
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers["content-type"] = "application/json";
  }
  const res = await fetch(`${API_URL}${path}`, init);
  const text = await res.text();
  const isSSE = (res.headers.get("content-type") ?? "").includes("text/event-stream");
  return { status: res.status, headers: res.headers, text, events: isSSE ? parseSSE(text) : [] };
}

// ---------------------------------------------------------------------------
// Agent graphs (researcher, coder) against the scripted model. run.sh starts
// cmd/scriptedllm and points the server at it (OPENAI_BASE_URL); its rules
// are in cmd/scriptedllm's package comment.

/** Run input with one human message (with an id, as useStream sends it). */
export const humanInput = (text) => ({ messages: [human(text, uuid4())] });

/** The messages of a values object (or []). */
export const messagesOf = (values) => values?.messages ?? [];

/** The last message of a values object whose `type` is `type`. */
export const lastOfType = (values, type) => messagesOf(values).findLast((m) => m.type === type);

/** What the scripted model answers to plain text (rule 4). */
export const youSaid = (text) => `You said: ${text}`;

/** What the scripted model answers after a tool result (rule 1). */
export const doneWith = (toolResult) => `done: ${String(toolResult).split("\n")[0]}`;

/** Polls until the thread has `status`; fails with the last status seen. */
export async function waitThreadStatus(client, threadId, status, timeoutMs = 5_000) {
  let last;
  try {
    return await pollUntil(
      async () => {
        last = await client.threads.get(threadId);
        return last.status === status ? last : false;
      },
      { timeoutMs, what: `thread status ${status}` },
    );
  } catch (e) {
    assert.fail(`thread ${threadId} never became ${status}; last status ${last?.status}: ${e.message}`);
  }
}

/**
 * The text a `messages` (messages-tuple) stream assembles, with the chunks
 * and their metadata: {text, chunks: [{chunk, meta}]}.
 */
export function assembleMessages(parts) {
  const chunks = parts.filter((p) => p.event === "messages").map((p) => ({ chunk: p.data[0], meta: p.data[1] }));
  const text = chunks.map(({ chunk }) => (typeof chunk.content === "string" ? chunk.content : "")).join("");
  return { text, chunks };
}
