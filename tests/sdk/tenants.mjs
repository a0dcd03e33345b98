// Two users against the route table, through the real SDK: run by the Go
// test internal/authz TestTenantsThroughSDK against a server with
// owner-scoped JWT auth (not by run.sh: the suite's server has no auth).
// Environment: LANGGRAPH_API_URL, ALICE_TOKEN, BOB_TOKEN, OPERATOR_KEY.
// It prints "ok <checks>" and exits 0, or throws.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Client } from "@langchain/langgraph-sdk";

const apiUrl = process.env.LANGGRAPH_API_URL;
const client = (headers) => new Client({ apiUrl, timeoutMs: 10_000, callerOptions: { maxRetries: 0 }, defaultHeaders: headers });
const alice = client({ Authorization: `Bearer ${process.env.ALICE_TOKEN}` });
const bob = client({ Authorization: `Bearer ${process.env.BOB_TOKEN}` });
const op = client({ "x-api-key": process.env.OPERATOR_KEY });

let checks = 0;

/** missing asserts that call fails with HTTP 404, as for a missing object. */
async function missing(what, call) {
  let err;
  try {
    const v = await call();
    // Async generators (streams) fail on iteration.
    if (v && typeof v[Symbol.asyncIterator] === "function") {
      for await (const _ of v) { /* drain */ }
    }
  } catch (e) {
    err = e;
  }
  assert.equal(err?.status, 404, `${what}: want 404, got ${err?.status ?? "success"} ${err?.message ?? ""}`);
  checks++;
}

const input = { messages: [{ role: "user", content: "hi" }] };

// Threads and their runs.
const thread = await alice.threads.create({ metadata: { owner: "bob", topic: "t" } });
const tid = thread.thread_id;
assert.equal(thread.metadata.owner, "alice");
const done = await alice.runs.wait(tid, "echo", { input });
assert.ok(done.messages?.length > 0, "alice's run answered");
const [run] = await alice.runs.list(tid);
const rid = run.run_id;

await missing("threads.get", () => bob.threads.get(tid));
await missing("threads.update", () => bob.threads.update(tid, { metadata: { owner: "bob" } }));
await missing("threads.copy", () => bob.threads.copy(tid));
await missing("threads.getState", () => bob.threads.getState(tid));
await missing("threads.updateState", () => bob.threads.updateState(tid, { values: { messages: [] } }));
await missing("threads.getHistory", () => bob.threads.getHistory(tid));
await missing("threads.delete", () => bob.threads.delete(tid));
await missing("runs.list", () => bob.runs.list(tid));
await missing("runs.get", () => bob.runs.get(tid, rid));
await missing("runs.join", () => bob.runs.join(tid, rid));
await missing("runs.joinStream", () => bob.runs.joinStream(tid, rid));
await missing("runs.cancel", () => bob.runs.cancel(tid, rid));
await missing("runs.delete", () => bob.runs.delete(tid, rid));
await missing("runs.create", () => bob.runs.create(tid, "echo", { input }));
await missing("runs.wait", () => bob.runs.wait(tid, "echo", { input }));
await missing("runs.stream", () => bob.runs.stream(tid, "echo", { input }));
// GHSA-747p: if_not_exists never takes another user's thread over.
await missing("runs.wait ifNotExists", () => bob.runs.wait(tid, "echo", { input, ifNotExists: "create" }));
assert.equal((await alice.runs.list(tid)).length, 1, "alice's thread got no run of bob's");
checks++;

const bobThread = await bob.threads.create();
for (const [who, c, want] of [["alice", alice, [tid]], ["bob", bob, [bobThread.thread_id]]]) {
  const found = await c.threads.search({ limit: 100 });
  assert.deepEqual(found.map((t) => t.thread_id), want, `${who}'s thread search`);
  assert.equal(await c.threads.count(), want.length, `${who}'s thread count`);
  checks += 2;
}
assert.equal((await bob.threads.search({ metadata: { owner: "alice" } })).length, 0);
assert.equal((await op.threads.search({ limit: 100 })).length, 2, "the operator sees both");
checks += 2;

// Assistants: own ones private, the graphs' system assistants shared.
const asst = await alice.assistants.create({ graphId: "echo", name: "alice-only" });
await missing("assistants.get", () => bob.assistants.get(asst.assistant_id));
await missing("assistants.getGraph", () => bob.assistants.getGraph(asst.assistant_id));
await missing("assistants.getSchemas", () => bob.assistants.getSchemas(asst.assistant_id));
await missing("assistants.update", () => bob.assistants.update(asst.assistant_id, { name: "mine" }));
await missing("assistants.getVersions", () => bob.assistants.getVersions(asst.assistant_id));
await missing("assistants.delete", () => bob.assistants.delete(asst.assistant_id));
// GHSA-jfj5: run creation checks assistants:read.
await missing("stateless run of alice's assistant", () => bob.runs.wait(null, asst.assistant_id, { input }));
await missing("thread run of alice's assistant", () => bob.runs.create(bobThread.thread_id, asst.assistant_id, { input }));
const bobsAssistants = (await bob.assistants.search({ limit: 100 })).map((a) => a.assistant_id);
assert.ok(!bobsAssistants.includes(asst.assistant_id), "bob's assistant search shows alice's");
assert.equal(await bob.assistants.count(), bobsAssistants.length);
assert.equal(await alice.assistants.count(), bobsAssistants.length + 1);
await bob.assistants.get("echo"); // shared
checks += 4;

// Crons.
const cron = await alice.crons.createForThread(tid, "echo", { schedule: "0 * * * *", input });
await missing("crons.createForThread on alice's thread", () => bob.crons.createForThread(tid, "echo", { schedule: "0 * * * *" }));
await missing("crons.update", () => bob.crons.update(cron.cron_id, { schedule: "5 * * * *" }));
await missing("crons.delete", () => bob.crons.delete(cron.cron_id));
assert.equal((await bob.crons.search()).length, 0, "bob's cron search");
assert.equal(await bob.crons.count(), 0, "bob's cron count");
assert.equal((await alice.crons.search()).length, 1, "alice's cron search");
checks += 3;

// Store: every user's namespaces are under their identity.
await alice.store.putItem(["notes"], "k", { who: "alice" });
await bob.store.putItem(["notes"], "k", { who: "bob" });
assert.equal((await alice.store.getItem(["notes"], "k")).value.who, "alice");
assert.equal((await bob.store.getItem(["notes"], "k")).value.who, "bob");
assert.equal(await bob.store.getItem(["alice", "notes"], "k"), null, "bob reads alice's namespace");
assert.deepEqual((await bob.store.searchItems([])).items.map((i) => i.value.who), ["bob"]);
assert.deepEqual((await bob.store.searchItems(["alice"])).items, []);
assert.deepEqual((await bob.store.listNamespaces()).namespaces, [["bob", "notes"]]);
assert.deepEqual((await bob.store.listNamespaces({ prefix: ["alice"] })).namespaces, []);
await bob.store.deleteItem(["alice", "notes"], "k");
assert.equal((await alice.store.getItem(["notes"], "k")).value.who, "alice", "bob's delete reached alice's item");
assert.equal((await op.store.listNamespaces()).namespaces.length, 2, "the operator sees both");
checks += 10;

// A fresh id with ifNotExists makes a thread its creator owns.
const fresh = randomUUID();
await bob.runs.wait(fresh, "echo", { input, ifNotExists: "create" });
assert.equal((await bob.threads.get(fresh)).metadata.owner, "bob");
await missing("alice reading bob's if_not_exists thread", () => alice.threads.get(fresh));
checks++;

console.log(`ok ${checks}`);
