// The agentserver graph worker: hosts the graphs of one LangGraph.js
// project and runs them for the Go server, which owns checkpoints, pending
// writes and store items. The protocol (newline-delimited JSON on fd 3) is
// described in docs/js-graphs.md; this file is its reference implementation.
//
// The worker has no dependencies of its own: @langchain/langgraph (and a
// TypeScript transpiler, for .ts graphs) are resolved from the user's
// project, so the version the user installed is the one that runs.
import net from "node:net";
import path from "node:path";
import fs from "node:fs";
import { register } from "node:module";
import { pathToFileURL } from "node:url";
import { randomUUID } from "node:crypto";

const PROTOCOL_VERSION = 2;

// ---------------------------------------------------------------------------
// Transport: one JSON message per line on fd 3, both directions.

const conn = new net.Socket({ fd: 3, readable: true, writable: true });
const nonce = randomUUID();
let nextID = 1;
const waiting = new Map(); // id -> {resolve, reject}

// The raws of the message being encoded: a Raw's toJSON stands it in as a
// placeholder that encode swaps for its text.
let encoding = [];

/** Raw is JSON text sent as it is inside a message (no second encoding). */
class Raw {
  constructor(text) {
    this.text = text;
  }

  toJSON() {
    encoding.push(this.text);
    return `${nonce}:${encoding.length - 1}`;
  }
}

function encode(msg) {
  encoding = [];
  const text = JSON.stringify(msg);
  const raws = encoding;
  encoding = [];
  if (raws.length === 0) return text;
  // Placeholders come in the order their raws were pushed.
  const parts = [];
  let from = 0;
  raws.forEach((raw, i) => {
    const mark = `"${nonce}:${i}"`;
    const at = text.indexOf(mark, from);
    parts.push(text.slice(from, at), raw);
    from = at + mark.length;
  });
  parts.push(text.slice(from));
  return parts.join("");
}

// Messages sent in one turn of the event loop go out in one write: a run
// sends several at once (a checkpoint, its snapshot, its writes), and each
// write is a system call.
let outbox = [];

function send(msg) {
  const line = encode(msg);
  if (outbox.length === 0) setImmediate(flush);
  outbox.push(line);
}

function flush() {
  const lines = outbox;
  outbox = [];
  conn.write(lines.join("\n") + "\n");
}

// A worker that exits (a graph called process.exit) still sends what it
// queued, unless the socket holds earlier data that would then come after.
process.on("exit", () => {
  if (outbox.length === 0 || conn.writableLength > 0) return;
  try {
    fs.writeSync(3, outbox.join("\n") + "\n");
  } catch {
    // the server is gone
  }
});

/** call sends a request to the server and resolves with its result. */
function call(method, params) {
  const id = nextID++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    send({ id, method, params });
  });
}

function notify(method, params) {
  send({ method, params });
}

let buffered = "";
conn.setEncoding("utf8");
conn.on("data", (chunk) => {
  buffered += chunk;
  let nl;
  while ((nl = buffered.indexOf("\n")) >= 0) {
    const line = buffered.slice(0, nl);
    buffered = buffered.slice(nl + 1);
    if (line.trim() !== "") dispatch(JSON.parse(line));
  }
});
// The server closed its end: it is stopping (or gone); so is the worker.
conn.on("end", () => process.exit(0));
conn.on("error", () => process.exit(1));

function dispatch(msg) {
  if (msg.method === undefined) {
    const w = waiting.get(msg.id);
    if (w === undefined) return;
    waiting.delete(msg.id);
    if (msg.error) w.reject(Object.assign(new Error(msg.error.message), { name: msg.error.name ?? "Error" }));
    else w.resolve(msg.result ?? {});
    return;
  }
  const handler = handlers[msg.method];
  if (msg.id === undefined) {
    // Deferred like requests, so that a cancel sent after a run finds it.
    Promise.resolve().then(() => handler?.(msg.params ?? {}));
    return;
  }
  if (handler === undefined) {
    send({ id: msg.id, error: { name: "MethodNotFound", message: `unknown method ${msg.method}` } });
    return;
  }
  Promise.resolve()
    .then(() => handler(msg.params ?? {}))
    .then(
      (result) => send({ id: msg.id, result: result ?? {} }),
      (err) => send({ id: msg.id, error: errorOf(err) }),
    );
}

function errorOf(err) {
  if (err instanceof Error) {
    const out = { name: err.name || "Error", message: err.message };
    if (err.state) out.state = err.state;
    // An HTTPException (@langchain/langgraph-sdk/auth, hono) keeps its status.
    if (Number.isInteger(err.status)) out.status = err.status;
    return out;
  }
  return { name: "Error", message: String(err) };
}

// ---------------------------------------------------------------------------
// Values as clients see them: LangChain messages become plain dicts
// ({...data, type}), as LangGraph Platform's API shows them; a streamed
// chunk's type is its class ("AIMessageChunk"), as the Python server and
// the Go executor write it.

function isMessage(v) {
  return typeof v.toDict === "function" && typeof v._getType === "function";
}

function messageDict(raw) {
  const { type, data } = raw.toDict();
  const chunk = typeof raw.concat === "function" && raw.constructor?.lc_name?.();
  return { ...data, type: typeof chunk === "string" && chunk.endsWith("MessageChunk") ? chunk : type };
}

function plainReplacer(key, value) {
  const raw = this[key];
  if (raw != null && typeof raw === "object" && isMessage(raw)) return messageDict(raw);
  return value;
}

