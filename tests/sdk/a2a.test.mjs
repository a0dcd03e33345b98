// The official A2A JavaScript SDK (@a2a-js/sdk) against the server's A2A
// endpoint: the client reads the agent card under /a2a/{assistant_id}/ and
// talks JSON-RPC to /a2a/{assistant_id}, with the v1.0 wire (the SDK's
// default) and the v0.3 wire (its legacy compatibility transport).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Role, TaskState } from "@a2a-js/sdk";
import { Client, ClientFactory } from "@a2a-js/sdk/client";
import { LegacyJsonRpcTransport } from "@a2a-js/sdk/compat/v0_3/client";
import { A2A_ERROR_CODE, RequestMalformedError, TaskNotFoundError } from "@a2a-js/sdk/errors";
import { API_URL, makeClient, uniqueTag } from "./lib.mjs";

/** A client of the echo assistant: the SDK's own (v1.0), or its v0.3 transport at the card's url. */
async function connect(legacy) {
  const client = await new ClientFactory().createFromUrl(`${API_URL}/a2a/echo/`);
  if (!legacy) return client;
  const card = await client.getAgentCard();
  return new Client(new LegacyJsonRpcTransport({ endpoint: card.supportedInterfaces[0].url }), card);
}

function userMessage(text, contextId) {
  return { messageId: randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: "text", value: text } }], contextId };
}

const textOf = (parts) => parts.map((p) => p.content?.value ?? "").join("");

for (const legacy of [false, true]) {
  describe(`A2A endpoint (${legacy ? "v0.3" : "v1.0"} wire)`, () => {
    it("reads the card, sends a message and gets the task", async () => {
      const client = await connect(legacy);
      const tag = uniqueTag("a2a");
      const task = await client.sendMessage({ message: userMessage(tag) });
      assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
      assert.match(textOf(task.artifacts[0].parts), new RegExp(tag));
      const got = await client.getTask({ id: task.id });
      assert.equal(got.id, task.id);
      assert.equal(got.contextId, task.contextId);
      // The context is a thread of the server.
      const state = await makeClient().threads.getState(task.contextId);
      assert.ok(state.values.messages.some((m) => m.content === tag));
    });

    it("streams a task to its final status", async () => {
      const client = await connect(legacy);
      const tag = uniqueTag("stream");
      const events = [];
      for await (const ev of client.sendMessageStream({ message: userMessage(tag) })) events.push(ev);
      assert.equal(events[0].payload.$case, "task");
      const last = events.at(-1).payload;
      assert.equal(last.$case, "statusUpdate");
      assert.equal(last.value.status.state, TaskState.TASK_STATE_COMPLETED);
      const artifact = events.find((e) => e.payload.$case === "artifactUpdate");
      assert.match(textOf(artifact.payload.value.artifact.parts), new RegExp(tag));
    });

    it("cancels a task that has ended with a clear error, and a running one", async () => {
      const client = await connect(legacy);
      const done = await client.sendMessage({ message: userMessage("x") });
      await assert.rejects(client.cancelTask({ id: done.id }), /cancel/i);
      // A run delayed by after_seconds is a submitted task of the assistant.
      const lg = makeClient();
      const thread = await lg.threads.create();
      const run = await lg.runs.create(thread.thread_id, "echo", { input: { messages: [{ role: "user", content: "later" }] }, afterSeconds: 60 });
      const pending = await client.getTask({ id: run.run_id });
      assert.equal(pending.status.state, TaskState.TASK_STATE_SUBMITTED);
      assert.equal(pending.contextId, thread.thread_id);
      const cancelled = await client.cancelTask({ id: run.run_id });
      assert.equal(cancelled.status.state, TaskState.TASK_STATE_CANCELED);
      // A task that does not exist is not found.
      await assert.rejects(client.getTask({ id: randomUUID() }), /not found/i);
    });

    it("answers a task call without its task id with invalid params, an unknown task with task not found", async () => {
      const client = await connect(legacy);
      const isClass = (cls, not) => (err) => err instanceof cls && !(err instanceof not);
      await assert.rejects(client.getTask({ id: "" }), isClass(RequestMalformedError, TaskNotFoundError));
      await assert.rejects(client.cancelTask({ id: "" }), isClass(RequestMalformedError, TaskNotFoundError));
      await assert.rejects(client.getTask({ id: randomUUID() }), isClass(TaskNotFoundError, RequestMalformedError));
    });
  });
}

describe("A2A agent card", () => {
  it("is served at /.well-known/agent-card.json?assistant_id=…", async () => {
    const res = await fetch(`${API_URL}/.well-known/agent-card.json?assistant_id=echo`);
    assert.equal(res.status, 200);
    const card = await res.json();
    assert.match(card.url, /\/a2a\/[0-9a-f-]{36}$/);
    assert.equal(card.capabilities.streaming, true);
  });
});

describe("A2A JSON-RPC envelope (raw requests)", () => {
  /** Posts body as it is to the echo assistant's endpoint and returns the JSON-RPC answer. */
  async function post(body) {
    const res = await fetch(`${API_URL}/a2a/echo`, { method: "POST", headers: { "content-type": "application/json" }, body });
    return res.json();
  }
  const get = (id, params) => JSON.stringify({ jsonrpc: "2.0", id, method: "tasks/get", params });

  it("answers a body that is not JSON with a parse error", async () => {
    const out = await post('{"jsonrpc": "2.0",');
    assert.equal(out.error.code, A2A_ERROR_CODE.PARSE_ERROR);
    assert.equal(out.id, null);
  });

  it("answers JSON that is not a request object with invalid request", async () => {
    for (const body of ["[]", `[${get(1, { id: randomUUID() })}]`, '"tasks/get"', "7", "null", "true"]) {
      const out = await post(body);
      assert.equal(out.error?.code, A2A_ERROR_CODE.INVALID_REQUEST, body);
      assert.equal(out.id, null, body);
    }
  });

  it("refuses ids that are objects, arrays, booleans or fractions", async () => {
    for (const id of [{ a: 1 }, [1], true, 1.5]) {
      const out = await post(get(id, { id: randomUUID() }));
      assert.equal(out.error?.code, A2A_ERROR_CODE.INVALID_REQUEST, JSON.stringify(id));
      assert.equal(out.id, null);
    }
    const ok = await post(get("req-1", { id: randomUUID() }));
    assert.equal(ok.error.code, A2A_ERROR_CODE.TASK_NOT_FOUND);
    assert.equal(ok.id, "req-1");
  });

  it("answers tasks/get without a task id with invalid params", async () => {
    for (const params of [{}, null, ["x"], { id: "" }]) {
      const out = await post(get(3, params));
      assert.equal(out.error?.code, A2A_ERROR_CODE.INVALID_PARAMS, JSON.stringify(params));
      assert.equal(out.id, 3);
    }
  });
});
