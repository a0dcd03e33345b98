// Runs (stateful and stateless), streaming, multitask strategies and cancel
// through the real JS SDK (@langchain/langgraph-sdk), against the `echo` graph:
// it appends one AI message "echo: <last human message content>" from its one
// node `echo`, leaving three checkpoints per run, LangGraph's chain: source
// "input" (the values before the input, __start__ next), then "loop" for the
// __start__ step that applies it and "loop" for echo.
//
// echo finishes in milliseconds, so a run that must stay in the way is made
// with `afterSeconds` (a delayed run stays `pending`); no test sleeps.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  GRAPH_ID,
  NAMESPACE_GRAPH,
  assertTimestamp,
  assertUuid,
  collectStream,
  human,
  keysOf,
  makeClient,
  pollUntil,
  rawSSE,
  rejectsWithStatus,
  raw,
  uniqueTag,
  uuid4,
  uuid5,
} from "./lib.mjs";

const client = makeClient();

/** The system assistant of the echo graph (reference §3.8). */
const ASSISTANT_ID = uuid5(NAMESPACE_GRAPH, GRAPH_ID);

/** Streams must finish well inside the per-test timeout. */
const STREAM_TIMEOUT_MS = 10_000;

/** Far enough in the future that a delayed run stays pending for the whole test. */
const DELAY_S = 5;

/** Run input: one human message. */
const say = (text) => ({ messages: [human(text, uuid4())] });
const reply = (text) => `echo: ${text}`;

/** {type, content} of each message. */
const msgs = (values) => (values?.messages ?? []).map((m) => ({ type: m.type, content: m.content }));
const contents = (values) => (values?.messages ?? []).map((m) => m.content);
const lastContent = (values) => values?.messages?.at(-1)?.content;

async function echoThread(metadata = {}) {
  return client.threads.create({ metadata: { tag: uniqueTag("run"), ...metadata } });
}

function assertRunShape(r, what = "run") {
  assert.ok(r && typeof r === "object", `${what} should be an object, got ${JSON.stringify(r)}`);
  assertUuid(r.run_id, `${what}.run_id`);
  assertUuid(r.thread_id, `${what}.thread_id`);
  assert.equal(r.assistant_id, ASSISTANT_ID, `${what}.assistant_id should be the resolved system assistant id`);
  assertTimestamp(r.created_at, `${what}.created_at`);
  assertTimestamp(r.updated_at, `${what}.updated_at`);
  assert.ok(
    ["pending", "running", "error", "success", "timeout", "interrupted"].includes(r.status),
    `${what}.status=${r.status}`,
  );
  assert.ok(r.metadata && typeof r.metadata === "object", `${what}.metadata should be an object`);
  assert.ok(r.kwargs && typeof r.kwargs === "object", `${what}.kwargs should be an object`);
  assert.ok(
    ["reject", "rollback", "interrupt", "enqueue"].includes(r.multitask_strategy),
    `${what}.multitask_strategy=${r.multitask_strategy}`,
  );
}

/** A run that stays pending (after_seconds) so that it is in the way of the next one. */
async function delayedRun(threadId, text = "later") {
  const run = await client.runs.create(threadId, GRAPH_ID, { input: say(text), afterSeconds: DELAY_S });
  assert.equal(run.status, "pending", "a run with after_seconds is created pending");
  return run;
}

async function waitRunStatus(threadId, runId, status) {
  let last;
  try {
    return await pollUntil(
      async () => {
        last = await client.runs.get(threadId, runId);
        return last.status === status ? last : false;
      },
      { timeoutMs: 5_000, what: `run status ${status}` },
    );
  } catch (e) {
    assert.fail(`run ${runId} never became ${status}; last status ${last?.status}: ${e.message}`);
  }
}

async function waitThreadStatus(threadId, status) {
  let last;
  try {
    return await pollUntil(
      async () => {
        last = await client.threads.get(threadId);
        return last.status === status ? last : false;
      },
      { timeoutMs: 5_000, what: `thread status ${status}` },
    );
  } catch (e) {
    assert.fail(`thread ${threadId} never became ${status}; last status ${last?.status}: ${e.message}`);
  }
}

/** Polls until `fn()` rejects with 404 (for runs removed asynchronously), then asserts it once more. */
async function waitGone(fn, what) {
  let lastStatus;
  await pollUntil(
    async () => {
      try {
        const v = await fn();
        lastStatus = `200 ${JSON.stringify(v)?.slice(0, 200)}`;
        return false;
      } catch (e) {
        lastStatus = e?.status;
        return e?.status === 404;
      }
    },
    { timeoutMs: 3_000, what: `${what} -> 404` },
  ).catch((e) => assert.fail(`${what}: expected 404, last answer ${lastStatus} (${e.message})`));
  await rejectsWithStatus(fn(), 404, what);
}

/** runs.stream(...) drained; `created` is what onRunCreated received. */
async function streamRun(threadId, payload) {
  let created;
  const parts = await collectStream(
    client.runs.stream(threadId, GRAPH_ID, {
      signal: AbortSignal.timeout(STREAM_TIMEOUT_MS),
      onRunCreated: (m) => {
        created = m;
      },
      ...payload,
    }),
  );
  return { parts, created };
}

const names = (parts) => parts.map((p) => p.event);

