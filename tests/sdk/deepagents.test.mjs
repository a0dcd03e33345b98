// Interop: the REAL deepagents JS supervisor (npm `deepagents`, pinned in
// package.json) uses this server as its remote "async subagent" server through
// all five tools: start_async_task, check_async_task, update_async_task,
// list_async_tasks, cancel_async_task.
//
// The supervisor runs in this process: createDeepAgent() with a scripted fake
// chat model (fakeModel() from @langchain/core/testing: a FIFO queue of
// AIMessages, here carrying tool_calls) and a MemorySaver checkpointer, so each
// `turn()` below is one supervisor invocation on the same supervisor thread.
// The async subagent spec points at the `echo` graph of the server under test
// (deterministic, replies "echo: <last user message>"). The tools' HTTP calls
// go through the SDK Client that deepagents builds itself; they are recorded
// (method, path, body, status) with the SDK's public overrideFetchImplementation
// hook, filtered by a custom header that only the subagent spec sends.
//
// Expected strings are the JS 1.14.x ones (see
// shared/reference/deepagents-async-subagents.md §2 and §8): JS tool arguments
// are agentName / taskId / statusFilter, and results say "taskId".
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createDeepAgent } from "deepagents";
import { fakeModel } from "@langchain/core/testing";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { toJsonSchema } from "@langchain/core/utils/json_schema";
import { MemorySaver } from "@langchain/langgraph";
import { overrideFetchImplementation } from "@langchain/langgraph-sdk";
import {
  API_URL,
  GRAPH_ID,
  NAMESPACE_GRAPH,
  assertUuid,
  makeClient,
  pollUntil,
  raw,
  uniqueTag,
  uuid4,
  uuid5,
} from "./lib.mjs";

const client = makeClient();
const ASSISTANT_ID = uuid5(NAMESPACE_GRAPH, GRAPH_ID);
const ASYNC_TOOLS = ["start_async_task", "check_async_task", "update_async_task", "cancel_async_task", "list_async_tasks"];

/** Marks the subagent's requests so the recorder keeps only those. */
const WIRE_TAG = uniqueTag("da");
/** Every HTTP exchange the deepagents tools made: {method, path, query, body, status, headers}. */
const wire = [];

// The supervisor must not send LangSmith traces or an API key anywhere.
for (const k of ["LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"]) {
  delete process.env[k];
}

before(() => {
  overrideFetchImplementation(async (input, init = {}) => {
    const res = await fetch(input, init);
    const headers = new Headers(init.headers ?? {});
    if (headers.get("x-test-tag") === WIRE_TAG) {
      const url = new URL(String(input));
      let body;
      if (typeof init.body === "string") body = JSON.parse(init.body);
      wire.push({
        method: (init.method ?? "GET").toUpperCase(),
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        body,
        status: res.status,
        headers: Object.fromEntries(headers),
      });
    }
    return res;
  });
});
after(() => overrideFetchImplementation(undefined));

/** The async subagent spec: our echo graph, at the server under test. */
const ECHOER = {
  name: "echoer",
  description: "echoes",
  graphId: GRAPH_ID,
  url: API_URL,
  headers: { "x-test-tag": WIRE_TAG },
};

/**
 * A deepagents supervisor with one async subagent `echoer` -> our `echo` graph,
 * driven by a scripted model, on a MemorySaver thread of its own.
 * `turn(text, toolCalls, extraInput)` queues one AIMessage carrying `toolCalls`
 * (run in parallel by the supervisor) and then a final text answer, invokes the
 * supervisor once, and returns the ToolMessages answering those calls, in order.
 * `extraInput` is merged into the graph input (used to seed `asyncTasks`).
 */