// Set by plainValue when it left an object of a class (not a message) as
// it is: its JSON may hold messages only the replacer reaches.
let opaque = false;

/**
 * plainValue is value with the messages among its arrays and plain
 * objects turned into dicts, copying only what changes: JSON.stringify
 * then needs no replacer, and calls no message's toJSON (LangChain's
 * serialization, a costly one).
 */
function plainValue(v) {
  if (v === null || typeof v !== "object") return v;
  if (isMessage(v)) return plainValue(messageDict(v));
  if (Array.isArray(v)) {
    let out;
    for (let i = 0; i < v.length; i++) {
      const x = plainValue(v[i]);
      if (x !== v[i]) (out ??= v.slice())[i] = x;
    }
    return out ?? v;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) {
    opaque = true;
    return v;
  }
  let out;
  for (const k in v) {
    if (!Object.hasOwn(v, k)) continue;
    const x = plainValue(v[k]);
    if (x !== v[k]) (out ??= { ...v })[k] = x;
  }
  return out ?? v;
}

/** plainJSON is the JSON text of value with messages as dicts. */
function plainJSON(value) {
  opaque = false;
  const v = plainValue(value ?? null);
  return (opaque ? JSON.stringify(v, plainReplacer) : JSON.stringify(v)) ?? "null";
}

function plain(value) {
  return JSON.parse(plainJSON(value));
}

// ---------------------------------------------------------------------------
// The project: its @langchain/langgraph and its graphs.

let lg; // the user's @langchain/langgraph
const graphs = new Map(); // graph id -> {kind, value, file}
const runs = new Map(); // run id -> AbortController

let projectDir;

/**
 * resolveImport finds a package's module as an import from the project
 * would (the "import" condition of its exports): createRequire resolves
 * the "require" condition, which names CommonJS builds. It returns the
 * file's path, or undefined when the package is not installed.
 */
function resolveImport(spec) {
  const parts = spec.split("/");
  const name = spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
  const sub = "." + spec.slice(name.length);
  for (let dir = projectDir; ; dir = path.dirname(dir)) {
    const pkgDir = path.join(dir, "node_modules", name);
    const pkgFile = path.join(pkgDir, "package.json");
    if (fs.existsSync(pkgFile)) {
      const pkg = JSON.parse(fs.readFileSync(pkgFile, "utf8"));
      const target = exportTarget(pkg.exports?.[sub] ?? (sub === "." ? pkg.exports : undefined)) ?? (sub === "." ? pkg.module ?? pkg.main ?? "index.js" : undefined);
      return target === undefined ? undefined : path.join(pkgDir, target);
    }
    if (path.dirname(dir) === dir) return undefined;
  }
}

function exportTarget(e) {
  if (e == null || typeof e === "string") return e ?? undefined;
  if (Array.isArray(e)) return exportTarget(e[0]);
  return exportTarget(e.import ?? e.node ?? e.default);
}

async function importFromProject(spec) {
  return import(pathToFileURL(resolveImport(spec)).href);
}

function canResolve(spec) {
  return resolveImport(spec) !== undefined;
}

/** packageVersion is the version of the package a file belongs to. */
function packageVersion(file) {
  for (let dir = path.dirname(file); path.dirname(dir) !== dir; dir = path.dirname(dir)) {
    const f = path.join(dir, "package.json");
    if (fs.existsSync(f)) {
      const pkg = JSON.parse(fs.readFileSync(f, "utf8"));
      if (pkg.name !== undefined) return pkg.version;
    }
  }
  return undefined;
}

const tsExt = /\.(ts|mts|cts|tsx)$/i;

/** setupTypeScript installs a transpiler found in the project, or throws. */
async function setupTypeScript(dir) {
  if (canResolve("tsx/esm/api")) {
    const esm = await importFromProject("tsx/esm/api");
    esm.register();
    if (canResolve("tsx/cjs/api")) (await importFromProject("tsx/cjs/api")).register();
    return "tsx";
  }
  if (canResolve("typescript")) {
    register(new URL("./ts-hooks.mjs", import.meta.url), { data: { typescript: pathToFileURL(resolveImport("typescript")).href } });
    return "typescript";
  }
  throw new Error(`no TypeScript transpiler in ${dir}: install tsx or typescript there (npm install --save-dev tsx)`);
}

function oneLine(err) {
  const msg = err instanceof Error ? `${err.name === "Error" ? "" : err.name + ": "}${err.message}` : String(err);
  return msg.replace(/\s*\n\s*/g, " ").trim();
}

/**
 * compiledOf unwraps an agent object that hides its compiled graph in a
 * private field and shows it as .graph (langchain's createAgent, and so
 * deepagents' createDeepAgent): the worker gives each run a copy of the
 * graph with the server's checkpointer, which a private field forbids.
 */
function compiledOf(value) {
  const inner = value?.graph;
  if (value != null && typeof value === "object" && !("nodes" in value) && typeof inner?.stream === "function" && "nodes" in inner) return inner;
  return value;
}

function kindOf(value) {
  if (value == null) return null;
  if (typeof value.stream === "function" && typeof value.getState === "function") return "compiled";
  if (typeof value.compile === "function") return "stategraph";
  if (typeof value === "function") return "factory";
  return null;
}

/** stateKeys lists the state channels a compiled graph outputs. */
function stateKeys(g) {
  const keys = g?.streamChannelsAsIs ?? g?.streamChannels;
  if (keys == null || typeof g?.stream !== "function") return [];
  return Array.isArray(keys) ? keys : [keys];
}