/** First event metadata {run_id, attempt}, last event end, no error in between. */
function assertFramed(parts, created, what = "stream") {
  const seq = names(parts).join(", ");
  assert.ok(parts.length >= 2, `${what}: expected at least metadata and end, got [${seq}]`);
  assert.equal(parts[0].event, "metadata", `${what}: first event should be metadata, got [${seq}]`);
  assertUuid(parts[0].data?.run_id, `${what}: metadata.run_id`);
  assert.equal(parts[0].data?.attempt, 1, `${what}: metadata.attempt`);
  if (created) assert.equal(parts[0].data.run_id, created.run_id, `${what}: metadata.run_id vs Content-Location`);
  assert.equal(parts.at(-1).event, "end", `${what}: last event should be end, got [${seq}]`);
  assert.ok(!names(parts).includes("error"), `${what}: unexpected error event: ${JSON.stringify(parts.find((p) => p.event === "error"))}`);
  assert.equal(names(parts).filter((n) => n === "metadata").length, 1, `${what}: exactly one metadata event`);
}

/**
 * Per stream mode: the wire event names it may produce, those it must produce
 * for one echo run, and a check of their payloads (`text` = the human input).
 */
const MODES = {
  values: {
    allowed: ["values"],
    required: ["values"],
    check(parts, text) {
      const vals = parts.filter((p) => p.event === "values").map((p) => p.data);
      assert.deepEqual(msgs(vals[0]), [{ type: "human", content: text }], "first values event = state after the input");
      assert.deepEqual(
        msgs(vals.at(-1)),
        [
          { type: "human", content: text },
          { type: "ai", content: reply(text) },
        ],
        "last values event = final state",
      );
    },
  },
  updates: {
    allowed: ["updates"],
    required: ["updates"],
    check(parts, text) {
      const ups = parts.filter((p) => p.event === "updates").map((p) => p.data);
      assert.equal(ups.length, 1, `one updates event for the one node, got ${JSON.stringify(ups)}`);
      assert.deepEqual(keysOf(ups[0]), ["echo"], "updates are keyed by node name");
      assert.equal(ups[0].echo.messages.at(-1).content, reply(text));
      assert.equal(ups[0].echo.messages.at(-1).type, "ai");
    },
  },
  "messages-tuple": {
    allowed: ["messages"],
    required: ["messages"],
    check(parts, text) {
      const tuples = parts.filter((p) => p.event === "messages").map((p) => p.data);
      for (const t of tuples) {
        assert.ok(Array.isArray(t) && t.length === 2, `messages event should be [chunk, metadata], got ${JSON.stringify(t)}`);
        assert.ok(t[0] && typeof t[0] === "object", "chunk should be an object");
        assert.ok(t[1] && typeof t[1] === "object", "metadata should be an object");
        assert.equal(t[1].langgraph_node, "echo", "metadata.langgraph_node");
      }
      const ai = tuples.filter(([c]) => c.type === "ai" || c.type === "AIMessageChunk");
      assert.ok(ai.length >= 1, "at least one AI message (chunk)");
      assert.equal(ai.map(([c]) => c.content).join(""), reply(text), "AI chunks add up to the reply");
    },
  },
  custom: {
    allowed: ["custom"],
    required: [],
    check(parts) {
      assert.equal(parts.filter((p) => p.event === "custom").length, 0, "echo writes no custom events");
    },
  },
  debug: {
    allowed: ["debug"],
    required: ["debug"],
    check(parts) {
      const dbg = parts.filter((p) => p.event === "debug").map((p) => p.data);
      for (const d of dbg) {
        assert.ok(["checkpoint", "task", "task_result"].includes(d.type), `debug.type=${d.type}`);
        assert.equal(typeof d.step, "number", "debug.step");
        assertTimestamp(d.timestamp, "debug.timestamp");
        assert.ok(d.payload && typeof d.payload === "object", "debug.payload");
      }
      const types = new Set(dbg.map((d) => d.type));
      for (const t of ["checkpoint", "task", "task_result"]) assert.ok(types.has(t), `a debug event of type ${t}`);
    },
  },
  tasks: {
    allowed: ["tasks"],
    required: ["tasks"],
    check(parts, text) {
      const tasks = parts.filter((p) => p.event === "tasks").map((p) => p.data);
      const start = tasks.find((t) => "input" in t);
      const result = tasks.find((t) => "result" in t);
      assert.ok(start, `a task start event {id, name, input, triggers}, got ${JSON.stringify(tasks)}`);
      assert.ok(result, `a task result event {id, name, result}, got ${JSON.stringify(tasks)}`);
      assert.equal(start.name, "echo");
      assert.equal(result.name, "echo");
      assert.equal(result.id, start.id, "start and result share the task id");
      assert.ok(Array.isArray(start.triggers), "start.triggers");
      assert.ok(Array.isArray(result.result), "result.result is a list of [channel, value]");
      const written = Object.fromEntries(result.result);
      assert.equal(written.messages?.at(-1)?.content, reply(text), "the task wrote the reply to messages");
    },
  },
  checkpoints: {
    allowed: ["checkpoints"],
    required: ["checkpoints"],
    check(parts, text) {
      const cps = parts.filter((p) => p.event === "checkpoints").map((p) => p.data);
      assert.equal(cps.length, 3, `three checkpoints (input, __start__, echo), got ${cps.length}`);
      for (const c of cps) {
        for (const k of ["values", "metadata", "next"]) assert.ok(k in c, `checkpoint event has ${k}`);
      }
      assert.deepEqual(
        cps.map((c) => [c.metadata.source, c.metadata.step, c.next]),
        [
          ["input", -1, ["__start__"]],
          ["loop", 0, ["echo"]],
          ["loop", 1, []],
        ],
      );
      assert.equal(lastContent(cps[2].values), reply(text));
      for (const i of [1, 2]) {
        assert.equal(
          cps[i].parent_config?.configurable?.checkpoint_id,
          cps[i - 1].config?.configurable?.checkpoint_id,
          `parent_config of checkpoint ${i}`,
        );
      }
    },
  },
  events: {
    allowed: ["events"],
    required: ["events"],
    check(parts) {
      const evs = parts.filter((p) => p.event === "events").map((p) => p.data);
      for (const e of evs) assert.equal(typeof e.event, "string", `events payload has an event name: ${JSON.stringify(e)}`);
    },
  },
  messages: {
    // legacy messages mode
    allowed: ["messages/metadata", "messages/partial", "messages/complete"],
    required: ["messages/metadata", "messages/complete"],
    check(parts, text) {
      const complete = parts.filter((p) => p.event === "messages/complete").flatMap((p) => p.data);
      const ai = complete.find((m) => m?.content === reply(text));
      assert.ok(ai, `messages/complete carries the reply, got ${JSON.stringify(complete)}`);
      const meta = parts.filter((p) => p.event === "messages/metadata").map((p) => p.data);
      assert.ok(
        meta.some((m) => m && ai.id in m && typeof m[ai.id]?.metadata === "object"),
        `messages/metadata keyed by the reply's id ${ai.id}: ${JSON.stringify(meta)}`,
      );
      const firstMeta = names(parts).findIndex((n) => n === "messages/metadata");
      const firstComplete = names(parts).findIndex((n) => n === "messages/complete");
      assert.ok(firstMeta < firstComplete, "messages/metadata comes before messages/complete");
    },
  },
};