function makeSupervisor() {
  const model = fakeModel();
  // The tools the agent binds to the model (what a real LLM would be offered).
  let bound = [];
  const bindTools = model.bindTools.bind(model);
  model.bindTools = (tools, ...rest) => {
    bound = tools;
    return bindTools(tools, ...rest);
  };
  const agent = createDeepAgent({ model, checkpointer: new MemorySaver(), subagents: [ECHOER] });
  const threadId = uuid4();
  let n = 0;
  let last;
  async function turn(text, toolCalls, extraInput = {}) {
    const calls = toolCalls.map((tc) => ({ ...tc, id: `call_${++n}` }));
    model.respondWithTools(calls);
    model.respond(new AIMessage(`done ${n}`));
    const before = model.callCount;
    last = await agent.invoke(
      { messages: [new HumanMessage(text)], ...extraInput },
      { configurable: { thread_id: threadId } },
    );
    assert.equal(model.callCount - before, 2, "one turn = one model call with tool calls + one final answer");
    return calls.map((c) => {
      const m = last.messages.find((x) => ToolMessage.isInstance(x) && x.tool_call_id === c.id);
      assert.ok(m, `no ToolMessage answered ${c.name} (${c.id}); messages: ${last.messages.map((x) => x.type).join(",")}`);
      // (deepagents builds its ToolMessages inside a Command, without `name`.)
      assert.equal(typeof m.content, "string", `${c.name} result should be a string`);
      return m;
    });
  }
  return {
    model,
    threadId,
    turn,
    /** The tools bound to the model at the last model call. */
    boundTools: () => bound,
    /** The supervisor's asyncTasks state channel after the last turn. */
    tasks: () => last?.asyncTasks ?? {},
  };
}

/** A tracked-task record as deepagents stores it, for seeding through the input. */
const seededTask = (threadId, runId) => ({
  taskId: threadId,
  agentName: "echoer",
  threadId,
  runId,
  status: "running",
  createdAt: new Date().toISOString(),
});

/** Recorded exchanges since index `from`, as "METHOD path status". */
const wireSince = (from) => wire.slice(from).map((w) => `${w.method} ${w.path} ${w.status}`);

const msgs = (values) => (values?.messages ?? []).map((m) => ({ type: m.type, content: m.content }));