/**
 * schemasOf derives a graph's JSON Schemas at run time as the JS server
 * does first: from its zod or StateSchema state, input, output and config
 * definitions (@langchain/langgraph/zod/schema). A graph built on
 * Annotation has none of those (the JS server then reads the TypeScript
 * types of its source: graphSchemas); its schemas stay unset here.
 */
async function schemasOf(graph) {
  const out = {};
  if (graph == null || !canResolve("@langchain/langgraph/zod/schema")) return out;
  let zs;
  try {
    zs = await importFromProject("@langchain/langgraph/zod/schema");
  } catch {
    return out;
  }
  for (const [key, fn] of [["input", zs.getInputTypeSchema], ["output", zs.getOutputTypeSchema], ["state", zs.getStateTypeSchema], ["config", zs.getConfigTypeSchema]]) {
    try {
      const schema = typeof fn === "function" ? fn(graph) : undefined;
      if (schema != null) out[key] = schema;
    } catch {
      // not derivable: the server's channel-based schema stands
    }
  }
  return out;
}

/**
 * graphSchemas is schemasOf, completed for a TypeScript graph whose state
 * has no runtime types (an Annotation) by the schemas its types give
 * (tsschema.mjs, with the project's typescript), derived once at load.
 */
async function graphSchemas(graph, id, file, exportName) {
  const out = await schemasOf(graph);
  if (out.state !== undefined || !tsExt.test(file)) return out;
  const { schemasFromTypes } = await import("./tsschema.mjs");
  return { ...schemasFromTypes(id, file, exportName), ...out };
}

/** subgraphsOf maps the namespaces of a graph's subgraphs ("node", "node|inner") to their state channels. */
async function subgraphsOf(graph) {
  const out = {};
  if (typeof graph?.getSubgraphsAsync !== "function") return out;
  for await (const [ns, sub] of graph.getSubgraphsAsync(undefined, true)) out[ns] = { state_keys: stateKeys(sub) };
  return out;
}

async function drawable(graph, xray) {
  const g = typeof graph.getGraphAsync === "function" ? await graph.getGraphAsync({ xray }) : graph.getGraph({ xray });
  return g.toJSON();
}

/**
 * warmUp runs a two-node graph of the project's own @langchain/langgraph
 * up to `runs` times (and for at most `budgetMs`), in memory, with the
 * stream options and encoding of a real run, so that V8 has compiled
 * LangGraph.js's loop, its channels and checkpoints before the first run
 * arrives: a fresh worker's first runs otherwise take about twice as long
 * as later ones. None of the user's code runs, nothing reaches the server.
 * It returns the runs done and their time, and the error that stopped it
 * early; a LangGraph.js without the APIs it uses is not warmed.
 */
async function warmUp(runs, budgetMs) {
  const started = performance.now();
  let n = 0;
  if (runs <= 0 || !lg.StateGraph || !lg.Annotation?.Root || !lg.MemorySaver) return { runs: n, ms: 0 };
  // The budget bounds a run too: a LangGraph.js that stalls here must not
  // hold back the worker's start. Runs get an AbortController's signal, as
  // real runs do.
  const budget = new AbortController();
  const timer = setTimeout(() => budget.abort(), budgetMs);
  try {
    const State = lg.Annotation.Root({ text: lg.Annotation(), steps: lg.Annotation({ reducer: (a, b) => a + b, default: () => 0 }) });
    const graph = new lg.StateGraph(State)
      .addNode("first", (s) => ({ text: `${s.text}!`, steps: 1 }))
      .addNode("second", async (s) => ({ text: s.text.toUpperCase(), steps: 1 }))
      .addEdge(lg.START, "first")
      .addEdge("first", "second")
      .addEdge("second", lg.END)
      .compile({ checkpointer: new lg.MemorySaver() });
    const options = { subgraphs: true, streamMode: ["values", "updates", "checkpoints"], signal: budget.signal };
    for (; n < runs && !budget.signal.aborted; n++) {
      for await (const [, mode, chunk] of await graph.stream({ text: "warm-up" }, { configurable: { thread_id: `warm-up-${n}` }, ...options })) {
        if (mode === "checkpoints") encode({ snapshot: snapshotOf("warm-up", chunk, {}) });
        encode({ payload: new Raw(plainJSON(streamPayload(mode, chunk))) });
      }
    }
  } catch (err) {
    // The budget ran out mid-run, or a LangGraph.js that differs: its
    // first runs are just not (fully) warmed.
    if (!budget.signal.aborted) return { runs: n, ms: Math.round(performance.now() - started), error: oneLine(err) };
  } finally {
    clearTimeout(timer);
  }
  return { runs: n, ms: Math.round(performance.now() - started) };
}

/** graphFor returns the compiled graph of a run (a factory is called with its config). */
async function graphFor(entry, config) {
  if (entry.kind !== "factory") return entry.value;
  let made = compiledOf(await entry.value(config));
  if (kindOf(made) === "stategraph") made = made.compile();
  if (kindOf(made) !== "compiled") throw new TypeError(`the factory exported by ${entry.file} returned ${typeof made}, not a graph`);
  return made;
}