function assertModes(parts, modes, text, what) {
  const allowed = new Set(["metadata", "end", ...modes.flatMap((m) => MODES[m].allowed)]);
  const got = new Set(names(parts));
  for (const n of got) assert.ok(allowed.has(n), `${what}: event "${n}" was not asked for (modes ${modes.join(", ")})`);
  for (const m of modes) {
    for (const n of MODES[m].required) assert.ok(got.has(n), `${what}: no "${n}" event (got ${[...got].join(", ")})`);
  }
  for (const m of modes) MODES[m].check(parts, text);
}

// ---------------------------------------------------------------------------

describe("background runs", () => {
  it("create returns a pending Run; onRunCreated gets run_id/thread_id; join returns the final values", async () => {
    const t = await echoThread();
    let meta;
    const run = await client.runs.create(t.thread_id, GRAPH_ID, {
      input: say("hello"),
      metadata: { origin: "create-test" },
      onRunCreated: (m) => {
        meta = m;
      },
    });
    assertRunShape(run);
    assert.equal(run.thread_id, t.thread_id);
    assert.equal(run.status, "pending", "a new run is pending");
    assert.equal(run.multitask_strategy, "enqueue", "the default multitask strategy is enqueue");
    assert.equal(run.metadata.origin, "create-test", "run metadata is kept");
    assert.deepEqual(meta, { run_id: run.run_id, thread_id: t.thread_id }, "onRunCreated (from Content-Location)");

    const values = await client.runs.join(t.thread_id, run.run_id);
    assert.deepEqual(msgs(values), [
      { type: "human", content: "hello" },
      { type: "ai", content: reply("hello") },
    ]);

    const got = await client.runs.get(t.thread_id, run.run_id);
    assertRunShape(got);
    assert.equal(got.run_id, run.run_id);
    assert.equal(got.status, "success");
    assert.equal(got.created_at, run.created_at);

    // joining a finished run answers at once with the same values
    assert.equal(lastContent(await client.runs.join(t.thread_id, run.run_id)), reply("hello"));
  });

  it("create accepts the assistant UUID as well as the graph name", async () => {
    const t = await echoThread();
    const run = await client.runs.create(t.thread_id, ASSISTANT_ID, { input: say("by uuid") });
    assertRunShape(run);
    assert.equal(lastContent(await client.runs.join(t.thread_id, run.run_id)), reply("by uuid"));
  });

  it("list: newest first, limit/offset, status filter, select", async () => {
    const t = await echoThread();
    const ids = [];
    for (const text of ["one", "two", "three"]) {
      const r = await client.runs.create(t.thread_id, GRAPH_ID, { input: say(text) });
      await client.runs.join(t.thread_id, r.run_id);
      ids.push(r.run_id);
    }
    const newestFirst = [...ids].reverse();

    const all = await client.runs.list(t.thread_id);
    for (const r of all) assertRunShape(r, "listed run");
    assert.deepEqual(
      all.map((r) => r.run_id),
      newestFirst,
      "runs are listed newest first",
    );
    assert.ok(
      all.every((r) => r.thread_id === t.thread_id && r.status === "success"),
      "all listed runs belong to the thread and succeeded",
    );

    assert.deepEqual(
      (await client.runs.list(t.thread_id, { limit: 2 })).map((r) => r.run_id),
      newestFirst.slice(0, 2),
    );
    assert.deepEqual(
      (await client.runs.list(t.thread_id, { limit: 1, offset: 1 })).map((r) => r.run_id),
      [newestFirst[1]],
    );
    assert.deepEqual(
      (await client.runs.list(t.thread_id, { limit: 5, offset: 2 })).map((r) => r.run_id),
      [newestFirst[2]],
    );
    assert.deepEqual(await client.runs.list(t.thread_id, { offset: 3 }), []);

    assert.equal((await client.runs.list(t.thread_id, { status: "success" })).length, 3);
    assert.deepEqual(await client.runs.list(t.thread_id, { status: "pending" }), []);
    assert.deepEqual(await client.runs.list(t.thread_id, { status: "error" }), []);

    const selected = await client.runs.list(t.thread_id, { select: ["run_id", "status"] });
    assert.equal(selected.length, 3);
    for (const r of selected) assert.deepEqual(keysOf(r), ["run_id", "status"]);
  });

  it("list shows a pending run under status=pending", async () => {
    const t = await echoThread();
    const r = await delayedRun(t.thread_id);
    try {
      const pending = await client.runs.list(t.thread_id, { status: "pending" });
      assert.deepEqual(
        pending.map((x) => x.run_id),
        [r.run_id],
      );
    } finally {
      await client.runs.cancel(t.thread_id, r.run_id, true);
    }
  });

  it("wait on a thread returns the final values; onRunCreated fires", async () => {
    const t = await echoThread();
    let meta;
    const values = await client.runs.wait(t.thread_id, GRAPH_ID, {
      input: say("waiting"),
      onRunCreated: (m) => {
        meta = m;
      },
    });
    assert.deepEqual(msgs(values), [
      { type: "human", content: "waiting" },
      { type: "ai", content: reply("waiting") },
    ]);
    assert.ok(meta, "onRunCreated should fire for /runs/wait (Content-Location header)");
    assertUuid(meta.run_id, "onRunCreated run_id");
    assert.equal(meta.thread_id, t.thread_id);
    assert.equal((await client.runs.get(t.thread_id, meta.run_id)).status, "success");
  });

  it("wait keeps the thread's messages across runs", async () => {
    const t = await echoThread();
    await client.runs.wait(t.thread_id, GRAPH_ID, { input: say("first") });
    const values = await client.runs.wait(t.thread_id, GRAPH_ID, { input: say("second") });
    assert.deepEqual(contents(values), ["first", reply("first"), "second", reply("second")]);
  });

  it("wait on a failing run returns {__error__}; the SDK throws unless raiseError is false", async (tc) => {
    const t = await echoThread();
    let res;
    try {
      // `messages` must be a list of messages: the run fails applying its input.
      res = await client.runs.wait(t.thread_id, GRAPH_ID, { input: { messages: 42 }, raiseError: false });
    } catch (e) {
      if (e?.status === 422) {
        tc.skip("the server rejects this input up front (422), so no run fails");
        return;
      }
      throw e;
    }
    assert.ok(res && typeof res === "object" && res.__error__, `expected {__error__}, got ${JSON.stringify(res)}`);
    assert.equal(typeof res.__error__.error, "string", "__error__.error");
    assert.equal(typeof res.__error__.message, "string", "__error__.message");
    await assert.rejects(
      client.runs.wait(t.thread_id, GRAPH_ID, { input: { messages: 42 } }),
      (e) => e instanceof Error && e.message.includes(res.__error__.error),
    );
    const [last] = await client.runs.list(t.thread_id, { limit: 1 });
    assert.equal(last.status, "error");
    assert.equal((await client.threads.get(t.thread_id)).status, "error", "a failed run leaves the thread in error");
  });

  it("delete a finished run, then get/delete -> 404 and list no longer shows it", async () => {
    const t = await echoThread();
    const keep = await client.runs.create(t.thread_id, GRAPH_ID, { input: say("keep") });
    await client.runs.join(t.thread_id, keep.run_id);
    const gone = await client.runs.create(t.thread_id, GRAPH_ID, { input: say("gone") });
    await client.runs.join(t.thread_id, gone.run_id);

    await client.runs.delete(t.thread_id, gone.run_id);
    await rejectsWithStatus(client.runs.get(t.thread_id, gone.run_id), 404, "get after delete:");
    await rejectsWithStatus(client.runs.delete(t.thread_id, gone.run_id), 404, "second delete:");
    assert.deepEqual(
      (await client.runs.list(t.thread_id)).map((r) => r.run_id),
      [keep.run_id],
    );
  });

  it("unknown thread / run -> 404; ifNotExists create makes the thread", async () => {
    const t = await echoThread();
    const other = await echoThread();
    const r = await client.runs.create(t.thread_id, GRAPH_ID, { input: say("mine") });
    await client.runs.join(t.thread_id, r.run_id);

    await rejectsWithStatus(client.runs.get(t.thread_id, uuid4()), 404, "get unknown run:");
    await rejectsWithStatus(client.runs.get(other.thread_id, r.run_id), 404, "get run through another thread:");
    await rejectsWithStatus(client.runs.join(t.thread_id, uuid4()), 404, "join unknown run:");
    await rejectsWithStatus(client.runs.delete(t.thread_id, uuid4()), 404, "delete unknown run:");
    await rejectsWithStatus(client.runs.list(uuid4()), 404, "list runs of an unknown thread:");
    await rejectsWithStatus(
      client.runs.create(uuid4(), GRAPH_ID, { input: say("x") }),
      404,
      "create on an unknown thread (if_not_exists defaults to reject):",
    );
    await rejectsWithStatus(
      client.runs.wait(uuid4(), GRAPH_ID, { input: say("x") }),
      404,
      "wait on an unknown thread:",
    );
    await rejectsWithStatus(
      collectStream(client.runs.stream(uuid4(), GRAPH_ID, { input: say("x") })),
      404,
      "stream on an unknown thread (JSON error before SSE):",
    );
    await rejectsWithStatus(
      client.runs.create(t.thread_id, "no-such-graph", { input: say("x") }),
      404,
      "create with an unknown assistant:",
    );

    const fresh = uuid4();
    const made = await client.runs.create(fresh, GRAPH_ID, { input: say("new thread"), ifNotExists: "create" });
    assert.equal(made.thread_id, fresh);
    assert.equal(lastContent(await client.runs.join(fresh, made.run_id)), reply("new thread"));
    const th = await client.threads.get(fresh);
    assert.equal(th.thread_id, fresh);
  });
});

