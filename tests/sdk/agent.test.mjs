// The shipped agent graphs (`researcher`, `coder`; agents/*.yaml) through the
// real JS SDK, the way useStream drives them, against the deterministic model
// of cmd/scriptedllm that run.sh starts (OPENAI_BASE_URL). Its rules:
//   "write <path> <content…>"  -> a write_file call (when the tool is offered)
//   "todo <a>; <b>"            -> a write_todos call (when the tool is offered)
//   a tool result last         -> "done: <first line of the tool result>"
//   anything else              -> "You said: <text>" in 4 streamed deltas
// Usage it reports: prompt 10 per request message, completion = words of the
// text + 10 per tool call.
//
// `coder` asks for approval before write_file (interrupt_on): the run stops
// with the thread `interrupted`, and a new run resumes it with
// command.resume = {decisions: [{type: approve | edit | reject}]}.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  assertUuid,
  assembleMessages,
  collectStream,
  doneWith,
  humanInput,
  lastOfType,
  makeClient,
  messagesOf,
  uniqueTag,
  waitThreadStatus,
  youSaid,
} from "./lib.mjs";

const client = makeClient();

const RESEARCHER = "researcher";
const CODER = "coder";
/** The model name both specs set; usage is reported per model under it. */
const SPEC_MODEL = "gpt-4o-mini";

/** The event names a values + messages-tuple + updates stream may carry. */
const ALLOWED_EVENTS = new Set(["metadata", "values", "messages", "updates", "end"]);

const words = (s) => s.split(/\s+/).filter(Boolean).length;

async function newThread() {
  return client.threads.create({ metadata: { tag: uniqueTag("agent") } });
}

/** {type, content} of each message, for readable assertion diffs. */
const brief = (values) => messagesOf(values).map((m) => ({ type: m.type, content: m.content }));

