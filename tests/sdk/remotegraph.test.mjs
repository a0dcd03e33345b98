// LangGraph.js's RemoteGraph (@langchain/langgraph/remote) against the server:
// the served graphs used as if they were local ones, alone and as a node of a
// local StateGraph with a MemorySaver checkpointer. RemoteGraph talks through
// the JS SDK: runs.stream (always with "updates", to see interrupts, and
// if_not_exists "create"), threads.getState / updateState / getHistory.
//
// `echo` answers "echo: <last human text>" in its one node `echo`; `coder`
// (the scripted model of run.sh) asks for approval before write_file.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Command, END, GraphInterrupt, MemorySaver, MessagesAnnotation, START, Send, StateGraph } from "@langchain/langgraph";
import { RemoteGraph } from "@langchain/langgraph/remote";
import { GRAPH_ID, assertUuid, doneWith, humanInput, lastOfType, makeClient, messagesOf, uuid4, waitThreadStatus } from "./lib.mjs";

const client = makeClient();
const remote = new RemoteGraph({ graphId: GRAPH_ID, client });

/** A config naming a new thread; RemoteGraph creates it on the first run. */
const newThreadConfig = () => ({ configurable: { thread_id: uuid4() } });

const lastAI = (values) => lastOfType(values, "ai")?.content;

/** Drains a RemoteGraph stream into a list. */
async function drain(stream) {
  const out = [];
  for await (const chunk of await stream) out.push(chunk);
  return out;
}

/** Runs fn, which must throw LangGraph's GraphInterrupt; returns it. */
async function expectInterrupt(fn, what) {
  try {
    const value = await fn();
    assert.fail(`${what}: expected a GraphInterrupt, got ${JSON.stringify(value)}`);
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e;
    assert.ok(e instanceof GraphInterrupt, `${what}: expected a GraphInterrupt, got ${e?.name}: ${e?.message}`);
    return e;
  }
}