describe("run streaming", () => {
  for (const mode of Object.keys(MODES)) {
    it(`stream_mode ${JSON.stringify(mode)}`, async () => {
      const t = await echoThread();
      const text = `mode ${mode}`;
      const { parts, created } = await streamRun(t.thread_id, { input: say(text), streamMode: mode });
      assertFramed(parts, created, mode);
      assert.equal(created?.thread_id, t.thread_id, "onRunCreated thread_id");
      assertModes(parts, [mode], text, mode);
      assert.equal((await client.runs.get(t.thread_id, created.run_id)).status, "success");
    });
  }

  it("stream_mode as a list of every mode", async () => {
    const t = await echoThread();
    const modes = Object.keys(MODES);
    const text = "all modes";
    const { parts, created } = await streamRun(t.thread_id, { input: say(text), streamMode: modes });
    assertFramed(parts, created, "all modes");
    assertModes(parts, modes, text, "all modes");
  });

  it("stream_mode as a list [values, updates, messages-tuple]", async () => {
    const t = await echoThread();
    const modes = ["values", "updates", "messages-tuple"];
    const { parts, created } = await streamRun(t.thread_id, { input: say("three"), streamMode: modes });
    assertFramed(parts, created, "list");
    assertModes(parts, modes, "three", "list");
  });

  it("without stream_mode the stream carries values", async () => {
    const t = await echoThread();
    const { parts, created } = await streamRun(t.thread_id, { input: say("default") });
    assertFramed(parts, created, "default");
    assertModes(parts, ["values"], "default", "default");
  });

  it("streamResumable: every event has an id; joinStream from -1 replays all, from a mid id the rest", async () => {
    const t = await echoThread();
    const { parts, created } = await streamRun(t.thread_id, {
      input: say("resume"),
      streamMode: ["values", "updates"],
      streamResumable: true,
    });
    assertFramed(parts, created, "resumable");
    const ids = parts.map((p) => p.id);
    for (const [i, id] of ids.entries()) {
      assert.ok(typeof id === "string" && id.length > 0, `event ${i} (${parts[i].event}) has no id`);
    }
    assert.equal(new Set(ids).size, ids.length, `event ids should be unique: ${ids}`);

    const replay = await collectStream(
      client.runs.joinStream(t.thread_id, created.run_id, {
        lastEventId: "-1",
        signal: AbortSignal.timeout(STREAM_TIMEOUT_MS),
      }),
    );
    assert.deepEqual(
      replay.map((p) => p.id),
      ids,
      "Last-Event-ID -1 replays every event",
    );
    assert.deepEqual(names(replay), names(parts));
    assert.deepEqual(
      replay.map((p) => p.data),
      parts.map((p) => p.data),
    );

    const k = Math.floor(ids.length / 2) - 1; // a mid id (the metadata event's at least)
    const rest = await collectStream(
      client.runs.joinStream(t.thread_id, created.run_id, {
        lastEventId: ids[k],
        signal: AbortSignal.timeout(STREAM_TIMEOUT_MS),
      }),
    );
    assert.deepEqual(
      rest.map((p) => p.id),
      ids.slice(k + 1),
      `Last-Event-ID ${ids[k]} replays the events after it`,
    );
    assert.deepEqual(
      rest.map((p) => p.data),
      parts.slice(k + 1).map((p) => p.data),
    );
  });

  it("wire: Content-Location always; Location and id: lines only with stream_resumable", async () => {
    const t = await echoThread();
    const body = { assistant_id: GRAPH_ID, input: say("wire"), stream_mode: ["values"] };

    const plain = await rawSSE("POST", `/threads/${t.thread_id}/runs/stream`, { json: body });
    assert.equal(plain.status, 200, plain.text);
    assert.match(plain.headers.get("content-type") ?? "", /text\/event-stream/);
    const runId = plain.events[0]?.data?.run_id;
    assertUuid(runId, "metadata.run_id");
    assert.equal(plain.headers.get("content-location"), `/threads/${t.thread_id}/runs/${runId}`);
    assert.equal(plain.headers.get("location"), null, "no Location without stream_resumable");
    assert.ok(
      plain.events.every((e) => e.id === undefined),
      "no id: lines without stream_resumable",
    );
    assert.equal(plain.events.at(-1).event, "end");

    const res = await rawSSE("POST", `/threads/${t.thread_id}/runs/stream`, {
      json: { ...body, stream_resumable: true },
    });
    assert.equal(res.status, 200, res.text);
    const rid = res.events[0]?.data?.run_id;
    assertUuid(rid, "metadata.run_id");
    assert.equal(res.headers.get("content-location"), `/threads/${t.thread_id}/runs/${rid}`);
    const location = res.headers.get("location");
    assert.ok(location, "stream_resumable adds a Location header");
    assert.ok(
      location.endsWith(`/threads/${t.thread_id}/runs/${rid}/stream`),
      `Location should be the run's join-stream path, got ${location}`,
    );
    assert.ok(
      res.events.every((e) => typeof e.id === "string" && e.id.length > 0),
      `every event has an id: ${res.text}`,
    );

    // Last-Event-ID on the raw join (what the SDK's reconnect sends)
    const ids = res.events.map((e) => e.id);
    const join = await rawSSE("GET", `/threads/${t.thread_id}/runs/${rid}/stream`, {
      headers: { "Last-Event-ID": ids[0] },
    });
    assert.equal(join.status, 200, join.text);
    assert.deepEqual(
      join.events.map((e) => e.id),
      ids.slice(1),
    );
  });

  it("joinStream of a pending run delivers its events as it runs", async () => {
    const t = await echoThread();
    const run = await client.runs.create(t.thread_id, GRAPH_ID, { input: say("joined"), afterSeconds: 1 });
    assert.equal(run.status, "pending");
    const parts = await collectStream(
      client.runs.joinStream(t.thread_id, run.run_id, { signal: AbortSignal.timeout(STREAM_TIMEOUT_MS) }),
    );
    assertFramed(parts, { run_id: run.run_id }, "join");
    assertModes(parts, ["values"], "joined", "join");
  });

  it("joinStream of a finished, non-resumable run ends without replaying", async () => {
    const t = await echoThread();
    const run = await client.runs.create(t.thread_id, GRAPH_ID, { input: say("done") });
    await client.runs.join(t.thread_id, run.run_id);
    const parts = await collectStream(
      client.runs.joinStream(t.thread_id, run.run_id, { signal: AbortSignal.timeout(STREAM_TIMEOUT_MS) }),
    );
    assert.ok(
      !names(parts).includes("values"),
      `nothing is replayed without stream_resumable: ${names(parts)}`,
    );
  });

  it("joinStream of an unknown run -> 404", async () => {
    const t = await echoThread();
    await rejectsWithStatus(collectStream(client.runs.joinStream(t.thread_id, uuid4())), 404);
  });
});

