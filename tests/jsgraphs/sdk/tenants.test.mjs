// Two users through the real JS SDK against a server running the fixture's
// JS Auth module and Hono app (langgraph.auth.json): no cross-tenant read,
// list, stream, join or cancel; a handler's deny is a 403; filters; owner
// metadata written on create; the custom routes under the server's auth.
// The Go test TestJSAuthTwoUsersThroughSDK starts the server and runs this
// file with LANGGRAPH_API_URL pointing at it.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

const API_URL = process.env.LANGGRAPH_API_URL;
assert.ok(API_URL, "LANGGRAPH_API_URL is not set");

function as(token) {
  return new Client({
    apiUrl: API_URL,
    apiKey: null,
    timeoutMs: 30_000,
    callerOptions: { maxRetries: 0 },
    defaultHeaders: token ? { Authorization: `Bearer ${token}` } : {},
  });
}

const alice = as("token-alice");
const bob = as("token-bob");
const carol = as("token-carol");
const human = (text) => ({ messages: [{ role: "user", content: text }] });

async function rejects(promise, status, what) {
  await assert.rejects(promise, (err) => {
    assert.equal(err?.status, status, `${what}: status ${err?.status} (${err?.message}), want ${status}`);
    return true;
  }, what);
}

async function rawFetch(path, { token, method = "GET", body, headers = {} } = {}) {
  const h = { ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  if (body !== undefined) h["content-type"] = "application/json";
  return fetch(API_URL + path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
}

describe("a JS Auth module, two users", () => {
  it("owner metadata is written on create, whatever the client sent", async () => {
    const t = await alice.threads.create({ metadata: { owner: "bob", topic: "x" } });
    assert.equal(t.metadata.owner, "alice");
    assert.equal(t.metadata.org, "acme");
    assert.deepEqual(t.metadata.readers, ["alice"]);
    assert.equal(t.metadata.topic, "x");
  });

  it("no cross-tenant read, list, search, count, stream, join or cancel of threads and runs", async () => {
    const mine = await alice.threads.create();
    const theirs = await bob.threads.create();
    const out = await alice.runs.wait(mine.thread_id, "js_chat", { input: human("hello") });
    assert.equal(out.messages.at(-1).content, "you said: hello");
    const [run] = await alice.runs.list(mine.thread_id);
    assert.equal(run.status, "success");

    await rejects(bob.threads.get(mine.thread_id), 404, "bob reads alice's thread");
    await rejects(bob.threads.getState(mine.thread_id), 404, "bob reads alice's state");
    await rejects(bob.threads.getHistory(mine.thread_id), 404, "bob reads alice's history");
    await rejects(bob.threads.update(mine.thread_id, { metadata: { x: 1 } }), 404, "bob updates alice's thread");
    await rejects(bob.runs.list(mine.thread_id), 404, "bob lists alice's runs");
    await rejects(bob.runs.get(mine.thread_id, run.run_id), 404, "bob reads alice's run");
    await rejects(bob.runs.join(mine.thread_id, run.run_id), 404, "bob joins alice's run");
    await rejects(bob.runs.wait(mine.thread_id, "js_chat", { input: human("hijack") }), 404, "bob runs on alice's thread");
    await rejects(bob.runs.create(mine.thread_id, "js_chat", { input: human("hijack"), ifNotExists: "create" }), 404, "bob's if_not_exists on alice's thread");
    await assert.rejects(
      (async () => {
        for await (const _ of bob.runs.stream(mine.thread_id, "js_chat", { input: human("hijack") })) {
          // nothing may arrive
        }
      })(),
      (err) => err?.status === 404,
      "bob streams on alice's thread",
    );
    await assert.rejects(
      (async () => {
        for await (const _ of bob.runs.joinStream(mine.thread_id, run.run_id)) {
          // nothing may arrive
        }
      })(),
      (err) => err?.status === 404,
      "bob joins the stream of alice's run",
    );

    const bobSees = await bob.threads.search({ limit: 100 });
    assert.ok(bobSees.every((t) => t.metadata.owner === "bob"), "bob's search shows only his threads");
    assert.ok(bobSees.some((t) => t.thread_id === theirs.thread_id));
    assert.ok(!bobSees.some((t) => t.thread_id === mine.thread_id));
    const aliceSees = await alice.threads.search({ limit: 100 });
    assert.ok(aliceSees.some((t) => t.thread_id === mine.thread_id));
    assert.ok(!aliceSees.some((t) => t.thread_id === theirs.thread_id));
    assert.equal(await bob.threads.count(), bobSees.length, "bob's count matches his search");

    // A slow run alice starts: bob can neither see nor cancel it; she can.
    const slow = await alice.runs.create(mine.thread_id, "js_slow", { input: { seconds: 30 } });
    await rejects(bob.runs.cancel(mine.thread_id, slow.run_id), 404, "bob cancels alice's run");
    assert.equal((await alice.runs.get(mine.thread_id, slow.run_id)).status === "success", false);
    await alice.runs.cancel(mine.thread_id, slow.run_id, true);
    assert.equal((await alice.runs.get(mine.thread_id, slow.run_id)).status, "interrupted");
  });

  it("a handler that returns false denies with 403; HTTPExceptions keep their status", async () => {
    await rejects(carol.threads.create(), 403, "carol lacks threads:write");
    await rejects(as("token-mallory").threads.search(), 403, "a suspended account");
    await rejects(as("nobody").threads.search(), 401, "an unknown token");
    await rejects(as(null).threads.search(), 401, "no token");
    const res = await rawFetch("/threads/search", { token: "nobody", method: "POST", body: {} });
    assert.equal(res.status, 401);
    assert.equal((await res.json()).detail, "Invalid token");
  });

  it("assistants and crons are their creator's: no cross-tenant read, search, run or delete", async () => {
    const mine = await alice.assistants.create({ graphId: "js_chat", name: "alice's chat", metadata: { owner: "bob" } });
    assert.equal(mine.metadata.owner, "alice");
    await rejects(bob.assistants.get(mine.assistant_id), 404, "bob reads alice's assistant");
    await rejects(bob.assistants.update(mine.assistant_id, { name: "mine now" }), 404, "bob updates alice's assistant");
    const bobThread = await bob.threads.create();
    await rejects(bob.runs.wait(bobThread.thread_id, mine.assistant_id, { input: human("hi") }), 404, "bob runs alice's assistant");
    const bobFinds = await bob.assistants.search({ limit: 100 });
    assert.ok(!bobFinds.some((a) => a.assistant_id === mine.assistant_id), "bob's search shows alice's assistant");
    assert.ok((await alice.assistants.search({ limit: 100 })).some((a) => a.assistant_id === mine.assistant_id));

    const thread = await alice.threads.create();
    const cron = await alice.crons.createForThread(thread.thread_id, mine.assistant_id, { schedule: "0 0 1 1 *", input: human("yearly") });
    assert.ok(!(await bob.crons.search({ limit: 100 })).some((c) => c.cron_id === cron.cron_id), "bob's search shows alice's cron");
    assert.ok((await alice.crons.search({ limit: 100 })).some((c) => c.cron_id === cron.cron_id));
    await rejects(bob.crons.delete(cron.cron_id), 404, "bob deletes alice's cron");
    await rejects(bob.crons.createForThread(thread.thread_id, "js_chat", { schedule: "0 0 1 1 *" }), 404, "bob's cron on alice's thread");
    await alice.crons.delete(cron.cron_id);
    await rejects(bob.assistants.delete(mine.assistant_id), 404, "bob deletes alice's assistant");
    await alice.assistants.delete(mine.assistant_id);
  });

  it("store handlers rewrite the namespace: each user's memories are their own", async () => {
    await alice.store.putItem(["notes"], "plan", { text: "alice's plan" });
    await bob.store.putItem(["notes"], "plan", { text: "bob's plan" });
    assert.equal((await alice.store.getItem(["notes"], "plan")).value.text, "alice's plan");
    assert.equal((await bob.store.getItem(["notes"], "plan")).value.text, "bob's plan");
    const found = await alice.store.searchItems(["notes"]);
    assert.deepEqual(found.items.map((it) => [it.namespace, it.value.text]), [[["alice", "notes"], "alice's plan"]]);
    await bob.store.deleteItem(["notes"], "plan");
    assert.equal((await alice.store.getItem(["notes"], "plan")).value.text, "alice's plan", "bob's delete reached alice's item");
    assert.equal(await bob.store.getItem(["notes"], "plan"), null);
  });

  it("the run sees the module's user as langgraph_auth_user, custom fields included", async () => {
    const t = await bob.threads.create();
    const out = await bob.runs.wait(t.thread_id, "js_whoami", { input: {} });
    assert.equal(out.user.identity, "bob");
    assert.equal(out.user.org, "globex");
    assert.deepEqual(out.user.permissions, ["threads:write"]);
  });
});

describe("custom routes (http.app)", () => {
  it("serves a Hono route under the server's auth, with the caller as langgraph_auth_user", async () => {
    let res = await rawFetch("/hello", { token: "token-alice" });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { hello: "world", user: "alice" });
    assert.equal(res.headers.get("access-control-allow-origin"), "*", "the server's CORS applies");
    res = await rawFetch("/hello");
    assert.equal(res.status, 401, "no credentials, no custom route");
    res = await rawFetch("/echo/zed?q=1", { token: "token-bob", method: "POST", body: { a: 1 } });
    assert.deepEqual(await res.json(), { name: "zed", body: { a: 1 }, query: "1" });
  });

  it("the server's own routes take precedence", async () => {
    const res = await rawFetch("/ok");
    assert.deepEqual(await res.json(), { ok: true });
  });

  it("streams a Hono SSE response", async () => {
    const res = await rawFetch("/ticks", { token: "token-alice" });
    assert.match(res.headers.get("content-type"), /text\/event-stream/);
    const ticks = (await res.text()).match(/data: \d/g);
    assert.deepEqual(ticks, ["data: 1", "data: 2", "data: 3"]);
  });

  it("a public route needs no credentials, and auth.cache spares authenticate calls", async () => {
    const calls = async () => (await (await rawFetch("/public/auth-calls")).json()).calls;
    await alice.threads.search(); // alice's token is in the cache now
    const before = await calls();
    for (let i = 0; i < 5; i++) await alice.threads.search();
    assert.equal(await calls(), before, "cached: no authenticate call");
    await rejects(as("nobody-else").threads.search(), 401, "an unknown token");
    assert.equal(await calls(), before + 1, "a failed authentication is not cached");
  });
});
