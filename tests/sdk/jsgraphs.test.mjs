// LangGraph.js graphs served by the server (the fixture project tests/jsgraphs,
// run by Node graph workers the server starts) driven through the real JS SDK.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { makeClient, uuid5, NAMESPACE_GRAPH } from "./lib.mjs";

const client = makeClient({ timeoutMs: 30_000 });

describe("LangGraph.js graphs", () => {
  it("the system assistant of a JS graph has the uuid5 id and a drawing of its nodes", async () => {
    const a = await client.assistants.get(uuid5(NAMESPACE_GRAPH, "js_chat"));
    assert.equal(a.graph_id, "js_chat");
    const g = await client.assistants.getGraph(a.assistant_id);
    assert.deepEqual(g.nodes.map((n) => n.id).sort(), ["__end__", "__start__", "respond"]);
  });

  it("runs.wait, state and history of a TypeScript StateGraph", async () => {
    const thread = await client.threads.create();
    const out = await client.runs.wait(thread.thread_id, "js_chat", { input: { messages: [{ role: "user", content: "hello" }] } });
    assert.equal(out.messages.at(-1).type, "ai");
    assert.equal(out.messages.at(-1).content, "you said: hello");
    const state = await client.threads.getState(thread.thread_id);
    assert.equal(state.values.messages.length, 2);
    assert.deepEqual(state.next, []);
    assert.equal(state.metadata.source, "loop");
    const history = await client.threads.getHistory(thread.thread_id);
    assert.deepEqual(history.map((h) => h.metadata.source), ["loop", "loop", "input"]);
    assert.equal(history[0].parent_checkpoint.checkpoint_id, history[1].checkpoint.checkpoint_id);
  });

  it("streams values and custom events, then interrupts and resumes with a Command", async () => {
    const custom = [];
    for await (const part of client.runs.stream(null, "js_custom", { input: { count: 2 }, streamMode: ["values", "custom"] })) {
      if (part.event === "custom") custom.push(part.data.progress);
    }
    assert.deepEqual(custom, [1, 2]);

    const thread = await client.threads.create();
    const paused = await client.runs.wait(thread.thread_id, "js_interrupt", { input: { question: "deploy?" } });
    assert.equal(paused.__interrupt__[0].value.question, "deploy?");
    assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");
    const done = await client.runs.wait(thread.thread_id, "js_interrupt", { command: { resume: "go" } });
    assert.equal(done.done, "answered: go");
  });

  it("a node that throws ends the run in error with the JavaScript error", async () => {
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, "js_fail", { input: {} });
    await client.runs.join(thread.thread_id, run.run_id);
    const ended = await client.runs.get(thread.thread_id, run.run_id);
    assert.equal(ended.status, "error");
    const t = await client.threads.get(thread.thread_id);
    assert.match(JSON.stringify(t.error), /the explode node failed on purpose/);
  });
});