describe("multitask strategies", () => {
  it("reject: a second run while one is pending -> 409 (create, wait and stream)", async () => {
    const t = await echoThread();
    const first = await delayedRun(t.thread_id);
    try {
      await rejectsWithStatus(
        client.runs.create(t.thread_id, GRAPH_ID, { input: say("second"), multitaskStrategy: "reject" }),
        409,
        "create:",
      );
      await rejectsWithStatus(
        client.runs.wait(t.thread_id, GRAPH_ID, { input: say("second"), multitaskStrategy: "reject" }),
        409,
        "wait:",
      );
      await rejectsWithStatus(
        collectStream(client.runs.stream(t.thread_id, GRAPH_ID, { input: say("second"), multitaskStrategy: "reject" })),
        409,
        "stream:",
      );
      const listed = await client.runs.list(t.thread_id);
      assert.deepEqual(
        listed.map((r) => r.run_id),
        [first.run_id],
        "a rejected run is not stored",
      );
      assert.equal((await client.runs.get(t.thread_id, first.run_id)).status, "pending", "the first run is untouched");
    } finally {
      await client.runs.cancel(t.thread_id, first.run_id, true);
    }
  });

  it("reject on an idle thread creates the run", async () => {
    const t = await echoThread();
    const r = await client.runs.create(t.thread_id, GRAPH_ID, { input: say("alone"), multitaskStrategy: "reject" });
    assert.equal(r.multitask_strategy, "reject");
    assert.equal(lastContent(await client.runs.join(t.thread_id, r.run_id)), reply("alone"));
  });

  it("interrupt: the pending run ends interrupted, the new run succeeds", async () => {
    const t = await echoThread();
    const first = await delayedRun(t.thread_id, "first");
    const second = await client.runs.create(t.thread_id, GRAPH_ID, {
      input: say("second"),
      multitaskStrategy: "interrupt",
    });
    assertRunShape(second);
    assert.equal(second.multitask_strategy, "interrupt");
    const values = await client.runs.join(t.thread_id, second.run_id);
    assert.deepEqual(contents(values), ["second", reply("second")], "the interrupted run never ran");
    assert.equal((await client.runs.get(t.thread_id, second.run_id)).status, "success");
    await waitRunStatus(t.thread_id, first.run_id, "interrupted");
    assert.deepEqual(
      (await client.runs.list(t.thread_id)).map((r) => r.run_id).sort(),
      [first.run_id, second.run_id].sort(),
      "the interrupted run stays queryable",
    );
    await waitThreadStatus(t.thread_id, "idle");
  });

  it("rollback: the pending run is deleted (404), the new run succeeds", async () => {
    const t = await echoThread();
    const first = await delayedRun(t.thread_id, "first");
    const second = await client.runs.create(t.thread_id, GRAPH_ID, {
      input: say("second"),
      multitaskStrategy: "rollback",
    });
    assert.equal(second.multitask_strategy, "rollback");
    const values = await client.runs.join(t.thread_id, second.run_id);
    assert.deepEqual(contents(values), ["second", reply("second")]);
    await waitGone(() => client.runs.get(t.thread_id, first.run_id), "get of the rolled-back run");
    assert.deepEqual(
      (await client.runs.list(t.thread_id)).map((r) => r.run_id),
      [second.run_id],
    );
  });

  it("enqueue: runs wait for the one before and complete in order (also the default)", async () => {
    const t = await echoThread();
    const a = await client.runs.create(t.thread_id, GRAPH_ID, { input: say("first"), afterSeconds: 1 });
    const b = await client.runs.create(t.thread_id, GRAPH_ID, { input: say("second"), multitaskStrategy: "enqueue" });
    const c = await client.runs.create(t.thread_id, GRAPH_ID, { input: say("third") }); // default strategy
    assert.equal(b.status, "pending");
    assert.equal(b.multitask_strategy, "enqueue");
    assert.equal(c.multitask_strategy, "enqueue");
    assert.equal((await client.runs.get(t.thread_id, b.run_id)).status, "pending", "b waits behind the delayed a");

    const vc = await client.runs.join(t.thread_id, c.run_id);
    assert.deepEqual(contents(vc), ["first", reply("first"), "second", reply("second"), "third", reply("third")]);
    for (const r of [a, b, c]) assert.equal((await client.runs.get(t.thread_id, r.run_id)).status, "success");
    const vb = await client.runs.join(t.thread_id, b.run_id);
    assert.deepEqual(contents(vb), ["first", reply("first"), "second", reply("second")], "join(b) = b's final values");
  });
});