describe("deepagents JS supervisor with this server as its remote async-subagent server", () => {
  const sup = makeSupervisor();
  let taskId; // == remote thread_id
  let run1; // run of start_async_task
  let run2; // run of update_async_task

  it("start_async_task: POST /threads + POST /threads/<id>/runs (echo), 'Launched async subagent. taskId: <id>'", async () => {
    const w0 = wire.length;
    const [tm] = await sup.turn("please echo hello in the background", [
      { name: "start_async_task", args: { agentName: "echoer", description: "hello" } },
    ]);

    // The model was offered the five async tools, with the JS argument names.
    const bound = Object.fromEntries(sup.boundTools().map((t) => [t.name, t]));
    for (const name of ASYNC_TOOLS) assert.ok(bound[name], `model was not offered ${name}: ${Object.keys(bound)}`);
    const args = (name) => Object.keys(toJsonSchema(bound[name].schema).properties ?? {}).sort();
    assert.deepEqual(args("start_async_task"), ["agentName", "description"]);
    assert.deepEqual(args("check_async_task"), ["taskId"]);
    assert.deepEqual(args("update_async_task"), ["message", "taskId"]);
    assert.deepEqual(args("cancel_async_task"), ["taskId"]);
    assert.deepEqual(args("list_async_tasks"), ["statusFilter"]);
    assert.match(bound.start_async_task.description, /\nAvailable async agent types:\n- echoer: echoes\n/);

    const m = /^Launched async subagent\. taskId: (\S+)$/.exec(tm.content);
    assert.ok(m, `unexpected start result: ${JSON.stringify(tm.content)}`);
    taskId = m[1];
    assertUuid(taskId, "taskId (= remote thread_id)");

    assert.deepEqual(wireSince(w0), [`POST /threads 200`, `POST /threads/${taskId}/runs 200`]);
    const [mkThread, mkRun] = wire.slice(w0);
    assert.deepEqual(mkThread.body, { metadata: {} });
    assert.equal(mkThread.headers["x-auth-scheme"], "langsmith", "deepagents adds x-auth-scheme: langsmith");
    assert.deepEqual(mkRun.body, {
      input: { messages: [{ role: "user", content: "hello" }], callbackThreadId: sup.threadId },
      assistant_id: GRAPH_ID,
    });

    const task = sup.tasks()[taskId];
    assert.ok(task, `asyncTasks should track ${taskId}: ${JSON.stringify(sup.tasks())}`);
    assert.equal(task.agentName, "echoer");
    assert.equal(task.threadId, taskId);
    assert.equal(task.status, "running", "start always caches 'running'");
    run1 = task.runId;
    assertUuid(run1, "runId");

    // The server knows that run, on that thread, for the echo graph.
    const r = await client.runs.get(taskId, run1);
    assert.equal(r.thread_id, taskId);
    assert.equal(r.assistant_id, ASSISTANT_ID, "graphId 'echo' resolves to the echo system assistant");
  });

  it("check_async_task: polled in separate supervisor turns until {status: success, result: 'echo: hello'}", async () => {
    assert.ok(taskId, "start must have succeeded");
    const w0 = wire.length;
    let checks = 0;
    const parsed = await pollUntil(
      async () => {
        const [tm] = await sup.turn("how is it going?", [{ name: "check_async_task", args: { taskId } }]);
        checks++;
        const res = JSON.parse(tm.content);
        assert.equal(res.threadId, taskId, `check result: ${tm.content}`);
        assert.ok(["pending", "running", "success"].includes(res.status), `unexpected check result ${tm.content}`);
        if (res.status !== "success") {
          assert.deepEqual(Object.keys(res).sort(), ["status", "threadId"], `non-final check result: ${tm.content}`);
          return false;
        }
        // JS compact JSON, exact string.
        assert.equal(tm.content, JSON.stringify({ status: "success", threadId: taskId, result: "echo: hello" }));
        return res;
      },
      { timeoutMs: 10_000, intervalMs: 20, what: "check_async_task -> success" },
    );
    assert.equal(parsed.result, "echo: hello");
    assert.equal(sup.tasks()[taskId].status, "success", "check caches the server's status");
    assert.ok(sup.tasks()[taskId].checkedAt, "check sets checkedAt");

    // Each check is GET run; the successful one also reads GET /threads/<id>/state.
    const got = wireSince(w0);
    assert.equal(got.filter((x) => x === `GET /threads/${taskId}/runs/${run1} 200`).length, checks, got.join("\n"));
    assert.equal(got.at(-1), `GET /threads/${taskId}/state 200`, got.join("\n"));
    assert.equal(got.length, checks + 1, got.join("\n"));
  });

  it("the remote thread's state holds the echo reply (checked through the server)", async () => {
    assert.ok(taskId, "start must have succeeded");
    const state = await client.threads.getState(taskId);
    assert.deepEqual(msgs(state.values), [
      { type: "human", content: "hello" },
      { type: "ai", content: "echo: hello" },
    ]);
    const th = await client.threads.get(taskId);
    assert.equal(th.status, "idle");
    assert.equal(th.metadata?.graph_id, GRAPH_ID);
    assert.equal((await client.runs.get(taskId, run1)).status, "success");
  });

  it("update_async_task: a second run with multitask_strategy interrupt on the same thread", async () => {
    assert.ok(taskId, "start must have succeeded");
    const w0 = wire.length;
    const [tm] = await sup.turn("tell it to say bye instead", [
      { name: "update_async_task", args: { taskId, message: "bye" } },
    ]);
    assert.equal(tm.content, `Updated async subagent. taskId: ${taskId}`);
    assert.deepEqual(wireSince(w0), [`POST /threads/${taskId}/runs 200`]);
    assert.deepEqual(wire[w0].body, {
      input: { messages: [{ role: "user", content: "bye" }] },
      assistant_id: GRAPH_ID,
      multitask_strategy: "interrupt",
    });

    const task = sup.tasks()[taskId];
    assert.equal(task.status, "running");
    run2 = task.runId;
    assertUuid(run2, "new runId");
    assert.notEqual(run2, run1, "update creates a new run");

    // Through the REST API: two runs on the remote thread, the new one with strategy interrupt.
    const runs = await client.runs.list(taskId);
    assert.deepEqual(runs.map((r) => r.run_id).sort(), [run1, run2].sort(), "GET /threads/<id>/runs lists both runs");
    const r2 = runs.find((r) => r.run_id === run2);
    assert.equal(r2.multitask_strategy, "interrupt");
    const r1 = runs.find((r) => r.run_id === run1);
    assert.equal(r1.status, "success", "the first run had already finished: interrupt leaves it alone");

    // The new run sees the full history and appends its reply.
    await pollUntil(async () => (await client.runs.get(taskId, run2)).status === "success", {
      what: "updated run -> success",
    });
    const state = await client.threads.getState(taskId);
    assert.deepEqual(msgs(state.values), [
      { type: "human", content: "hello" },
      { type: "ai", content: "echo: hello" },
      { type: "human", content: "bye" },
      { type: "ai", content: "echo: bye" },
    ]);
  });

  it("list_async_tasks: '1 tracked task(s)' with the live status fetched from the server", async () => {
    assert.ok(run2, "update must have succeeded");
    const w0 = wire.length;
    const [tm] = await sup.turn("what is running?", [{ name: "list_async_tasks", args: {} }]);
    // Cached status was 'running' (set by update): non-terminal, so list asks the server.
    assert.equal(tm.content, `1 tracked task(s):\n- taskId: ${taskId} agent: echoer status: success`);
    assert.deepEqual(wireSince(w0), [`GET /threads/${taskId}/runs/${run2} 200`]);
    assert.equal(sup.tasks()[taskId].status, "success");

    // statusFilter on the cached status.
    const [none, some] = await sup.turn("anything still running?", [
      { name: "list_async_tasks", args: { statusFilter: "running" } },
      { name: "list_async_tasks", args: { statusFilter: "success" } },
    ]);
    assert.equal(none.content, "No async subagent tasks tracked");
    assert.equal(some.content, `1 tracked task(s):\n- taskId: ${taskId} agent: echoer status: success`);
  });

  it("cancel_async_task: POST .../cancel?wait=0&action=interrupt -> 202; the finished run stays success", async () => {
    assert.ok(run2, "update must have succeeded");
    const w0 = wire.length;
    const [tm] = await sup.turn("cancel it", [{ name: "cancel_async_task", args: { taskId } }]);
    assert.equal(tm.content, `Cancelled async subagent task: ${taskId}`);
    assert.deepEqual(wireSince(w0), [`POST /threads/${taskId}/runs/${run2}/cancel 202`]);
    assert.deepEqual(wire[w0].query, { wait: "0", action: "interrupt" });
    assert.equal(wire[w0].body, undefined, "cancel has no body");

    // deepagents records 'cancelled' without asking (upstream issue #6234)...
    assert.equal(sup.tasks()[taskId].status, "cancelled");
    // ...while the server keeps the truth: the run had finished, so it stays success,
    // and the thread is idle with its history intact.
    assert.equal((await client.runs.get(taskId, run2)).status, "success");
    assert.equal((await client.runs.get(taskId, run1)).status, "success");
    const th = await client.threads.get(taskId);
    assert.equal(th.status, "idle");
    assert.equal(msgs(th.values).at(-1)?.content, "echo: bye");
    assert.equal((await client.runs.list(taskId)).length, 2, "cancel creates no run");

    // 'cancelled' is terminal for the client: list no longer asks the server.
    const w1 = wire.length;
    const [ls] = await sup.turn("and now?", [{ name: "list_async_tasks", args: { statusFilter: "all" } }]);
    assert.equal(ls.content, `1 tracked task(s):\n- taskId: ${taskId} agent: echoer status: cancelled`);
    assert.deepEqual(wireSince(w1), []);
  });

  it("every request carried x-auth-scheme and the spec's custom header; no API key", () => {
    assert.ok(wire.length > 0);
    for (const w of wire) {
      assert.equal(w.headers["x-auth-scheme"], "langsmith", `${w.method} ${w.path}`);
      assert.equal(w.headers["x-api-key"], undefined, `${w.method} ${w.path}`);
      assert.ok(w.status >= 200 && w.status < 300, `${w.method} ${w.path} -> ${w.status}`);
    }
  });
});