describe("useStream-style flow (researcher)", () => {
  it("streams values, message chunks and updates, then history and a replayable join", async () => {
    const thread = await newThread();
    const text = "hello there, agent";
    let created;
    const parts = await collectStream(
      client.runs.stream(thread.thread_id, RESEARCHER, {
        input: humanInput(text),
        streamMode: ["values", "messages-tuple", "updates"],
        streamResumable: true,
        onDisconnect: "continue",
        onRunCreated: (meta) => {
          created = meta;
        },
      }),
    );
    const events = parts.map((p) => p.event);

    // metadata first, carrying the run id the SDK also read from Content-Location.
    assert.equal(parts[0]?.event, "metadata", `first event: ${events.join(",")}`);
    const runId = parts[0].data.run_id;
    assertUuid(runId, "metadata.run_id");
    assert.equal(created?.run_id, runId, "onRunCreated (Content-Location) names the streamed run");
    assert.equal(created?.thread_id, thread.thread_id);
    for (const e of events) assert.ok(ALLOWED_EVENTS.has(e), `unexpected event ${e} in ${events.join(",")}`);

    // messages-tuple: AIMessageChunk deltas from the model node, one message id.
    const { text: assembled, chunks } = assembleMessages(parts);
    assert.equal(assembled, youSaid(text), "message chunks assemble to the model's answer");
    const nonEmpty = chunks.filter(({ chunk }) => chunk.content !== "");
    assert.ok(nonEmpty.length >= 4, `the model streamed 4 deltas; got ${nonEmpty.length} non-empty chunks`);
    for (const { chunk, meta } of chunks) {
      assert.equal(chunk.type, "AIMessageChunk", `chunk type: ${JSON.stringify(chunk)}`);
      assert.equal(meta?.langgraph_node, "model", `chunk metadata: ${JSON.stringify(meta)}`);
    }
    const chunkIds = new Set(chunks.map(({ chunk }) => chunk.id));
    assert.equal(chunkIds.size, 1, `every chunk of one answer shares one id: ${[...chunkIds]}`);

    // values: the input first, the answer last; the answer's id is the chunks' id
    // (useStream merges streamed chunks into values by message id).
    const values = parts.filter((p) => p.event === "values").map((p) => p.data);
    assert.ok(values.length >= 2, `values events: ${values.length}`);
    assert.deepEqual(brief(values[0]), [{ type: "human", content: text }], "first values event is the input");
    const final = values.at(-1);
    assert.deepEqual(brief(final), [
      { type: "human", content: text },
      { type: "ai", content: youSaid(text) },
    ]);
    assert.equal(final.messages[1].id, [...chunkIds][0], "the stored AI message keeps the streamed chunks' id");
    assert.equal(events.lastIndexOf("values") > events.lastIndexOf("messages"), true, "the final values come after the chunks");

    // updates keyed by the node that ran.
    const updates = parts.filter((p) => p.event === "updates").map((p) => p.data);
    const modelUpdate = updates.find((u) => u && "model" in u);
    assert.ok(modelUpdate, `an updates event keyed by "model": ${JSON.stringify(updates)}`);
    assert.equal(modelUpdate.model.messages.at(-1).content, youSaid(text));

    // History as useStream loads it, newest first: LangGraph's chain of an
    // input checkpoint (the values before the input), the __start__ step
    // that applies it, then the model's step.
    const history = await client.threads.getHistory(thread.thread_id, { limit: 10 });
    assert.deepEqual(
      history.map((s) => [s.metadata?.source, s.metadata?.step, s.next]),
      [
        ["loop", 1, []],
        ["loop", 0, ["model"]],
        ["input", -1, ["__start__"]],
      ],
      "history (source, step, next), newest first",
    );
    assert.deepEqual(brief(history[0].values), brief(final), "the head checkpoint holds the final values");
    for (const i of [0, 1]) {
      assert.equal(
        history[i].parent_checkpoint?.checkpoint_id,
        history[i + 1].checkpoint.checkpoint_id,
        `checkpoint ${i}'s parent is the one before it (useStream builds branches from these links)`,
      );
    }
    assert.ok(
      Date.parse(history[0].created_at) >= Date.parse(history[1].created_at),
      `newest first by created_at: ${history.map((s) => s.created_at)}`,
    );

    // Rejoin as useStream does after a reload: replay from the start.
    const replay = await collectStream(client.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1" }));
    assert.deepEqual(
      replay.map((p) => [p.event, p.data]),
      parts.map((p) => [p.event, p.data]),
      "joinStream(lastEventId -1) replays the same events",
    );
    assert.ok(parts.every((p) => p.id !== undefined), "a resumable stream ids every event");
    assert.deepEqual(
      replay.map((p) => p.id),
      parts.map((p) => p.id),
      "the replay carries the same event ids",
    );
  });
});

describe("tool loop (researcher)", () => {
  it("runs write_todos, fills the todos channel and answers after the tool result", async () => {
    const thread = await newThread();
    const out = await client.runs.wait(thread.thread_id, RESEARCHER, { input: humanInput("todo a; b") });

    const msgs = messagesOf(out);
    assert.deepEqual(
      msgs.map((m) => m.type),
      ["human", "ai", "tool", "ai"],
      `messages: ${JSON.stringify(brief(out))}`,
    );
    const [, call, result, answer] = msgs;
    assert.equal(call.tool_calls?.length, 1, `tool calls: ${JSON.stringify(call.tool_calls)}`);
    assert.equal(call.tool_calls[0].name, "write_todos");
    assert.equal(result.name, "write_todos");
    assert.equal(result.tool_call_id, call.tool_calls[0].id, "the tool message answers the call");
    assert.equal(result.status, "success", `tool result: ${JSON.stringify(result)}`);
    assert.equal(answer.content, doneWith(result.content));
    assert.match(answer.content, /^done: /);

    const expected = [
      { content: "a", status: "pending" },
      { content: "b", status: "pending" },
    ];
    assert.deepEqual(out.todos, expected, "runs.wait values carry the todos channel");
    const state = await client.threads.getState(thread.thread_id);
    assert.deepEqual(state.values.todos, expected, "thread state todos");
    assert.deepEqual(state.next, []);
    await waitThreadStatus(client, thread.thread_id, "idle");
  });

  it("streamMode tools: on_tool_start then on_tool_end for the write_todos call", async () => {
    const thread = await newThread();
    const parts = await collectStream(
      client.runs.stream(thread.thread_id, RESEARCHER, { input: humanInput("todo a; b"), streamMode: "tools" }),
    );
    const tools = parts.filter((p) => p.event === "tools").map((p) => p.data);
    assert.deepEqual(
      tools.map((d) => d.event),
      ["on_tool_start", "on_tool_end"],
      `tools events: ${JSON.stringify(tools)}`,
    );
    const [start, end] = tools;
    assert.equal(start.name, "write_todos");
    assert.deepEqual(start.input.todos.map((t) => t.content), ["a", "b"]);
    assert.equal(end.toolCallId, start.toolCallId, "both events name the same call");
    assert.equal(end.output.type, "tool");
    assert.equal(end.output.tool_call_id, start.toolCallId);
  });

  it("records the run's token usage totals in run metadata", async () => {
    const thread = await newThread();
    const run = await client.runs.create(thread.thread_id, RESEARCHER, { input: humanInput("todo x; y; z") });
    const out = await client.runs.join(thread.thread_id, run.run_id);
    const answer = lastOfType(out, "ai");
    assert.match(answer?.content ?? "", /^done: /, `answer: ${JSON.stringify(brief(out))}`);

    const done = await client.runs.get(thread.thread_id, run.run_id);
    assert.equal(done.status, "success");
    const usage = done.metadata?.usage;
    assert.ok(usage && typeof usage === "object", `run metadata: ${JSON.stringify(done.metadata)}`);
    // Two model calls: [system, human] then [system, human, ai, tool]; the first
    // answers with one tool call (10), the second with text.
    const input = 10 * 2 + 10 * 4;
    const output = 10 + words(answer.content);
    assert.equal(usage.calls, 2, `usage: ${JSON.stringify(usage)}`);
    assert.equal(usage.input_tokens, input, `usage: ${JSON.stringify(usage)}`);
    assert.equal(usage.output_tokens, output, `usage: ${JSON.stringify(usage)}`);
    assert.equal(usage.total_tokens, input + output, `usage: ${JSON.stringify(usage)}`);
    if (usage.by_model !== undefined) {
      assert.deepEqual(usage.by_model[SPEC_MODEL], {
        calls: 2,
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
      });
    }
    assert.deepEqual(
      answer.usage_metadata,
      { input_tokens: 40, output_tokens: words(answer.content), total_tokens: 40 + words(answer.content) },
      "the last AI message carries its own call's usage",
    );
  });
});

describe("human in the loop (coder)", () => {
  const PATH = "/hello.txt";

  /** Starts a coder run that must pause before write_file; returns the thread and the paused stream. */
  async function pausedWrite() {
    const thread = await newThread();
    const parts = await collectStream(
      client.runs.stream(thread.thread_id, CODER, {
        input: humanInput(`write ${PATH} hi`),
        streamMode: ["values", "updates"],
      }),
    );
    const events = parts.map((p) => p.event);
    assert.ok(!events.includes("error"), `stream errored: ${JSON.stringify(parts.find((p) => p.event === "error"))}`);

    // The values stream ends with the interrupt, as useStream reads it.
    const withInterrupt = parts.filter((p) => p.event === "values" && p.data && "__interrupt__" in p.data);
    assert.equal(withInterrupt.length, 1, `values events with __interrupt__: ${events.join(",")}`);
    const streamed = withInterrupt[0].data.__interrupt__;
    assert.ok(Array.isArray(streamed) && streamed.length === 1, `__interrupt__: ${JSON.stringify(streamed)}`);
    assert.equal(streamed[0].value?.action_requests?.[0]?.name, "write_file");
    assert.ok(
      parts.some((p) => p.event === "updates" && p.data && "__interrupt__" in p.data),
      "an updates event carries the interrupt too",
    );

    const th = await waitThreadStatus(client, thread.thread_id, "interrupted");
    const state = await client.threads.getState(thread.thread_id);
    assert.deepEqual(state.next, ["tools"], "paused before the tools node");
    assert.equal(state.interrupts?.length, 1, `state.interrupts: ${JSON.stringify(state.interrupts)}`);
    const interrupt = state.interrupts[0];
    assert.equal(interrupt.id, streamed[0].id, "the stored interrupt is the streamed one");
    const request = interrupt.value?.action_requests?.[0];
    assert.equal(request?.name, "write_file", `interrupt: ${JSON.stringify(interrupt)}`);
    assert.deepEqual(request.args, { file_path: PATH, content: "hi" });
    assert.deepEqual(
      interrupt.value.review_configs?.[0]?.allowed_decisions?.slice().sort(),
      ["approve", "edit", "reject"],
      "coder.yaml allows every decision for write_file",
    );
    const task = state.tasks?.find((t) => t.name === "tools");
    assert.ok(task?.interrupts?.some((i) => i.id === interrupt.id), `tasks: ${JSON.stringify(state.tasks)}`);
    assert.deepEqual(
      Object.values(th.interrupts ?? {}).flat().map((i) => i.id),
      [interrupt.id],
      `thread.interrupts (by task id): ${JSON.stringify(th.interrupts)}`,
    );

    // The paused AI message is stored; no tool ran yet.
    assert.deepEqual(
      messagesOf(state.values).map((m) => m.type),
      ["human", "ai"],
    );
    const call = state.values.messages[1].tool_calls?.[0];
    assert.equal(call?.name, "write_file");
    return { thread, callId: call.id };
  }

  /** Checks the resumed thread: [human, ai(call), tool, ai(done)], idle, nothing pending. */
  async function assertResumed(thread, callId, values) {
    const msgs = messagesOf(values);
    assert.deepEqual(
      msgs.map((m) => m.type),
      ["human", "ai", "tool", "ai"],
      `messages: ${JSON.stringify(brief(values))}`,
    );
    const tool = msgs[2];
    assert.equal(tool.tool_call_id, callId, "the tool message answers the paused call");
    assert.equal(msgs[3].content, doneWith(tool.content));
    const th = await waitThreadStatus(client, thread.thread_id, "idle");
    assert.deepEqual(Object.values(th.interrupts ?? {}).flat(), [], "no interrupts left on the thread");
    const state = await client.threads.getState(thread.thread_id);
    assert.deepEqual(state.next, []);
    assert.deepEqual(state.interrupts ?? [], []);
    return tool;
  }

  it("approve: the write runs and the agent answers", async () => {
    const { thread, callId } = await pausedWrite();
    const out = await client.runs.wait(thread.thread_id, CODER, {
      command: { resume: { decisions: [{ type: "approve" }] } },
    });
    const tool = await assertResumed(thread, callId, out);
    assert.equal(tool.status, "success", `tool: ${JSON.stringify(tool)}`);
    assert.equal(tool.content, `Updated file ${PATH}`);
    assert.equal(lastOfType(out, "ai").content, `done: Updated file ${PATH}`);
  });

  it("reject: the tool message carries the rejection (resumed by a stream, as useStream submits)", async () => {
    const { thread, callId } = await pausedWrite();
    const parts = await collectStream(
      client.runs.stream(thread.thread_id, CODER, {
        input: null,
        command: { resume: { decisions: [{ type: "reject", message: "not in this repo" }] } },
        streamMode: ["values"],
      }),
    );
    const values = parts.filter((p) => p.event === "values").at(-1)?.data;
    assert.ok(values, `events: ${parts.map((p) => p.event)}`);
    assert.ok(!("__interrupt__" in values), "the resumed run does not pause again");
    const tool = await assertResumed(thread, callId, values);
    assert.equal(tool.status, "error", `tool: ${JSON.stringify(tool)}`);
    assert.match(tool.content, /reject/i);
    assert.match(tool.content, /not in this repo/);
    assert.doesNotMatch(tool.content, /Updated file/);
  });

  it("edit: the call runs with the edited arguments", async () => {
    const { thread, callId } = await pausedWrite();
    const edited = "/edited/notes.txt";
    const out = await client.runs.wait(thread.thread_id, CODER, {
      command: {
        resume: {
          decisions: [{ type: "edit", edited_action: { name: "write_file", args: { file_path: edited, content: "bye" } } }],
        },
      },
    });
    const tool = await assertResumed(thread, callId, out);
    assert.equal(tool.status, "success", `tool: ${JSON.stringify(tool)}`);
    assert.equal(tool.content, `Updated file ${edited}`, "the edited path was written, not the proposed one");
    assert.notEqual(edited, PATH);
  });
});

describe("agent schemas", () => {
  it("getSchemas(researcher) describes messages in the input and state schemas", async () => {
    const schemas = await client.assistants.getSchemas(RESEARCHER);
    assert.equal(schemas.graph_id, RESEARCHER);
    for (const key of ["input_schema", "state_schema"]) {
      const schema = schemas[key];
      assert.equal(schema?.type, "object", `${key}: ${JSON.stringify(schema)}`);
      assert.equal(schema.properties?.messages?.type, "array", `${key}.properties.messages`);
    }
    assert.ok(schemas.state_schema.properties.todos, "the state schema has the todos channel write_todos fills");
  });
});