describe("cancel", () => {
  it("cancel (wait=false) of a pending run -> interrupted; thread idle", async () => {
    const t = await echoThread();
    const r = await delayedRun(t.thread_id);
    const res = await client.runs.cancel(t.thread_id, r.run_id, false);
    assert.equal(res, undefined, "cancel without wait answers 202 (no body)");
    await waitRunStatus(t.thread_id, r.run_id, "interrupted");
    await waitThreadStatus(t.thread_id, "idle");
  });

  it("cancel with wait=true -> the run is interrupted when the call returns", async () => {
    const t = await echoThread();
    const r = await delayedRun(t.thread_id);
    const res = await client.runs.cancel(t.thread_id, r.run_id, true);
    assert.equal(res, undefined, "cancel with wait answers 204 (no body)");
    assert.equal((await client.runs.get(t.thread_id, r.run_id)).status, "interrupted");
    assert.equal((await client.threads.get(t.thread_id)).status, "idle");
    // the cancelled run's input never reached the thread
    const state = await client.threads.getState(t.thread_id);
    assert.deepEqual(contents(state.values), []);
  });

  it("wire: cancel answers 202 with wait=0 and 204 with wait=1", async () => {
    const t = await echoThread();
    const r1 = await delayedRun(t.thread_id);
    const a = await raw("POST", `/threads/${t.thread_id}/runs/${r1.run_id}/cancel?wait=0&action=interrupt`);
    assert.equal(a.status, 202, `wait=0: ${a.text}`);
    await waitRunStatus(t.thread_id, r1.run_id, "interrupted");

    const r2 = await delayedRun(t.thread_id);
    const b = await raw("POST", `/threads/${t.thread_id}/runs/${r2.run_id}/cancel?wait=1&action=interrupt`);
    assert.equal(b.status, 204, `wait=1: ${b.text}`);
    assert.equal((await client.runs.get(t.thread_id, r2.run_id)).status, "interrupted");
  });

  it("cancel with action rollback deletes the run -> 404", async () => {
    const t = await echoThread();
    const r = await delayedRun(t.thread_id);
    await client.runs.cancel(t.thread_id, r.run_id, true, "rollback");
    await waitGone(() => client.runs.get(t.thread_id, r.run_id), "get after cancel(rollback)");
    assert.deepEqual(await client.runs.list(t.thread_id), []);
    await waitThreadStatus(t.thread_id, "idle");
  });

  it("cancel an unknown run, or a run through another thread -> 404", async () => {
    const t = await echoThread();
    const other = await echoThread();
    await rejectsWithStatus(client.runs.cancel(t.thread_id, uuid4()), 404, "unknown run:");
    await rejectsWithStatus(client.runs.cancel(uuid4(), uuid4()), 404, "unknown thread:");
    const r = await delayedRun(t.thread_id);
    try {
      await rejectsWithStatus(client.runs.cancel(other.thread_id, r.run_id), 404, "run of another thread:");
      assert.equal((await client.runs.get(t.thread_id, r.run_id)).status, "pending");
    } finally {
      await client.runs.cancel(t.thread_id, r.run_id, true);
    }
  });

  it("cancel a finished run -> 2xx and its status stays success", async () => {
    const t = await echoThread();
    const r = await client.runs.create(t.thread_id, GRAPH_ID, { input: say("finished") });
    await client.runs.join(t.thread_id, r.run_id);
    await client.runs.cancel(t.thread_id, r.run_id, true);
    assert.equal((await client.runs.get(t.thread_id, r.run_id)).status, "success");
  });
});