describe("RemoteGraph", () => {
  it("invoke runs the remote graph on a thread it creates, and without a thread", async () => {
    const config = newThreadConfig();
    const out = await remote.invoke(humanInput("hello remote"), config);
    assert.equal(lastAI(out), "echo: hello remote");
    const thread = await client.threads.get(config.configurable.thread_id);
    assert.equal(thread.status, "idle", "the thread RemoteGraph created is idle after the run");

    const stateless = await remote.invoke(humanInput("no thread"));
    assert.equal(lastAI(stateless), "echo: no thread");
  });

  it("streams values, updates and messages", async () => {
    const values = await drain(remote.stream(humanInput("v"), { ...newThreadConfig(), streamMode: "values" }));
    assert.ok(values.length >= 2, `values after the input and after echo: ${values.length}`);
    assert.equal(lastAI(values.at(-1)), "echo: v");

    const updates = await drain(remote.stream(humanInput("u"), { ...newThreadConfig(), streamMode: "updates" }));
    assert.deepEqual(
      updates.map((u) => Object.keys(u)),
      [["echo"]],
      "one update, from the echo node",
    );
    assert.equal(lastAI(updates[0].echo), "echo: u");

    const messages = await drain(remote.stream(humanInput("m"), { ...newThreadConfig(), streamMode: "messages" }));
    const ai = messages.filter(([msg]) => msg.type === "ai" || msg.type === "AIMessageChunk");
    assert.equal(ai.length, 1, `message tuples: ${JSON.stringify(messages)}`);
    const [msg, meta] = ai[0];
    assert.equal(msg.content, "echo: m");
    assert.equal(meta.langgraph_node, "echo");

    const both = await drain(remote.stream(humanInput("b"), { ...newThreadConfig(), streamMode: ["values", "updates"] }));
    const modes = new Set(both.map(([mode]) => mode));
    assert.deepEqual([...modes].sort(), ["updates", "values"], "a list of modes yields [mode, chunk] pairs");
  });

  it("getState, updateState and getStateHistory with before", async () => {
    const config = newThreadConfig();
    await remote.invoke(humanInput("first"), config);

    const state = await remote.getState(config);
    assert.equal(lastAI(state.values), "echo: first");
    assert.deepEqual(state.next, []);
    assert.deepEqual(state.tasks, []);
    assert.equal(state.config.configurable.thread_id, config.configurable.thread_id);
    assertUuid(state.config.configurable.checkpoint_id, "state checkpoint_id");
    assert.equal(state.metadata.source, "loop");
    assertUuid(state.parentConfig?.configurable?.checkpoint_id, "parent checkpoint_id");

    const note = { type: "ai", content: "a note", id: uuid4() };
    const updated = await remote.updateState(config, { messages: [note] }, "echo");
    assertUuid(updated.configurable.checkpoint_id, "updateState's checkpoint_id");
    assert.notEqual(updated.configurable.checkpoint_id, state.config.configurable.checkpoint_id);
    const after = await remote.getState(config);
    assert.equal(after.config.configurable.checkpoint_id, updated.configurable.checkpoint_id);
    assert.equal(lastAI(after.values), "a note");
    assert.deepEqual(after.metadata.writes, { echo: { messages: [note] } });

    // A past checkpoint is read through the config that names it.
    const past = await remote.getState(state.config);
    assert.equal(lastAI(past.values), "echo: first");

    const history = [];
    for await (const s of remote.getStateHistory(config)) history.push(s);
    assert.equal(history.length, 4, "input, __start__ step, echo step, update");
    assert.equal(history[0].config.configurable.checkpoint_id, updated.configurable.checkpoint_id, "newest first");

    const before = [];
    for await (const s of remote.getStateHistory(config, { before: history[0].config })) before.push(s);
    assert.deepEqual(
      before.map((s) => s.config.configurable.checkpoint_id),
      history.slice(1).map((s) => s.config.configurable.checkpoint_id),
      "before skips the named checkpoint and everything newer",
    );
    const limited = [];
    for await (const s of remote.getStateHistory(config, { limit: 1 })) limited.push(s);
    assert.equal(limited.length, 1);
  });

  it("stops at interruptBefore and resumes with Command({resume})", async () => {
    const config = newThreadConfig();
    const err = await expectInterrupt(
      () => remote.invoke(humanInput("wait"), { ...config, interruptBefore: ["echo"] }),
      "interruptBefore echo",
    );
    assert.deepEqual(err.interrupts, [], "interrupt_before carries no interrupt values");
    // RemoteGraph throws on the interrupt event, before the run has ended.
    await waitThreadStatus(client, config.configurable.thread_id, "interrupted");

    const paused = await remote.getState(config);
    assert.deepEqual(paused.next, ["echo"]);
    assert.equal(paused.tasks.length, 1);
    assert.equal(paused.tasks[0].name, "echo");
    assert.deepEqual(paused.tasks[0].interrupts, []);
    assert.equal(lastAI(paused.values), undefined, "echo has not run");

    const out = await remote.invoke(new Command({ resume: "go on" }), config);
    assert.equal(lastAI(out), "echo: wait");
    assert.deepEqual((await remote.getState(config)).next, []);
  });

  it("hands Command({resume}) to a node that interrupted (coder approval)", async () => {
    const coder = new RemoteGraph({ graphId: "coder", client });
    const config = newThreadConfig();
    const err = await expectInterrupt(() => coder.invoke(humanInput("write /r.txt remote"), config), "coder write_file");
    await waitThreadStatus(client, config.configurable.thread_id, "interrupted");
    assert.equal(err.interrupts.length, 1, `interrupts: ${JSON.stringify(err.interrupts)}`);
    assert.equal(err.interrupts[0].value.action_requests[0].name, "write_file");

    const paused = await coder.getState(config);
    assert.deepEqual(paused.next, ["tools"]);
    assert.equal(paused.tasks[0].interrupts.length, 1, "the paused task shows its interrupt");
    assert.equal(paused.tasks[0].interrupts[0].interrupt_id, err.interrupts[0].id);

    const out = await coder.invoke(new Command({ resume: { decisions: [{ type: "approve" }] } }), config);
    const tool = lastOfType(out, "tool");
    assert.equal(tool?.status, "success", `tool message: ${JSON.stringify(tool)}`);
    assert.equal(lastAI(out), doneWith(tool.content));
  });

  it("Command({goto: Send}) runs the node with the Send's input as its state", async () => {
    const config = newThreadConfig();
    await remote.invoke(humanInput("in the thread"), config);
    // LangGraph.js serializes a Send as {lg_name, node, args}.
    const out = await remote.invoke(new Command({ goto: new Send("echo", humanInput("only in the send")) }), config);
    assert.deepEqual(
      messagesOf(out).map((m) => m.content),
      ["in the thread", "echo: in the thread", "echo: only in the send"],
      "echo read the Send's messages, not the thread's",
    );
  });

  it("runs as a node of a local StateGraph with a MemorySaver", async () => {
    const parent = new StateGraph(MessagesAnnotation)
      .addNode("remote", remote)
      .addEdge(START, "remote")
      .addEdge("remote", END)
      .compile({ checkpointer: new MemorySaver() });
    // The local thread id is also the remote one (RemoteGraph forwards it).
    const config = newThreadConfig();

    const first = await parent.invoke(humanInput("from the parent"), config);
    assert.equal(lastAI(first), "echo: from the parent");
    const second = await parent.invoke(humanInput("and again"), config);
    assert.deepEqual(
      messagesOf(second).map((m) => m.content),
      ["from the parent", "echo: from the parent", "and again", "echo: and again"],
      "the local reducer merges the remote answers by id",
    );

    const local = await parent.getState(config);
    assert.equal(lastAI(local.values), "echo: and again");
    assert.deepEqual(local.next, []);
    const remoteState = await client.threads.getState(config.configurable.thread_id);
    assert.equal(lastAI(remoteState.values), "echo: and again", "the remote thread holds the same conversation");
  });
});
