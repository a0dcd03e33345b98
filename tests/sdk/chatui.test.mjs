// What LangChain's Agent Chat UI does with a thread, through the SDK code it
// runs: StreamOrchestrator from @langchain/langgraph-sdk/ui is the
// framework-free core of useStream (React's useStream wraps it), with the
// options and submit calls the UI makes, and the SDK's own helpers for
// branches (getMessagesMetadata, setBranch) and subagents
// (filterSubagentMessages, isSubagentNamespace). The agents are the shipped
// coder, researcher, lead and supervisor specs, driven by cmd/scriptedllm
// (see agent.test.mjs for its rules; "slow: <words>" streams one word every
// 250 ms, a model call long enough to look at the thread meanwhile).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { StreamOrchestrator, extractToolCallIdFromNamespace, isSubagentNamespace } from "@langchain/langgraph-sdk/ui";
import { API_URL, collectStream, human, makeClient, pollUntil, uniqueTag, uuid4, waitThreadStatus } from "./lib.mjs";

const client = makeClient();

/**
 * A useStream as Agent Chat UI configures it (history on), on assistantId.
 * The UI renders messages, so its streams carry token chunks (React's hook
 * tracks messages-tuple when messages are read).
 */
function chatUI(assistantId, options = {}) {
  const ui = new StreamOrchestrator(
    { fetchStateHistory: true, ...options },
    { getClient: () => client, getAssistantId: () => assistantId, getMessagesKey: () => "messages" },
  );
  ui.trackStreamMode("messages-tuple");
  return ui;
}

/**
 * Opens a thread in the UI and waits until its history is loaded, as a
 * user sees the thread before typing. (Submitting at once races useStream's
 * initial history read: its answer, when it comes last, replaces the
 * history read after the run.)
 */
async function openThread(ui, threadId) {
  ui.initThreadId(threadId);
  await pollUntil(() => !ui.historyData.isLoading && ui.historyData.data, { what: "the thread's history" });
}

/** The options of Agent Chat UI's message submit. */
const UI_SUBMIT = { streamMode: ["values"], streamSubgraphs: true, streamResumable: true };

/** A human message as the UI sends it (with an id). */
const says = (text) => ({ messages: [human(text, uuid4())] });

const typeOf = (m) => m?.type ?? m?.getType?.();
const textOf = (m) => (typeof m?.content === "string" ? m.content : JSON.stringify(m?.content));
/** [type, text] of each message, for readable diffs. */
const brief = (msgs) => msgs.map((m) => [typeOf(m), textOf(m)]);

async function newThread() {
  return client.threads.create({ metadata: { tag: uniqueTag("chatui") } });
}