async function loadGraph(id, spec) {
  const file = spec.path;
  let mod;
  try {
    mod = await import(pathToFileURL(file).href);
  } catch (err) {
    throw new Error(`cannot import ${file}: ${oneLine(err)}`);
  }
  const name = spec.export || "default";
  if (!(name in mod)) {
    const has = Object.keys(mod).filter((k) => k !== "__esModule");
    throw new Error(`${file} has no export named "${name}" (it exports: ${has.length ? has.join(", ") : "nothing"})`);
  }
  let value = compiledOf(mod[name]);
  let kind = kindOf(value);
  if (kind === null) throw new Error(`export "${name}" of ${file} is not a graph, a StateGraph or a factory function (it is ${value === null ? "null" : typeof value})`);
  if (kind === "stategraph") {
    value = value.compile();
    kind = "compiled";
  }
  const entry = { kind, value, file };
  let drawing = null;
  let drawn = null;
  try {
    drawn = kind === "factory" ? await graphFor(entry, { configurable: {} }) : value;
    drawing = await drawable(drawn, false);
  } catch (err) {
    if (kind !== "factory") throw new Error(`cannot draw the graph of ${file}: ${oneLine(err)}`);
  }
  graphs.set(id, entry);
  return { kind, drawable: drawing, state_keys: stateKeys(drawn ?? value), subgraphs: await subgraphsOf(drawn), schemas: await graphSchemas(drawn, id, file, name) };
}

const handlers = {
  async init(p) {
    const dir = p.project_dir;
    projectDir = dir;
    if (p.api_url) serveCoDeployed(p.api_url, p.api_key);
    const out = { protocol: PROTOCOL_VERSION, node: process.versions.node, graphs: {}, errors: [] };
    const fail = (graph, file, message) => out.errors.push({ graph, file, message });
    const entries = Object.entries(p.graphs ?? {});
    // The auth module and the custom routes' app load like graphs, and
    // report their failures as entries named "auth.path" and "http.app".
    const modules = [...(p.auth ? [["auth.path", p.auth]] : []), ...(p.http_app ? [["http.app", p.http_app]] : [])];
    const langgraphPath = resolveImport("@langchain/langgraph");
    if (langgraphPath === undefined && entries.length > 0) {
      for (const [id, spec] of entries) fail(id, spec.path, `@langchain/langgraph is not installed in ${dir} (run npm install there)`);
      return out;
    }
    if (langgraphPath !== undefined) {
      lg = await import(pathToFileURL(langgraphPath).href);
      out.langgraph = packageVersion(langgraphPath);
    }
    if ([...entries, ...modules].some(([, spec]) => tsExt.test(spec.path))) {
      try {
        out.typescript = await setupTypeScript(dir);
      } catch (err) {
        for (const [id, spec] of [...entries, ...modules]) if (tsExt.test(spec.path)) fail(id, spec.path, err.message);
      }
    }
    for (const [id, spec] of entries) {
      if (out.errors.some((e) => e.graph === id)) continue;
      try {
        out.graphs[id] = await loadGraph(id, spec);
      } catch (err) {
        fail(id, spec.path, err.message);
      }
    }
    if (lg !== undefined && out.errors.length === 0) out.warm_up = await warmUp(p.warm_up_runs ?? 0, p.warm_up_ms ?? 0);
    for (const [what, spec] of modules) {
      if (out.errors.some((e) => e.graph === what)) continue;
      try {
        if (what === "auth.path") out.auth = await loadAuth(spec);
        else out.http = await loadApp(spec);
      } catch (err) {
        fail(what, spec.path, err.message);
      }
    }
    return out;
  },

  // authenticate runs the Auth module's authenticate handler on a request
  // (method, url and headers; no body) and returns the user it names.
  async authenticate(p) {
    const cb = auth?.["~handlerCache"]?.authenticate;
    if (cb === undefined) return { user: null };
    const res = await cb(new Request(p.url, { method: p.method, headers: p.headers }));
    return { user: userOf(res) };
  },

  // authorize runs the most specific of the Auth module's on(...)
  // handlers for resource:action, as LangGraph does: resource:action,
  // resource, *:action, then *. It answers the handler's filters (null:
  // unrestricted) and the value as the handler left it (owner metadata
  // written, a store namespace rewritten); false denies with a 403.
  async authorize(p) {
    const handlers = auth?.["~handlerCache"]?.callbacks ?? {};
    const key = handlerKey(handlers, p.resource, p.action);
    const value = p.value ?? {};
    if (key === undefined) return { filters: null, value };
    const user = p.user ?? {};
    const res = await handlers[key]({ event: `${p.resource}:${p.action}`, resource: p.resource, action: p.action, value, user, permissions: user.permissions ?? [] });
    if (res == null || res === true) return { filters: null, value };
    if (res === false) throw Object.assign(new Error(`${p.resource}:${p.action} denied by the auth module`), { name: "HTTPException", status: 403 });
    if (typeof res !== "object" || Array.isArray(res)) throw new TypeError(`the auth module's "${key}" handler returned ${Array.isArray(res) ? "an array" : typeof res}: want nothing, a boolean or a filter object`);
    return { filters: res, value };
  },

  // http serves one request with the custom routes' Hono app. The
  // response goes back as notifications: http.head (status, headers),
  // http.body (base64 chunks, as the app produces them), then this
  // request's answer once the body has ended.
  async http(p) {
    if (httpApp === undefined) throw new Error("no http.app is loaded");
    const ac = new AbortController();
    httpRequests.set(p.stream_id, ac);
    try {
      const init = { method: p.method, headers: p.headers, signal: ac.signal };
      if (p.body) init.body = Buffer.from(p.body, "base64");
      const res = await httpApp.fetch(new Request(p.url, init), { langgraph_auth_user: p.user ?? null });
      notify("http.head", { stream_id: p.stream_id, status: res.status, headers: [...res.headers] });
      if (res.body == null) return {};
      const reader = res.body.getReader();
      ac.signal.addEventListener("abort", () => reader.cancel().catch(() => {}));
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return {};
        if (value?.length) notify("http.body", { stream_id: p.stream_id, data: Buffer.from(value).toString("base64") });
      }
    } finally {
      httpRequests.delete(p.stream_id);
    }
  },

  // http.cancel (a notification) stops a request whose client went away.
  "http.cancel"(p) {
    httpRequests.get(p.stream_id)?.abort(new Error("client closed the request"));
  },

  async graph(p) {
    const entry = graphs.get(p.graph_id);
    if (entry === undefined) throw new Error(`graph ${p.graph_id} is not loaded`);
    const g = await graphFor(entry, { configurable: p.configurable ?? {} });
    return drawable(g, p.xray ?? false);
  },

  async run(p) {
    const entry = graphs.get(p.graph_id);
    if (entry === undefined) throw new Error(`graph ${p.graph_id} is not loaded`);
    const ac = new AbortController();
    runs.set(p.run_id, ac);
    try {
      return await runGraph(entry, p, ac.signal);
    } finally {
      runs.delete(p.run_id);
    }
  },

  // update_state applies a client's update with the graph's own
  // updateState (its channels' reducers, the node it is attributed to),
  // then describes the new checkpoint with a snapshot, as runs do.
  async update_state(p) {
    const entry = graphs.get(p.graph_id);
    if (entry === undefined) throw new Error(`graph ${p.graph_id} is not loaded`);
    const configurable = { thread_id: p.thread_id, checkpoint_ns: "" };
    if (p.checkpoint_id) configurable.checkpoint_id = p.checkpoint_id;
    const graph = withCheckpointer(await graphFor(entry, { configurable }), p.run_id);
    const next = await graph.updateState({ configurable }, p.values ?? null, p.as_node || undefined);
    const state = await graph.getState(next);
    notify("snapshot", snapshotOf(p.run_id, state, p.as_node ? { [p.as_node]: p.values ?? null } : {}));
    return { checkpoint_id: next.configurable.checkpoint_id };
  },

  cancel(p) {
    runs.get(p.run_id)?.abort(new Error("run cancelled"));
  },

  ping() {
    return {};
  },
};