describe("deepagents JS supervisor: in-flight runs (a delayed run stands in for a slow subagent)", () => {
  // echo answers in milliseconds, so to have the tools meet a run that is
  // still in flight, the tracked runs are made here with after_seconds (they
  // stay pending) and handed to the supervisor through its asyncTasks input.
  it("list/check see 'pending'; update interrupts the pending run; cancel interrupts it on the server", async () => {
    const DELAY_S = 5;
    const [ta, tb] = await Promise.all([client.threads.create(), client.threads.create()]);
    const [da, db] = await Promise.all(
      [ta, tb].map((t) =>
        client.runs.create(t.thread_id, GRAPH_ID, {
          input: { messages: [{ role: "user", content: "slow" }] },
          afterSeconds: DELAY_S,
        }),
      ),
    );
    const A = ta.thread_id;
    const B = tb.thread_id;
    const sup = makeSupervisor();
    const w0 = wire.length;

    // Seed both tasks and list them: live status from the server is 'pending'.
    const [ls] = await sup.turn("what is running?", [{ name: "list_async_tasks", args: {} }], {
      asyncTasks: { [A]: seededTask(A, da.run_id), [B]: seededTask(B, db.run_id) },
    });
    assert.equal(
      ls.content,
      `2 tracked task(s):\n- taskId: ${A} agent: echoer status: pending\n- taskId: ${B} agent: echoer status: pending`,
    );
    assert.deepEqual(wireSince(w0).sort(), [`GET /threads/${A}/runs/${da.run_id} 200`, `GET /threads/${B}/runs/${db.run_id} 200`].sort());

    // check: a non-final status gives status + threadId only, and no state read.
    const w1 = wire.length;
    const [ck] = await sup.turn("and A?", [{ name: "check_async_task", args: { taskId: ` ${A} ` } }]);
    assert.equal(ck.content, JSON.stringify({ status: "pending", threadId: A }), "taskId is trimmed");
    assert.deepEqual(wireSince(w1), [`GET /threads/${A}/runs/${da.run_id} 200`]);

    // update A while its run is pending: multitask_strategy interrupt takes it out
    // of the way; the new run answers, and the interrupted run's input never ran.
    const [up] = await sup.turn("redirect A", [{ name: "update_async_task", args: { taskId: A, message: "fast" } }]);
    assert.equal(up.content, `Updated async subagent. taskId: ${A}`);
    const newRun = sup.tasks()[A].runId;
    assert.notEqual(newRun, da.run_id);
    const values = await client.runs.join(A, newRun);
    assert.deepEqual(msgs(values), [
      { type: "human", content: "fast" },
      { type: "ai", content: "echo: fast" },
    ]);
    await pollUntil(async () => (await client.runs.get(A, da.run_id)).status === "interrupted", {
      what: "the pending run of A -> interrupted",
    });
    const runsA = await client.runs.list(A);
    assert.deepEqual(runsA.map((r) => r.run_id).sort(), [da.run_id, newRun].sort());

    // cancel B while its run is pending: 202, and the server really interrupts it.
    const w2 = wire.length;
    const [cc] = await sup.turn("drop B", [{ name: "cancel_async_task", args: { taskId: B } }]);
    assert.equal(cc.content, `Cancelled async subagent task: ${B}`);
    assert.deepEqual(wireSince(w2), [`POST /threads/${B}/runs/${db.run_id}/cancel 202`]);
    await pollUntil(async () => (await client.runs.get(B, db.run_id)).status === "interrupted", {
      what: "the cancelled run of B -> interrupted",
    });
    const thB = await pollUntil(async () => {
      const th = await client.threads.get(B);
      return th.status === "idle" ? th : false;
    }, { what: "thread B idle" });
    assert.deepEqual(msgs(thB.values), [], "the cancelled run's input never reached thread B");

    // check always asks the server: after cancel it reports the server's 'interrupted'.
    const [ckB, ckA] = await sup.turn("status?", [
      { name: "check_async_task", args: { taskId: B } },
      { name: "check_async_task", args: { taskId: A } },
    ]);
    assert.equal(ckB.content, JSON.stringify({ status: "interrupted", threadId: B }));
    assert.equal(ckA.content, JSON.stringify({ status: "success", threadId: A, result: "echo: fast" }));
  });
});

