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