/**
 * serveCoDeployed points the LangGraph SDK clients that name no URL at the
 * serving server, as the JS server does for graphs it hosts: deepagents'
 * async subagents without url reach the graphs co-deployed with them. The
 * server's API key, when it has one, goes with their requests; graphs can
 * also name the server by LANGGRAPH_API_URL.
 */
function serveCoDeployed(apiURL, apiKey) {
  globalThis[Symbol.for("langgraph_api:url")] = apiURL;
  process.env.LANGGRAPH_API_URL ??= apiURL;
  if (!apiKey) return;
  globalThis[Symbol.for("langgraph_api:fetch")] = (input, init = {}) => {
    const headers = new Headers(init.headers);
    if (!headers.has("x-api-key")) headers.set("x-api-key", apiKey);
    return fetch(input, { ...init, headers });
  };
}

// ---------------------------------------------------------------------------
// Custom auth (auth.path) and custom routes (http.app).

let auth; // the project's Auth instance (@langchain/langgraph-sdk/auth)
let httpApp; // the project's Hono app
const httpRequests = new Map(); // stream id -> AbortController

/** importExport imports a module of the project and returns one of its exports. */
async function importExport(spec) {
  let mod;
  try {
    mod = await import(pathToFileURL(spec.path).href);
  } catch (err) {
    throw new Error(`cannot import ${spec.path}: ${oneLine(err)}`);
  }
  const name = spec.export || "default";
  if (!(name in mod)) {
    const has = Object.keys(mod).filter((k) => k !== "__esModule");
    throw new Error(`${spec.path} has no export named "${name}" (it exports: ${has.length ? has.join(", ") : "nothing"})`);
  }
  return mod[name];
}

/** loadAuth loads the Auth instance and says which handlers it has. */
async function loadAuth(spec) {
  const value = await importExport(spec);
  const cache = value?.["~handlerCache"];
  if (cache == null || typeof value.on !== "function") {
    throw new Error(`export "${spec.export || "default"}" of ${spec.path} is not an Auth instance of @langchain/langgraph-sdk/auth`);
  }
  auth = value;
  return { authenticate: typeof cache.authenticate === "function", handlers: Object.keys(cache.callbacks ?? {}) };
}

/** loadApp loads the Hono app and lists its routes. */
async function loadApp(spec) {
  const value = await importExport(spec);
  if (typeof value?.fetch !== "function") {
    throw new Error(`export "${spec.export || "default"}" of ${spec.path} is not a Hono app (it has no fetch method)`);
  }
  httpApp = value;
  const routes = Array.isArray(value.routes) ? value.routes.map((r) => ({ method: r.method, path: r.path })) : [];
  return { routes };
}

/** handlerKey is the most specific handler of resource:action, as LangGraph picks it. */
function handlerKey(handlers, resource, action) {
  return [`${resource}:${action}`, resource, `*:${action}`, "*"].find((k) => typeof handlers[k] === "function");
}

/** userOf is the user an authenticate handler returned, completed as LangGraph completes it. */
function userOf(res) {
  if (typeof res === "string") return { identity: res, permissions: [], display_name: res, is_authenticated: true };
  if (res == null || typeof res !== "object" || typeof res.identity !== "string" || res.identity === "") {
    throw new TypeError("the auth module's authenticate returned no identity: want a string or an object with identity");
  }
  return { ...res, permissions: res.permissions ?? [], display_name: res.display_name ?? res.identity, is_authenticated: res.is_authenticated ?? true };
}

