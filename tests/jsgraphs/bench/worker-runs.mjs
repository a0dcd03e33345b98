// Sequential runs of the side-by-side benchmark's one-node graph
// (tests/langgraphjs-dev/src/echo.mjs) without the Go server: what a run
// costs in the graph worker itself, and in LangGraph.js alone.
//
//   node tests/jsgraphs/bench/worker-runs.mjs worker [runs] [gap-ms]
//     drives internal/jsworker/node/worker.mjs over its fd 3 as the server
//     does (init, then `run` after `run` on fresh threads, the server's run
//     parameters; puts and snapshots are read and dropped), with gap-ms of
//     idle time between runs (0: none)
//   node tests/jsgraphs/bench/worker-runs.mjs alone [runs]
//     the same graph in this process with MemorySaver and the stream modes
//     the worker asks for
//
// It prints the p50 and p25 of the runs' wall time, after 100 unmeasured
// runs (docs/benchmarks.md, "JS run latency at c=1").
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const project = path.resolve(here, "../../langgraphjs-dev");
const [mode = "worker", runs = "300", gap = "0"] = process.argv.slice(2);

function report(times) {
  times.sort((a, b) => a - b);
  console.log(`${mode}: ${times.length} runs, p50 ${times[times.length >> 1].toFixed(3)} ms, p25 ${times[times.length >> 2].toFixed(3)} ms`);
}

async function measure(once) {
  for (let i = 0; i < 100; i++) await once();
  const times = [];
  for (let i = 0; i < Number(runs); i++) {
    if (Number(gap) > 0) await new Promise((r) => setTimeout(r, Number(gap)));
    const t = performance.now();
    await once();
    times.push(performance.now() - t);
  }
  report(times);
}

const input = { messages: [{ role: "user", content: "hi" }] };

if (mode === "alone") {
  const { MemorySaver } = await import(path.join(project, "node_modules/@langchain/langgraph/dist/index.js"));
  const { graph } = await import(path.join(project, "src/echo.mjs"));
  const g = Object.assign(Object.create(Object.getPrototypeOf(graph)), graph);
  g.checkpointer = new MemorySaver();
  await measure(async () => {
    const config = { configurable: { thread_id: randomUUID(), checkpoint_ns: "" }, subgraphs: true, streamMode: ["updates", "checkpoints"] };
    for await (const _ of await g.stream(input, config));
  });
} else {
  const worker = path.resolve(here, "../../../internal/jsworker/node/worker.mjs");
  const child = spawn(process.execPath, [worker], { cwd: project, stdio: ["ignore", "inherit", "inherit", "pipe"] });
  const sock = child.stdio[3];
  const waiting = new Map();
  let buffered = "";
  let nextID = 1;
  sock.setEncoding("utf8");
  sock.on("data", (chunk) => {
    buffered += chunk;
    let nl;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const msg = JSON.parse(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 1);
      if (msg.method === undefined) {
        const w = waiting.get(msg.id);
        waiting.delete(msg.id);
        if (msg.error) w.reject(new Error(msg.error.message));
        else w.resolve(msg.result);
      } else if (msg.id !== undefined) {
        // The only requests of a fresh thread's run: reads that find nothing.
        sock.write(JSON.stringify({ id: msg.id, result: { tuple: null, tuples: [] } }) + "\n");
      }
    }
  });
  const call = (method, params) =>
    new Promise((resolve, reject) => {
      const id = nextID++;
      waiting.set(id, { resolve, reject });
      sock.write(JSON.stringify({ id, method, params }) + "\n");
    });
  await call("init", { project_dir: project, graphs: { js_echo: { path: path.join(project, "src/echo.mjs"), export: "graph" } } });
  const assistant = randomUUID();
  await measure(async () => {
    const run = randomUUID();
    const thread = randomUUID();
    const configurable = { assistant_id: assistant, graph_id: "js_echo", run_id: run, thread_id: thread };
    const metadata = { assistant_id: assistant, graph_id: "js_echo", created_by: "system" };
    await call("run", { run_id: run, thread_id: thread, graph_id: "js_echo", input, config: { configurable }, metadata, stream_modes: null, start: null });
  });
  child.kill();
}
process.exit(0);