describe("stateless runs", () => {
  it("wait(null, echo) returns the final values; onRunCreated has no thread_id", async () => {
    let meta;
    const values = await client.runs.wait(null, GRAPH_ID, {
      input: say("stateless"),
      onRunCreated: (m) => {
        meta = m;
      },
    });
    assert.deepEqual(msgs(values), [
      { type: "human", content: "stateless" },
      { type: "ai", content: reply("stateless") },
    ]);
    assert.ok(meta, "onRunCreated should fire (Content-Location /runs/{run_id})");
    assertUuid(meta.run_id, "run_id");
    assert.equal(meta.thread_id, undefined, "stateless Content-Location has no thread");
  });

  it("stream(null, echo) streams values and ends", async () => {
    const { parts, created } = await streamRun(null, { input: say("stateless stream"), streamMode: "values" });
    assertFramed(parts, created, "stateless");
    assert.ok(created, "onRunCreated fires for /runs/stream");
    assert.equal(created.thread_id, undefined);
    assertModes(parts, ["values"], "stateless stream", "stateless");
  });

  it("create(null, echo) with onCompletion keep: the thread stays and can be joined", async () => {
    let meta;
    const run = await client.runs.create(null, GRAPH_ID, {
      input: say("kept"),
      onCompletion: "keep",
      onRunCreated: (m) => {
        meta = m;
      },
    });
    assertRunShape(run);
    assert.equal(run.status, "pending");
    assert.deepEqual(meta, { run_id: run.run_id, thread_id: undefined });
    const values = await client.runs.join(run.thread_id, run.run_id);
    assert.equal(lastContent(values), reply("kept"));
    const state = await client.threads.getState(run.thread_id);
    assert.equal(lastContent(state.values), reply("kept"));
  });

  it("createBatch makes independent stateless runs", async () => {
    // createBatch sends each payload as given (plus assistant_id), so options
    // must be spelled as on the wire: on_completion, not onCompletion.
    const made = await client.runs.createBatch([
      { assistantId: GRAPH_ID, input: say("b1"), on_completion: "keep" },
      { assistantId: GRAPH_ID, input: say("b2"), on_completion: "keep" },
    ]);
    assert.ok(Array.isArray(made) && made.length === 2, `expected 2 runs, got ${JSON.stringify(made)}`);
    for (const r of made) {
      assertRunShape(r, "batch run");
      assert.equal(r.status, "pending");
    }
    assert.notEqual(made[0].run_id, made[1].run_id);
    assert.notEqual(made[0].thread_id, made[1].thread_id, "each stateless run gets its own thread");
    assert.equal(lastContent(await client.runs.join(made[0].thread_id, made[0].run_id)), reply("b1"));
    assert.equal(lastContent(await client.runs.join(made[1].thread_id, made[1].run_id)), reply("b2"));
  });
});