// ---------------------------------------------------------------------------
// Runs.

function runConfig(p, signal) {
  const cfg = p.config ?? {};
  const configurable = { ...(cfg.configurable ?? {}), thread_id: p.thread_id, checkpoint_ns: "" };
  // The server hands over the checkpoint to start from: the one the run
  // named (a replay or a fork), else the thread's newest.
  delete configurable.checkpoint_id;
  if (p.checkpoint_id) configurable.checkpoint_id = p.checkpoint_id;
  const config = { ...cfg, configurable, signal };
  delete config.recursion_limit;
  if (cfg.recursion_limit !== undefined) config.recursionLimit = cfg.recursion_limit;
  if (p.context != null) config.context = p.context;
  if (p.metadata != null) config.metadata = { ...(cfg.metadata ?? {}), ...p.metadata };
  return config;
}

/** withCheckpointer returns a copy of graph that keeps its state in the server. */
function withCheckpointer(graph, runID, start, startID) {
  const g = Object.assign(Object.create(Object.getPrototypeOf(graph)), graph);
  g.checkpointer = serverSaver(runID, start, startID);
  g.store = serverStore(runID);
  return g;
}

const streamable = new Set(["values", "updates", "messages", "custom", "tasks", "checkpoints", "debug"]);

async function runGraph(entry, p, signal) {
  const config = runConfig(p, signal);
  const graph = withCheckpointer(await graphFor(entry, config), p.run_id, p.start, p.checkpoint_id);
  let input = p.input ?? null;
  if (p.command != null) input = new lg.Command(p.command);
  // The writes since each namespace's last checkpoint ("": the graph's
  // own; "node:task|…": a subgraph's), for its next checkpoint's metadata.
  const writes = new Map();
  if (p.command == null && input != null) writes.set("", { __start__: input });
  if (p.command?.update != null) writes.set("", { __start__: p.command.update });
  const wanted = new Set((p.stream_modes ?? []).filter((m) => streamable.has(m)));
  // updates and checkpoints are always streamed: they are the checkpoints'
  // metadata.writes and the checkpoints' view. Subgraphs stream too (their
  // checkpoints are stored); their other events go out only when the run
  // asked for them.
  const options = {
    ...config,
    runId: p.run_id,
    subgraphs: true,
    streamMode: [...new Set([...wanted, "updates", "checkpoints"])],
    interruptBefore: p.interrupt_before?.length ? p.interrupt_before : undefined,
    interruptAfter: p.interrupt_after?.length ? p.interrupt_after : undefined,
  };
  // The graph's newest checkpoint as sent: a run that ends there (nothing
  // next) ends in that state, which then needs no getState.
  let last = null;
  const onChunk = ([namespace, mode, chunk]) => {
    const ns = namespace.join("|");
    if (mode === "checkpoints") {
      const snapshot = snapshotOf(p.run_id, chunk, writes.get(ns) ?? {});
      notify("snapshot", snapshot);
      if (ns === "") last = snapshot;
      writes.delete(ns);
      if (!wanted.has("checkpoints")) return;
    }
    if (mode === "updates") {
      const w = writes.get(ns) ?? {};
      for (const [node, update] of Object.entries(chunk ?? {})) if (node !== "__interrupt__") w[node] = update;
      writes.set(ns, w);
      if (!wanted.has("updates")) return;
    }
    if (ns !== "" && !p.stream_subgraphs) return;
    notify("event", { run_id: p.run_id, mode: ns === "" ? mode : `${mode}|${ns}`, payload: new Raw(plainJSON(streamPayload(mode, chunk))) });
  };
  try {
    if (p.stream_modes?.includes("events")) {
      // LangChain's own events (astream_events v2), as the JS server
      // streams them; the graph's own stream output comes among them.
      for await (const ev of graph.streamEvents(input, { ...options, version: "v2" })) {
        if (ev.event === "on_chain_stream" && ev.run_id === p.run_id) onChunk(ev.data.chunk);
        else sendEvent(p.run_id, ev);
      }
    } else {
      for await (const chunk of await graph.stream(input, options)) onChunk(chunk);
    }
  } catch (err) {
    // The thread's state after the failure (the failed task and its error
    // among the tasks) goes with the error, unless the run was cancelled.
    if (!signal.aborted) {
      try {
        err.state = await finalState(graph, p);
      } catch {
        // the error itself is what the run reports
      }
    }
    throw err;
  }
  if (last !== null && last.next.length === 0) return { checkpoint_id: last.checkpoint_id, values: last.values, next: [], tasks: last.tasks };
  return finalState(graph, p);
}

/** finalState is the thread's state at the end of a run, as the server keeps it. */
async function finalState(graph, p) {
  const config = { configurable: { thread_id: p.thread_id, checkpoint_ns: "" } };
  let state = await graph.getState(config);
  if (state.next?.length) {
    // Paused or stopped: the subgraphs its tasks run may be paused too.
    // Their newest checkpoints are described again, now with the
    // interrupts and errors their tasks wrote since.
    state = await graph.getState(config, { subgraphs: true });
    for (const t of state.tasks ?? []) describeNested(p.run_id, t.state);
  }
  return {
    checkpoint_id: state.config?.configurable?.checkpoint_id ?? null,
    values: new Raw(plainJSON(state.values)),
    next: state.next ?? [],
    tasks: new Raw(plainJSON((state.tasks ?? []).map(taskOf))),
  };
}

