// The reference of BenchmarkJSAgentConcurrentRuns: the same agent
// (src/agent.ts: ChatOpenAI with one tool) run in Node alone, with
// LangGraph.js's MemorySaver and the stream modes the graph worker always
// asks for (updates and checkpoints, subgraphs on), N runs at once, each on a
// fresh thread. The model is a child process answering every chat completion
// with "done" after 1 s, on 127.0.0.1. After one unmeasured run, it runs the
// batch `rounds` times and prints, for each, the CPU time this process spent
// per run (user plus system, in ms): what LangGraph.js and LangChain cost
// without the server. A third argument "chat" runs src/chat.ts instead (one
// node, no model), the reference of BenchmarkJSChatConcurrentRuns.
//   node --import tsx tests/jsgraphs/bench/agent.mjs 200 3 [chat]
import http from "node:http";
import { fork } from "node:child_process";

if (process.argv[2] === "model") {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () =>
      setTimeout(() => {
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({
            id: "chatcmpl-bench",
            object: "chat.completion",
            created: 0,
            model: "scripted",
            choices: [{ index: 0, message: { role: "assistant", content: "done" }, finish_reason: "stop" }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          }),
        );
      }, 1000),
    );
  });
  server.listen(0, "127.0.0.1", () => process.send(server.address().port));
} else {
  const n = Number(process.argv[2] ?? 200);
  const rounds = Number(process.argv[3] ?? 1);
  const model = fork(new URL(import.meta.url).pathname, ["model"]);
  const port = await new Promise((resolve) => model.once("message", resolve));
  process.env.OPENAI_BASE_URL = `http://127.0.0.1:${port}/v1`;
  process.env.OPENAI_API_KEY = "bench";
  const { MemorySaver } = await import("@langchain/langgraph");
  const chat = process.argv[4] === "chat";
  const graph = chat ? (await import("../src/chat.ts")).graph : (await import("../src/agent.ts")).agent;
  const answer = chat ? "you said: wait for the model" : "done";
  const g = Object.assign(Object.create(Object.getPrototypeOf(graph)), graph);
  g.checkpointer = new MemorySaver();

  let thread = 0;
  async function once() {
    const config = { configurable: { thread_id: `t${thread++}` } };
    const input = { messages: [{ role: "user", content: "wait for the model" }] };
    for await (const _ of await g.stream(input, { ...config, subgraphs: true, streamMode: ["updates", "checkpoints"] }));
    const state = await g.getState(config);
    if (state.values.messages.at(-1)?.content !== answer) throw new Error(`thread ${config.configurable.thread_id}: no answer`);
  }

  await once();
  for (let r = 0; r < rounds; r++) {
    const before = process.cpuUsage();
    await Promise.all(Array.from({ length: n }, once));
    const used = process.cpuUsage(before);
    console.log(((used.user + used.system) / 1000 / n).toFixed(2));
  }
  model.kill();
}