describe("deepagents JS supervisor: error paths against this server", () => {
  it("unknown agent and untracked taskId never reach the server", async () => {
    const sup = makeSupervisor();
    const w0 = wire.length;
    const [unknownAgent, untracked, list] = await sup.turn("go", [
      { name: "start_async_task", args: { agentName: "nope", description: "x" } },
      { name: "check_async_task", args: { taskId: "nope" } },
      { name: "list_async_tasks", args: {} },
    ]);
    assert.equal(unknownAgent.content, "Unknown async subagent type `nope`. Available types: `echoer`");
    assert.equal(untracked.content, "No tracked task found for taskId: 'nope'");
    assert.equal(list.content, "No async subagent tasks tracked");
    assert.deepEqual(wireSince(w0), []);
  });

  it("a tracked task whose remote thread does not exist: the server's 404 surfaces verbatim", async () => {
    const ghost = uuid4();
    const ghostRun = uuid4();
    const sup = makeSupervisor();
    const w0 = wire.length;
    const [check, update, cancel] = await sup.turn(
      "check the ghost",
      [
        { name: "check_async_task", args: { taskId: ghost } },
        { name: "update_async_task", args: { taskId: ghost, message: "boo" } },
        { name: "cancel_async_task", args: { taskId: ghost } },
      ],
      { asyncTasks: { [ghost]: seededTask(ghost, ghostRun) } },
    );

    const getRun = await raw("GET", `/threads/${ghost}/runs/${ghostRun}`);
    assert.equal(getRun.status, 404);
    assert.equal(typeof getRun.json?.detail, "string", `404 body should be {"detail": ...}: ${getRun.text}`);
    assert.equal(check.content, `Failed to get run status: Error: HTTP 404: ${getRun.text}`);
    assert.match(update.content, /^Failed to update async subagent: Error: HTTP 404: \{"detail":/);
    const cancelRun = await raw("POST", `/threads/${ghost}/runs/${ghostRun}/cancel?wait=0&action=interrupt`);
    assert.equal(cancelRun.status, 404);
    assert.equal(cancel.content, `Failed to cancel run: Error: HTTP 404: ${cancelRun.text}`);

    assert.equal(sup.tasks()[ghost].status, "running", "failed calls leave the tracked task alone");
    assert.equal(sup.tasks()[ghost].runId, ghostRun);
    // One request each (the SDK does not retry a 404), and no thread was created.
    assert.deepEqual(wireSince(w0).sort(), [
      `GET /threads/${ghost}/runs/${ghostRun} 404`,
      `POST /threads/${ghost}/runs 404`,
      `POST /threads/${ghost}/runs/${ghostRun}/cancel 404`,
    ].sort());
    assert.equal((await raw("GET", `/threads/${ghost}`)).status, 404);
  });
});