/** describeNested sends the snapshot of a subgraph's state and of those below it. */
function describeNested(runID, state) {
  if (state?.config?.configurable?.checkpoint_ns == null || !("values" in state)) return;
  notify("snapshot", snapshotOf(runID, state, null));
  for (const t of state.tasks ?? []) describeNested(runID, t.state);
}

function taskOf(t) {
  return {
    id: t.id,
    name: t.name,
    error: t.error == null ? null : String(t.error?.message ?? t.error),
    interrupts: (t.interrupts ?? []).map((i) => ({ value: i.value, id: i.id ?? i.interrupt_id })),
  };
}

/** sendEvent streams one LangChain event; one that cannot be encoded is skipped. */
function sendEvent(runID, ev) {
  let text;
  try {
    text = plainJSON(ev);
  } catch {
    return;
  }
  notify("event", { run_id: runID, mode: "events", payload: new Raw(text) });
}

// The checkpoints, tasks and debug modes are sent as the JS server sends
// them: a checkpoint names itself and its parent as checkpoint objects,
// its configs lose the internal keys (those starting with "__"), and a
// task running a subgraph names that subgraph's checkpoint.
function streamPayload(mode, chunk) {
  if (mode === "checkpoints") return streamCheckpoint(chunk);
  if (mode === "tasks") return streamTask(chunk);
  if (mode === "debug" && chunk?.type === "checkpoint") return { ...chunk, payload: streamCheckpoint(chunk.payload) };
  if (mode === "debug" && chunk?.type === "task_result") return { ...chunk, payload: streamTask(chunk.payload) };
  return chunk;
}

function checkpointOf(config) {
  const c = config?.configurable;
  if (typeof c?.thread_id !== "string") return null;
  return { thread_id: c.thread_id, checkpoint_ns: c.checkpoint_ns || "", checkpoint_id: c.checkpoint_id || null, checkpoint_map: c.checkpoint_map || null };
}

function publicConfig(config) {
  if (config?.configurable == null) return config ?? null;
  const out = { ...config, configurable: Object.fromEntries(Object.entries(config.configurable).filter(([k]) => !k.startsWith("__"))) };
  delete out.callbacks;
  delete out.signal;
  return out;
}

function streamCheckpoint(cp) {
  const out = { ...cp, checkpoint: checkpointOf(cp.config), parent_checkpoint: checkpointOf(cp.parentConfig), tasks: (cp.tasks ?? []).map(streamTask) };
  out.parent_config = publicConfig(cp.parentConfig);
  delete out.parentConfig;
  out.config = publicConfig(cp.config);
  return out;
}

function streamTask(task) {
  const checkpoint = checkpointOf(task?.state);
  if (checkpoint === null) return task;
  const out = { ...task, checkpoint };
  delete out.state;
  return out;
}

function snapshotOf(runID, cp, writes) {
  const configurable = cp.config?.configurable ?? {};
  return {
    run_id: runID,
    checkpoint_id: configurable.checkpoint_id,
    checkpoint_ns: configurable.checkpoint_ns ?? "",
    parent_id: cp.parentConfig?.configurable?.checkpoint_id ?? null,
    values: new Raw(plainJSON(cp.values)),
    metadata: writes === null ? null : new Raw(plainJSON({ ...cp.metadata, writes })),
    next: cp.next ?? [],
    tasks: new Raw(plainJSON((cp.tasks ?? []).map(taskOf))),
  };
}

// ---------------------------------------------------------------------------
// The checkpointer and the store: both call back into the server.

const utf8 = new TextDecoder();

function typed(type, bytes) {
  if (type === "json") return { type, value: new Raw(utf8.decode(bytes)) };
  return { type, base64: Buffer.from(bytes).toString("base64") };
}

function untypedText(t) {
  return t.type === "json" ? JSON.stringify(t.value) : Buffer.from(t.base64, "base64");
}