describe("Agent Chat UI: human in the loop (coder)", () => {
  const PATH = "/hello.txt";

  /** A UI on a coder thread whose write of PATH waits for a decision. */
  async function pausedWrite() {
    const thread = await newThread();
    const ui = chatUI("coder");
    await openThread(ui, thread.thread_id);
    await ui.submit(says(`write ${PATH} hi`), UI_SUBMIT);
    const [interrupt] = ui.interrupts;
    assert.equal(interrupt?.value?.action_requests?.[0]?.name, "write_file", `interrupts: ${JSON.stringify(ui.interrupts)}`);
    assert.deepEqual(brief(ui.messages).map(([t]) => t), ["human", "ai"]);
    return { thread, ui, callId: ui.messages[1].tool_calls[0].id };
  }

  /** After a decision: the paused call answered, the agent done, nothing pending. */
  async function assertDecided(thread, ui, callId) {
    const msgs = ui.messages;
    assert.deepEqual(msgs.map(typeOf), ["human", "ai", "tool", "ai"], `messages: ${JSON.stringify(brief(msgs))}`);
    assert.equal(msgs[2].tool_call_id, callId, "the tool message answers the paused call (not a new one)");
    assert.equal(textOf(msgs[3]), `done: ${textOf(msgs[2]).split("\n")[0]}`);
    assert.deepEqual(ui.interrupts, [], "no approval panel comes back");
    const th = await waitThreadStatus(client, thread.thread_id, "idle");
    assert.deepEqual(Object.values(th.interrupts ?? {}).flat(), []);
    return msgs[2];
  }

  it("Approve, with the UI's body {input: {}, command: {resume: {decisions: [approve]}}}: the file is written", async () => {
    const { thread, ui, callId } = await pausedWrite();
    await ui.submit({}, { command: { resume: { decisions: [{ type: "approve" }] } } });
    const tool = await assertDecided(thread, ui, callId);
    assert.equal(textOf(tool), `Updated file ${PATH}`);
    assert.equal(tool.status, "success");
    ui.dispose();
  });

  it("Approve through the exact request body of the issue (POST /threads/{id}/runs/stream)", async () => {
    const { thread, callId } = await pausedWrite();
    const res = await fetch(`${API_URL}/threads/${thread.thread_id}/runs/stream`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ input: {}, command: { resume: { decisions: [{ type: "approve" }] } }, assistant_id: "coder" }),
    });
    assert.equal(res.status, 200);
    await res.text();
    const ui = chatUI("coder");
    await openThread(ui, thread.thread_id);
    const tool = await assertDecided(thread, ui, callId);
    assert.equal(textOf(tool), `Updated file ${PATH}`);
    ui.dispose();
  });

  it("Edit: the call runs with the edited arguments", async () => {
    const { thread, ui, callId } = await pausedWrite();
    const edited = "/edited/notes.txt";
    await ui.submit({}, {
      command: { resume: { decisions: [{ type: "edit", edited_action: { name: "write_file", args: { file_path: edited, content: "bye" } } }] } },
    });
    const tool = await assertDecided(thread, ui, callId);
    assert.equal(textOf(tool), `Updated file ${edited}`);
    ui.dispose();
  });

  it("Reject: the tool message carries the rejection and nothing is written", async () => {
    const { thread, ui, callId } = await pausedWrite();
    await ui.submit({}, { command: { resume: { decisions: [{ type: "reject", message: "not in this repo" }] } } });
    const tool = await assertDecided(thread, ui, callId);
    assert.equal(tool.status, "error");
    assert.match(textOf(tool), /not in this repo/);
    assert.doesNotMatch(textOf(tool), /Updated file/);
    ui.dispose();
  });

  it("Mark as Resolved (command goto __end__): the call is not run, and the conversation goes on", async () => {
    const { thread, ui } = await pausedWrite();
    await ui.submit({}, { command: { goto: "__end__" } });
    assert.deepEqual(ui.messages.map(typeOf), ["human", "ai"], "the resolved call has no result: it did not run");
    assert.deepEqual(ui.interrupts, []);
    await waitThreadStatus(client, thread.thread_id, "idle");
    await ui.submit(says("thanks"), UI_SUBMIT);
    assert.deepEqual(brief(ui.messages).slice(2), [
      ["human", "thanks"],
      ["ai", "You said: thanks"],
    ]);
    assert.deepEqual(ui.interrupts, []);
    ui.dispose();
  });
});

describe("Agent Chat UI: the first step", () => {
  it("the user's message is in state, history and the thread list while the first model call runs; Cancel and a reload keep it", async () => {
    const thread = await newThread();
    const text = "slow: one two three four five six";
    const ui = chatUI("researcher");
    await openThread(ui, thread.thread_id);
    const submitted = ui.submit(says(text), UI_SUBMIT);
    // The model is streaming its answer: the first step is running.
    await pollUntil(() => ui.messages.some((m) => typeOf(m) === "ai" && textOf(m).length > 0), { what: "the first model call streaming" });

    const th = await client.threads.get(thread.thread_id);
    assert.equal(th.status, "busy", "the run is still in its first step");
    assert.deepEqual(brief(th.values?.messages ?? []), [["human", text]], "the thread list (threads.search/get values) shows the message");
    const state = await client.threads.getState(thread.thread_id);
    assert.deepEqual(brief(state.values.messages ?? []), [["human", text]], "getState during the first step");
    assert.deepEqual(state.next, ["model"]);
    const history = await client.threads.getHistory(thread.thread_id, { limit: 10 });
    assert.deepEqual(
      history.map((s) => [s.metadata?.source, s.metadata?.step, s.next]),
      [
        ["loop", 0, ["model"]],
        ["input", -1, ["__start__"]],
      ],
      "getHistory during the first step: the input checkpoint and the __start__ step",
    );

    // A reload mid-run: a new useStream on the thread reads its history.
    const reloaded = chatUI("researcher");
    await openThread(reloaded, thread.thread_id);
    assert.deepEqual(brief(reloaded.messages), [["human", text]], "a reload mid-run shows the user's message");
    reloaded.dispose();

    // Cancel: the UI stops the stream and shows what the server kept.
    await ui.stop();
    await submitted;
    assert.deepEqual(brief(ui.messages).slice(0, 1), [["human", text]], "Cancel keeps the user's own message");
    await waitThreadStatus(client, thread.thread_id, "idle", 10_000);
    ui.dispose();
  });
});

