// The reference of BenchmarkJSGraphSuperStep: the same graph (src/steps.mjs)
// run in Node alone, with LangGraph.js's MemorySaver and the stream modes the
// graph worker always asks for (updates and checkpoints, subgraphs on), on a
// fresh thread per run. For each line read on stdin it runs the graph once and
// prints that run's time divided by its steps, in ns, on a line of its own, so
// that the benchmark can interleave these runs with the server's.
//   yes | head -20 | node tests/jsgraphs/bench/steps.mjs 200
import readline from "node:readline";
import { MemorySaver } from "@langchain/langgraph";
import { graph } from "../src/steps.mjs";

const steps = Number(process.argv[2] ?? 200);
const g = Object.assign(Object.create(Object.getPrototypeOf(graph)), graph);
g.checkpointer = new MemorySaver();

let n = 0;
async function once() {
  const config = { configurable: { thread_id: `t${n++}` }, recursionLimit: steps + 10 };
  const start = process.hrtime.bigint();
  for await (const _ of await g.stream({ steps }, { ...config, subgraphs: true, streamMode: ["updates", "checkpoints"] }));
  const took = Number(process.hrtime.bigint() - start);
  const state = await g.getState(config);
  if (state.values.count !== steps) throw new Error(`run ${n}: count ${state.values.count}, want ${steps}`);
  return took / steps;
}

for await (const _ of readline.createInterface({ input: process.stdin })) console.log(Math.round(await once()));