describe("thread state after runs", () => {
  it("getState / getHistory show the reply and input/loop checkpoints; thread values and metadata", async () => {
    const t = await echoThread();
    await client.runs.wait(t.thread_id, GRAPH_ID, { input: say("first") });

    const s = await client.threads.getState(t.thread_id);
    assert.deepEqual(msgs(s.values), [
      { type: "human", content: "first" },
      { type: "ai", content: reply("first") },
    ]);
    assert.deepEqual(s.next, []);
    assert.equal(s.metadata?.source, "loop", "the last checkpoint of a run has source loop");
    assertTimestamp(s.created_at, "state.created_at");

    const h = await client.threads.getHistory(t.thread_id);
    assert.deepEqual(
      h.map((x) => x.metadata?.source),
      ["loop", "loop", "input"],
      "one run = an input checkpoint, the __start__ step and echo's step, newest first",
    );
    assert.deepEqual(h[2].next, ["__start__"], "the input checkpoint has __start__ next");
    assert.deepEqual(contents(h[2].values), [], "the input checkpoint holds the values before the input");
    assert.equal(h[2].parent_checkpoint, null, "the thread's first checkpoint has no parent");
    assert.deepEqual(h[1].next, ["echo"], "the __start__ step has echo next");
    assert.deepEqual(contents(h[1].values), ["first"]);
    assert.equal(h[0].checkpoint.checkpoint_id, s.checkpoint.checkpoint_id);
    assert.equal(h[0].parent_checkpoint?.checkpoint_id, h[1].checkpoint.checkpoint_id, "echo's parent is the __start__ step");
    assert.equal(h[1].parent_checkpoint?.checkpoint_id, h[2].checkpoint.checkpoint_id, "the __start__ step's parent is the input");

    await client.runs.wait(t.thread_id, GRAPH_ID, { input: say("second") });
    const h2 = await client.threads.getHistory(t.thread_id);
    assert.deepEqual(
      h2.map((x) => x.metadata?.source),
      ["loop", "loop", "input", "loop", "loop", "input"],
    );
    assert.deepEqual(contents(h2[0].values), ["first", reply("first"), "second", reply("second")]);
    assert.deepEqual(contents(h2[2].values), ["first", reply("first")], "the second input checkpoint holds the first run's values");
    assert.equal(h2[2].parent_checkpoint?.checkpoint_id, h[0].checkpoint.checkpoint_id, "runs chain their checkpoints");

    const th = await client.threads.get(t.thread_id);
    assert.equal(th.status, "idle");
    assert.deepEqual(contents(th.values), ["first", reply("first"), "second", reply("second")], "thread.values");
    assert.equal(th.metadata.graph_id, GRAPH_ID, "a run sets metadata.graph_id");
    assert.equal(th.metadata.assistant_id, ASSISTANT_ID, "a run sets metadata.assistant_id");
    assert.equal(th.metadata.tag, t.metadata.tag, "existing metadata is kept");
  });

  it("thread status: busy while a run is pending, idle after", async () => {
    const t = await echoThread();
    assert.equal((await client.threads.get(t.thread_id)).status, "idle");
    const r = await delayedRun(t.thread_id);
    assert.equal((await client.threads.get(t.thread_id)).status, "busy", "a pending run makes the thread busy");
    const busy = await client.threads.search({ metadata: { tag: t.metadata.tag }, status: "busy" });
    assert.deepEqual(
      busy.map((x) => x.thread_id),
      [t.thread_id],
    );
    assert.equal(await client.threads.count({ metadata: { tag: t.metadata.tag }, status: "idle" }), 0);

    await client.runs.cancel(t.thread_id, r.run_id, true);
    await waitThreadStatus(t.thread_id, "idle");

    await client.runs.wait(t.thread_id, GRAPH_ID, { input: say("after") });
    assert.equal((await client.threads.get(t.thread_id)).status, "idle", "idle once the run has finished");
  });
});

describe("thread join stream", () => {
  it("threads.joinStream with lastEventId replays what a reconnecting client missed", async () => {
    const t = await echoThread();
    // First connection: runs are made until it has heard two events (it
    // hears only runs that start after it is registered).
    const seen = [];
    const reader = (async () => {
      for await (const part of client.threads.joinStream(t.thread_id, { signal: AbortSignal.timeout(STREAM_TIMEOUT_MS) })) {
        seen.push(part);
        if (seen.length >= 2) break;
      }
    })();
    await pollUntil(
      async () => seen.length >= 2 || (await client.runs.wait(t.thread_id, GRAPH_ID, { input: say("one") }), seen.length >= 2),
      { timeoutMs: STREAM_TIMEOUT_MS, what: "the thread stream's first events" },
    );
    await reader;
    const lastId = Number(seen[1].id);
    assert.ok(Number.isInteger(lastId), `thread stream events carry numeric ids: ${JSON.stringify(seen[1])}`);

    // A whole run while nobody listens.
    await client.runs.wait(t.thread_id, GRAPH_ID, { input: say("two") });

    // Reconnect from the last id seen: everything after it, up to the end
    // of the run made while away.
    const again = [];
    let awayRunSeen = false;
    for await (const part of client.threads.joinStream(t.thread_id, {
      lastEventId: String(lastId),
      signal: AbortSignal.timeout(STREAM_TIMEOUT_MS),
    })) {
      again.push(part);
      if (part.event === "values" && part.data?.messages?.some((m) => m.content === reply("two"))) awayRunSeen = true;
      if (awayRunSeen && part.event === "run_done") break;
    }
    assert.ok(awayRunSeen, "the run made while away is replayed");
    // Ids grow with every event (they are the publishing replica's clock,
    // so that any replica can resume them); the replay starts after the
    // last id seen and repeats nothing.
    const ids = again.map((p) => Number(p.id));
    assert.ok(
      ids.every((id, i) => Number.isInteger(id) && id > (i === 0 ? lastId : ids[i - 1])),
      `the replay continues after the last id, in order, without repeats: ${lastId} then ${ids}`,
    );
  });
});