function saverClass() {
  return class ServerSaver extends lg.BaseCheckpointSaver {
    /**
     * start is the tuple the run starts from (null: the thread has none),
     * sent with the run: the run's first read of it needs no round trip.
     * startID is the id that read names ("" : the newest).
     */
    constructor(runID, start, startID) {
      super();
      this.runID = runID;
      this.start = start;
      this.startID = startID ?? "";
    }

    /**
     * takeStart answers, once, the read of the checkpoint the run starts
     * from with the tuple sent with the run; undefined for any other read,
     * and once the run has written a checkpoint (the newest is then its).
     */
    takeStart(c) {
      const start = this.start;
      if (start === undefined || (c.checkpoint_ns ?? "") !== "" || (c.checkpoint_id ?? "") !== this.startID) return undefined;
      this.start = undefined;
      return start;
    }

    async revive(t) {
      const configurable = { thread_id: t.thread_id, checkpoint_ns: t.checkpoint_ns, checkpoint_id: t.checkpoint_id };
      const tuple = {
        config: { configurable },
        checkpoint: await this.serde.loadsTyped("json", JSON.stringify(t.checkpoint)),
        metadata: await this.serde.loadsTyped("json", JSON.stringify(t.metadata)),
        pendingWrites: await Promise.all(
          (t.writes ?? []).map(async (w) => [w.task_id, w.channel, await this.serde.loadsTyped(w.value.type, untypedText(w.value))]),
        ),
      };
      if (t.parent_id) tuple.parentConfig = { configurable: { ...configurable, checkpoint_id: t.parent_id } };
      return tuple;
    }

    async getTuple(config) {
      const c = config.configurable ?? {};
      const start = this.takeStart(c);
      if (start !== undefined) return start === null ? undefined : this.revive(start);
      const r = await call("checkpoint.get", {
        run_id: this.runID,
        thread_id: c.thread_id,
        checkpoint_ns: c.checkpoint_ns ?? "",
        checkpoint_id: c.checkpoint_id ?? "",
      });
      return r.tuple ? this.revive(r.tuple) : undefined;
    }

    async *list(config, options = {}) {
      const c = config.configurable ?? {};
      const r = await call("checkpoint.list", {
        run_id: this.runID,
        thread_id: c.thread_id,
        checkpoint_ns: c.checkpoint_ns,
        before: options.before?.configurable?.checkpoint_id ?? "",
        limit: options.limit ?? 0,
        filter: options.filter ?? null,
      });
      for (const t of r.tuples ?? []) yield await this.revive(t);
    }

    async put(config, checkpoint, metadata) {
      const c = config.configurable ?? {};
      const [, cp] = await this.serde.dumpsTyped(checkpoint);
      const [, md] = await this.serde.dumpsTyped(metadata);
      this.start = undefined;
      // A notification: the server applies the run's writes in the order
      // they come and fails the run when one is refused, so LangGraph's
      // next step (and its next put, chained after this one) need not wait
      // for a round trip. Nothing here is durable either way: the server
      // commits checkpoints in the background.
      notify("checkpoint.put", {
        run_id: this.runID,
        thread_id: c.thread_id,
        checkpoint_ns: c.checkpoint_ns ?? "",
        checkpoint_id: checkpoint.id,
        parent_id: c.checkpoint_id ?? "",
        checkpoint: new Raw(utf8.decode(cp)),
        metadata: new Raw(utf8.decode(md)),
      });
      return { configurable: { thread_id: c.thread_id, checkpoint_ns: c.checkpoint_ns ?? "", checkpoint_id: checkpoint.id } };
    }

    async putWrites(config, writes, taskID, taskPath) {
      const c = config.configurable ?? {};
      const out = await Promise.all(
        writes.map(async ([channel, value], i) => {
          const [type, bytes] = await this.serde.dumpsTyped(value);
          return { channel, idx: writesIdx[channel] ?? i, value: typed(type, bytes) };
        }),
      );
      notify("checkpoint.putWrites", {
        run_id: this.runID,
        thread_id: c.thread_id,
        checkpoint_ns: c.checkpoint_ns ?? "",
        checkpoint_id: c.checkpoint_id,
        task_id: taskID,
        task_path: taskPath ?? "",
        writes: out,
      });
    }

    async deleteThread(threadID) {
      throw new Error(`deleting thread ${threadID} from inside a graph is not supported: delete it through the server's API`);
    }
  };
}

// writesIdx gives the special channels (error, scheduled, interrupt,
// resume) their fixed negative indexes, as LangGraph's WRITES_IDX_MAP does:
// a write at a negative index replaces the task's earlier one.
const writesIdx = { __error__: -1, __scheduled__: -2, __interrupt__: -3, __resume__: -4 };

function storeClass() {
  return class ServerStore extends lg.BaseStore {
    constructor(runID) {
      super();
      this.runID = runID;
    }

    async batch(ops) {
      const r = await call("store.batch", { run_id: this.runID, ops: ops.map(opOf) });
      return r.results.map((res, i) => resultOf(ops[i], res));
    }
  };
}

function opOf(op) {
  if ("namespacePrefix" in op) return { op: "search", namespace_prefix: op.namespacePrefix, filter: op.filter ?? null, limit: op.limit ?? 10, offset: op.offset ?? 0, query: op.query ?? "" };
  if ("matchConditions" in op || "maxDepth" in op) {
    const cond = op.matchConditions ?? [];
    return {
      op: "list_namespaces",
      prefix: cond.find((m) => m.matchType === "prefix")?.path ?? null,
      suffix: cond.find((m) => m.matchType === "suffix")?.path ?? null,
      max_depth: op.maxDepth ?? null,
      limit: op.limit ?? 100,
      offset: op.offset ?? 0,
    };
  }
  if ("value" in op) {
    if (op.value === null) return { op: "delete", namespace: op.namespace, key: op.key };
    return { op: "put", namespace: op.namespace, key: op.key, value: plain(op.value), index: op.index ?? null, ttl: op.ttl ?? null };
  }
  return { op: "get", namespace: op.namespace, key: op.key };
}

function itemOf(it) {
  if (it == null) return null;
  const item = { namespace: it.namespace, key: it.key, value: it.value, createdAt: new Date(it.created_at), updatedAt: new Date(it.updated_at) };
  if (it.score != null) item.score = it.score;
  return item;
}

function resultOf(op, res) {
  if ("namespacePrefix" in op) return (res ?? []).map(itemOf);
  if ("matchConditions" in op || "maxDepth" in op) return res ?? [];
  if ("value" in op) return undefined;
  return itemOf(res);
}

// The classes extend the user's BaseCheckpointSaver and BaseStore, so they
// are made once that package is imported.
let ServerSaverClass;
let ServerStoreClass;
function serverSaver(runID, start, startID) {
  ServerSaverClass ??= saverClass();
  return new ServerSaverClass(runID, start, startID);
}
function serverStore(runID) {
  ServerStoreClass ??= storeClass();
  return new ServerStoreClass(runID);
}

// The worker is ready to take requests; the server sends init first.
notify("hello", { protocol: PROTOCOL_VERSION, node: process.versions.node, pid: process.pid });