describe("Agent Chat UI: branches", () => {
  it("editing the first message branches; the branch switcher goes back to the original", async () => {
    const thread = await newThread();
    const ui = chatUI("echo");
    await openThread(ui, thread.thread_id);
    await ui.submit(says("first"), UI_SUBMIT);
    await ui.submit(says("second"), UI_SUBMIT);
    const original = brief(ui.messages);
    assert.deepEqual(original.map(([, t]) => t), ["first", "echo: first", "second", "echo: second"]);

    // What the UI's edit does: submit from the parent of the state where
    // the message first appears.
    const meta = ui.getMessagesMetadata(ui.messages[0], 0);
    const parent = meta?.firstSeenState?.parent_checkpoint;
    assert.ok(parent?.checkpoint_id, `the first message's first state has a parent to fork from: ${JSON.stringify(meta?.firstSeenState?.metadata)}`);
    await ui.submit(says("first, edited"), { checkpoint: parent, streamMode: ["values"] });
    assert.deepEqual(brief(ui.messages).map(([, t]) => t), ["first, edited", "echo: first, edited"], "the edit replaced the conversation from the first message on");

    const edited = ui.getMessagesMetadata(ui.messages[0], 0);
    assert.equal(edited?.branchOptions?.length, 2, `branch options of the first message: ${JSON.stringify(edited?.branchOptions)}`);
    const other = edited.branchOptions.find((b) => b !== edited.branch);
    ui.setBranch(other);
    assert.deepEqual(brief(ui.messages), original, "switching the branch shows the original conversation");
    ui.setBranch(edited.branch);
    assert.deepEqual(brief(ui.messages).map(([, t]) => t), ["first, edited", "echo: first, edited"]);
    const state = await client.threads.getState(thread.thread_id);
    assert.deepEqual(brief(state.values.messages).map(([, t]) => t), ["first, edited", "echo: first, edited"], "the thread's head is the edit");
    ui.dispose();
  });

  it("regenerating an answer branches at the step before it", async () => {
    const thread = await newThread();
    const ui = chatUI("echo");
    await openThread(ui, thread.thread_id);
    await ui.submit(says("again"), UI_SUBMIT);
    const answer = ui.messages[1];
    const meta = ui.getMessagesMetadata(answer, 1);
    const parent = meta?.firstSeenState?.parent_checkpoint;
    assert.ok(parent?.checkpoint_id, "the answer's first state has a parent");
    await ui.submit(undefined, { checkpoint: parent, streamMode: ["values"] });
    const regenerated = ui.messages[1];
    assert.equal(textOf(regenerated), "echo: again");
    assert.notEqual(regenerated.id, answer.id, "a new answer");
    assert.equal(ui.messages.length, 2);
    const options = ui.getMessagesMetadata(regenerated, 1)?.branchOptions;
    assert.equal(options?.length, 2, `branch options of the answer: ${JSON.stringify(options)}`);
    ui.dispose();
  });
});

