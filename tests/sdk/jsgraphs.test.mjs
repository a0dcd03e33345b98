// LangGraph.js graphs served by the server (the fixture project tests/jsgraphs,
// run by Node graph workers the server starts) driven through the real JS SDK.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { collectStream, humanInput, makeClient, pollUntil, uuid5, uuid7, NAMESPACE_GRAPH } from "./lib.mjs";

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

  it("a resumable stream of a JS run replays from Last-Event-ID: all from -1, the rest from a mid id", async () => {
    const thread = await client.threads.create();
    const parts = await collectStream(
      client.runs.stream(thread.thread_id, "js_chat", { input: humanInput("resume me"), streamMode: ["values", "updates", "checkpoints"], streamResumable: true }),
    );
    const runId = parts[0].data.run_id;
    const ids = parts.map((p) => p.id);
    assert.ok(ids.every((id) => typeof id === "string" && id !== ""), `ids ${ids}`);
    assert.ok(parts.some((p) => p.event === "checkpoints"));
    const replay = await collectStream(client.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1" }));
    assert.deepEqual(replay.map((p) => p.id), ids);
    assert.deepEqual(replay.map((p) => p.data), parts.map((p) => p.data));
    const k = Math.floor(ids.length / 2);
    const rest = await collectStream(client.runs.joinStream(thread.thread_id, runId, { lastEventId: ids[k] }));
    assert.deepEqual(rest.map((p) => p.id), ids.slice(k + 1));
  });

  it("updateState on a JS thread goes through the graph's reducers; a stream with subgraphs names nested events", async () => {
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "js_chat", { input: humanInput("one") });
    await client.threads.updateState(thread.thread_id, { values: { messages: [{ type: "human", content: "added" }] } });
    const state = await client.threads.getState(thread.thread_id);
    assert.deepEqual(state.values.messages.map((m) => m.content), ["one", "you said: one", "added"]);
    assert.equal(state.metadata.source, "update");

    const nested = await client.threads.create();
    const names = [];
    for await (const part of client.runs.stream(nested.thread_id, "js_nested", { input: {}, streamMode: ["updates"], streamSubgraphs: true })) names.push(part.event);
    assert.ok(names.some((n) => n.startsWith("updates|middle:")), `events ${names}`);
    const paused = await client.threads.getState(nested.thread_id, undefined, { subgraphs: true });
    assert.deepEqual(paused.tasks[0].state.next, ["inner"]);
    const done = await client.runs.wait(nested.thread_id, "js_nested", { command: { resume: "right" } });
    assert.equal(done.trail.at(-1), "finished with right");
  });

  // The v2 protocol is served live only by the replica that runs the
  // thread's runs (docs/scale-out.md): behind run.sh's round-robin proxy
  // (SDK_REPLICAS > 1) its tests are skipped, as streamv2.test.mjs is.
  const roundRobin = Number(process.env.SDK_REPLICAS ?? 1) > 1 && "the v2 protocol is not served through the round-robin proxy (docs/scale-out.md)";
  for (const transport of ["sse", "websocket"]) {
    it(`${transport}: the thread stream (protocol v2) runs a JS graph, streams its values and answers its interrupt`, { skip: roundRobin }, async () => {
      const thread = client.threads.stream(uuid7(), { assistantId: "js_chat", transport, maxReconnectAttempts: 0 });
      try {
        await thread.run.start({ input: humanInput("over v2") });
        const out = await thread.output;
        assert.equal(out.messages.at(-1).content, "you said: over v2");
      } finally {
        await thread.close();
      }
      const asking = client.threads.stream(uuid7(), { assistantId: "js_interrupt", transport, maxReconnectAttempts: 0 });
      try {
        await asking.run.start({ input: { question: "go?" } });
        await asking.values;
        assert.equal(asking.interrupted, true);
        const pending = asking.interrupts[0];
        assert.equal(pending.payload.question, "go?");
        await asking.input.respond({ namespace: [], interrupt_id: pending.interruptId, response: "yes" });
        await pollUntil(async () => (await client.threads.getState(asking.threadId)).values.done === "answered: yes", { what: "the answered graph's end" });
      } finally {
        await asking.close();
      }
    });
  }

  it("a supervisor agent runs a JS graph as its async subagent (in-process) and as a task subagent type", async () => {
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "js_lead", { input: humanInput("start chatter: hello graph") });
    // The server watches the task's run and pushes its end into the
    // supervisor's async_tasks, without a tool call.
    const task = await pollUntil(async () => {
      const tasks = Object.values((await client.threads.getState(thread.thread_id)).values.async_tasks ?? {});
      return tasks.length === 1 && tasks[0].status === "success" && tasks[0];
    }, { what: "the async task's pushed success" });
    assert.equal(task.agent_name, "chatter");
    const sub = await client.threads.getState(task.thread_id);
    assert.deepEqual(sub.values.messages.map((m) => m.content), ["hello graph", "you said: hello graph"]);

    const lead = await client.threads.create();
    const out = await client.runs.wait(lead.thread_id, "js_lead", { input: humanInput("delegate chat: ping the graph") });
    const answer = out.messages.find((m) => m.type === "tool" && m.name === "task");
    assert.match(String(answer.content), /you said: ping the graph/);
  });

  it("a deepagents JS supervisor served here starts, checks, updates, lists and cancels co-deployed graphs, with url and without, and gets the server's completion push", async () => {
    const thread = await client.threads.create();
    const tasks = async () => (await client.threads.getState(thread.thread_id)).values.asyncTasks ?? {};
    await client.runs.wait(thread.thread_id, "js_deep", { input: humanInput("start chatter: hello co-deployed\nstart remote: hello by url") });
    // The task runs end on their own; the server pushes their ends into
    // the supervisor's asyncTasks without a tool call.
    const pushed = await pollUntil(async () => {
      const all = Object.values(await tasks());
      return all.length === 2 && all.every((t) => t.status === "success") && all;
    }, { what: "both tasks' pushed success" });
    const byAgent = Object.fromEntries(pushed.map((t) => [t.agentName, t]));
    for (const [agent, text] of [["chatter", "hello co-deployed"], ["remote", "hello by url"]]) {
      const sub = await client.threads.getState(byAgent[agent].threadId);
      assert.deepEqual(sub.values.messages.map((m) => m.content), [text, `you said: ${text}`]);
    }
    const id = byAgent.chatter.taskId;
    const checked = await client.runs.wait(thread.thread_id, "js_deep", { input: humanInput(`check ${id}`) });
    const checkReply = checked.messages.findLast((m) => m.type === "tool");
    assert.match(String(checkReply.content), /you said: hello co-deployed/);
    await client.runs.wait(thread.thread_id, "js_deep", { input: humanInput(`update ${id}: and again`) });
    await pollUntil(async () => (await tasks())[id].status === "success" && (await tasks())[id].runId !== byAgent.chatter.runId, { what: "the updated task's pushed success" });
    const again = await client.threads.getState(id);
    assert.deepEqual(again.values.messages.map((m) => m.content).slice(-2), ["and again", "you said: and again"]);
    const listed = await client.runs.wait(thread.thread_id, "js_deep", { input: humanInput("list") });
    assert.match(String(listed.messages.findLast((m) => m.type === "tool").content), /2 tracked task/);
    const remoteID = byAgent.remote.taskId;
    await client.runs.wait(thread.thread_id, "js_deep", { input: humanInput(`cancel ${remoteID}`) });
    assert.equal((await tasks())[remoteID].status, "cancelled");
  });
});