describe("Agent Chat UI: task subagents", () => {
  it("subagent events stream under tools:<tool call id>; useStream groups them with filterSubagentMessages", async () => {
    const prompt = "count the stars tonight";
    // The raw stream, read with the SDK's namespace helpers.
    const thread = await newThread();
    const parts = await collectStream(
      client.runs.stream(thread.thread_id, "lead", {
        input: says(`delegate: ${prompt}`),
        streamMode: ["values", "updates", "messages-tuple"],
        streamSubgraphs: true,
      }),
    );
    const state = await client.threads.getState(thread.thread_id);
    const call = state.values.messages.find((m) => m.type === "ai" && m.tool_calls?.length)?.tool_calls?.[0];
    assert.equal(call?.name, "task");
    const namespaced = parts.filter((p) => p.event.includes("|"));
    assert.ok(namespaced.some((p) => p.event.startsWith("messages|")), `subagent events: ${parts.map((p) => p.event)}`);
    for (const p of namespaced) {
      const ns = p.event.split("|").slice(1);
      assert.ok(isSubagentNamespace(ns), `${p.event} is a subagent namespace for the SDK`);
      assert.equal(extractToolCallIdFromNamespace(ns), call.id, `${p.event} names the task call`);
    }

    // useStream with filterSubagentMessages, as a UI showing subagent cards.
    const ui = chatUI("lead", { filterSubagentMessages: true });
    const other = await newThread();
    await openThread(ui, other.thread_id);
    await ui.submit(says(`delegate: ${prompt}`), { ...UI_SUBMIT, streamMode: ["values", "messages-tuple"] });
    const subagents = [...ui.subagents.values()];
    assert.equal(subagents.length, 1, `subagents: ${JSON.stringify(subagents.map((s) => s.id))}`);
    const [sub] = subagents;
    assert.equal(sub.toolCall.args.subagent_type, "general-purpose");
    assert.equal(sub.status, "complete");
    assert.ok(sub.namespace.every((s) => s.startsWith("tools:")) && sub.namespace.length > 0, `namespace ${sub.namespace}`);
    assert.ok(
      sub.messages.some((m) => typeOf(m) === "ai" && textOf(m) === `You said: ${prompt}`),
      `the subagent's own messages: ${JSON.stringify(brief(sub.messages))}`,
    );
    assert.ok(
      !ui.messages.some((m) => textOf(m) === `You said: ${prompt}`),
      `the subagent's answer is not among the lead's messages: ${JSON.stringify(brief(ui.messages))}`,
    );
    ui.dispose();
  });
});

describe("Agent Chat UI: an async task's result reaches the chat", () => {
  it("the notify_on_completion follow-up run streams live on the thread join stream", async () => {
    const thread = await newThread();
    const ac = new AbortController();
    const seen = [];
    const following = (async () => {
      for await (const part of client.threads.joinStream(thread.thread_id, { signal: ac.signal })) seen.push(part);
    })().catch(() => {});
    try {
      const first = await client.runs.create(thread.thread_id, "supervisor-notify", { input: says("start researcher: slow: one two three four") });
      // The first turn starts the task and ends while the task still runs.
      await pollUntil(() => seen.some((p) => p.event === "run_done" && p.data?.run_id === first.run_id), { what: "the first turn on the join stream" });
      const done = await client.runs.get(thread.thread_id, first.run_id);
      assert.equal(done.status, "success");
      // Then the task ends and its follow-up turn streams on the same join.
      const followUp = await pollUntil(
        () => seen.find((p) => p.event === "metadata" && p.data?.run_id !== first.run_id)?.data?.run_id,
        { timeoutMs: 15_000, what: "the follow-up run's metadata on the join stream" },
      );
      await pollUntil(() => seen.some((p) => p.event === "run_done" && p.data?.run_id === followUp), { timeoutMs: 15_000, what: "the follow-up run's end" });
      const values = seen.filter((p) => p.event === "values").map((p) => p.data).at(-1);
      const msgs = values?.messages ?? [];
      const note = msgs.findIndex((m) => m.type === "human" && String(m.content).startsWith("[async task update]"));
      assert.ok(note > 0, `the follow-up's input message streamed: ${JSON.stringify(brief(msgs))}`);
      assert.match(String(msgs[note].content), /status: success/);
      assert.equal(msgs.at(-1)?.type, "ai", "the follow-up's answer streamed");
      assert.match(String(msgs.at(-1).content), /^You said: \[async task update\]/);
    } finally {
      ac.abort();
      await following;
    }
  });
});
