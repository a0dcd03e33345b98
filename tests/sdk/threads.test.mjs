// Threads, thread state and history through the real JS SDK (@langchain/langgraph-sdk).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { RemoteGraph } from "@langchain/langgraph/remote";
import {
  GRAPH_ID,
  assertTimestamp,
  assertUuid,
  echoNode,
  human,
  keysOf,
  makeClient,
  rejectsWithStatus,
  uniqueTag,
  uuid4,
} from "./lib.mjs";

const client = makeClient();

function assertThreadShape(t, what = "thread") {
  assert.equal(typeof t, "object", `${what} should be an object`);
  assertUuid(t.thread_id, `${what}.thread_id`);
  assertTimestamp(t.created_at, `${what}.created_at`);
  assertTimestamp(t.updated_at, `${what}.updated_at`);
  assert.ok(t.metadata && typeof t.metadata === "object", `${what}.metadata should be an object`);
  assert.ok(["idle", "busy", "interrupted", "error"].includes(t.status), `${what}.status=${t.status}`);
}

function assertCheckpointShape(cp, threadId, what = "checkpoint") {
  assert.ok(cp && typeof cp === "object", `${what} should be an object, got ${JSON.stringify(cp)}`);
  assert.equal(typeof cp.checkpoint_id, "string", `${what}.checkpoint_id should be a string`);
  assert.ok(cp.checkpoint_id.length > 0, `${what}.checkpoint_id should not be empty`);
  assert.equal(cp.thread_id, threadId, `${what}.thread_id`);
  assert.equal(cp.checkpoint_ns, "", `${what}.checkpoint_ns should be "" for the root graph`);
}

/** ThreadState shape; `fresh` = a thread without checkpoints (metadata/created_at may be absent). */
function assertStateShape(s, what = "state", { fresh = false } = {}) {
  assert.ok(s && typeof s === "object", `${what} should be an object`);
  assert.ok("values" in s, `${what}.values missing`);
  assert.ok(Array.isArray(s.next), `${what}.next should be an array`);
  assert.ok(Array.isArray(s.tasks), `${what}.tasks should be an array`);
  assert.ok("checkpoint" in s, `${what}.checkpoint missing`);
  if (!fresh) {
    assert.ok(s.metadata && typeof s.metadata === "object", `${what}.metadata should be an object`);
    assertTimestamp(s.created_at, `${what}.created_at`);
  }
}

/** {type, content, id} of each message, so server-added fields (additional_kwargs, ...) don't matter. */
const msgs = (values) => (values?.messages ?? []).map((m) => ({ type: m.type, content: m.content, id: m.id }));
const ids = (list) => list.map((x) => x.thread_id);
const cpId = (state) => state.checkpoint?.checkpoint_id;

/** A thread bound to the echo graph (needed for state updates: the graph defines the reducers). */
async function echoThread(metadata = {}) {
  return client.threads.create({ graphId: GRAPH_ID, metadata: { tag: uniqueTag("th"), ...metadata } });
}

async function update(threadId, values) {
  return client.threads.updateState(threadId, { values, asNode: await echoNode(client) });
}

/** Three threads created in order, sharing a fresh tag. */
async function createTrio() {
  const tag = uniqueTag("th");
  const made = [];
  for (const n of [1, 2, 3]) made.push(await client.threads.create({ metadata: { tag, n } }));
  return { tag, made };
}

describe("thread CRUD", () => {
  it("create with no arguments returns an idle thread with empty metadata", async () => {
    const t = await client.threads.create();
    assertThreadShape(t);
    assert.equal(t.status, "idle");
    assert.deepEqual(t.metadata, {});
  });

  it("create with metadata and get it back", async () => {
    const tag = uniqueTag("th");
    const t = await client.threads.create({ metadata: { tag, nested: { a: [1, 2] } } });
    assert.deepEqual(t.metadata, { tag, nested: { a: [1, 2] } });
    const got = await client.threads.get(t.thread_id);
    assertThreadShape(got);
    assert.equal(got.thread_id, t.thread_id);
    assert.equal(got.status, "idle");
    assert.deepEqual(got.metadata, t.metadata);
    assert.equal(got.created_at, t.created_at);
  });

  it("create with graphId puts graph_id into metadata", async () => {
    const tag = uniqueTag("th");
    const t = await client.threads.create({ graphId: GRAPH_ID, metadata: { tag } });
    assert.deepEqual(t.metadata, { tag, graph_id: GRAPH_ID });
    assert.equal((await client.threads.get(t.thread_id)).metadata.graph_id, GRAPH_ID);
  });

  it("create with an explicit thread_id uses it; if_exists=raise twice -> 409", async () => {
    const id = uuid4();
    const t = await client.threads.create({ threadId: id, ifExists: "raise", metadata: { tag: uniqueTag() } });
    assert.equal(t.thread_id, id);
    await rejectsWithStatus(client.threads.create({ threadId: id, ifExists: "raise" }), 409, "second create:");
    // if_exists defaults to raise
    await rejectsWithStatus(client.threads.create({ threadId: id }), 409, "create without if_exists:");
  });

  it("create with if_exists=do_nothing returns the existing thread unchanged", async () => {
    const id = uuid4();
    const tag = uniqueTag("th");
    const t = await client.threads.create({ threadId: id, metadata: { tag } });
    const again = await client.threads.create({ threadId: id, ifExists: "do_nothing", metadata: { other: 1 } });
    assert.equal(again.thread_id, id);
    assert.deepEqual(again.metadata, { tag });
    assert.equal(again.created_at, t.created_at);
  });

  it("create and update accept a ttl", async () => {
    const t = await client.threads.create({ metadata: { tag: uniqueTag() }, ttl: 60 });
    assertThreadShape(t);
    const u = await client.threads.update(t.thread_id, { metadata: { x: 1 }, ttl: { ttl: 30, strategy: "delete" } });
    assert.equal(u.metadata.x, 1);
  });

  it("create and update store a keep_latest ttl", async () => {
    const t = await client.threads.create({ ttl: { ttl: 60, strategy: "keep_latest" } });
    const got = await client.threads.get(t.thread_id, { include: ["ttl"] });
    assert.deepEqual(got.ttl, { ttl: 60, strategy: "keep_latest" });
    await rejectsWithStatus(client.threads.update(t.thread_id, { ttl: { ttl: 5, strategy: "archive" } }), 422);
  });

  it("prune keeps the newest checkpoint or deletes threads", async () => {
    const t = await client.threads.create({
      supersteps: ["a", "b", "c"].map((v) => ({ updates: [{ values: { v }, asNode: "n" }] })),
    });
    const kept = await client.threads.prune([t.thread_id], { strategy: "keep_latest" });
    assert.deepEqual(kept, { pruned_count: 1 });
    const history = await client.threads.getHistory(t.thread_id, { limit: 10 });
    assert.equal(history.length, 1);
    assert.equal(history[0].values.v, "c");
    assert.deepEqual(await client.threads.prune([t.thread_id]), { pruned_count: 1 });
    await rejectsWithStatus(client.threads.get(t.thread_id), 404);
  });

  it("patchState merges metadata into the newest checkpoint", async () => {
    const t = await client.threads.create({ supersteps: [{ updates: [{ values: { v: 1 }, asNode: "n" }] }] });
    await client.threads.patchState(t.thread_id, { reviewed: true });
    await client.threads.patchState({ configurable: { thread_id: t.thread_id } }, { by: "sdk" });
    const state = await client.threads.getState(t.thread_id);
    assert.equal(state.metadata.reviewed, true);
    assert.equal(state.metadata.by, "sdk");
    assert.deepEqual(state.values, { v: 1 });
  });

  it("update merges metadata", async () => {
    const tag = uniqueTag("th");
    const t = await client.threads.create({ metadata: { tag, a: 1, keep: "yes" } });
    const u = await client.threads.update(t.thread_id, { metadata: { a: 2, b: 3 } });
    assertThreadShape(u);
    assert.equal(u.thread_id, t.thread_id);
    assert.deepEqual(u.metadata, { tag, a: 2, b: 3, keep: "yes" });
    assert.ok(Date.parse(u.updated_at) >= Date.parse(t.updated_at), "updated_at should not go backwards");
    const got = await client.threads.get(t.thread_id);
    assert.deepEqual(got.metadata, { tag, a: 2, b: 3, keep: "yes" });
  });

  it("delete, then get -> 404", async () => {
    const t = await client.threads.create({ metadata: { tag: uniqueTag() } });
    const res = await client.threads.delete(t.thread_id);
    assert.equal(res, undefined, "delete should answer 204 (no body)");
    await rejectsWithStatus(client.threads.get(t.thread_id), 404, "get after delete:");
    await rejectsWithStatus(client.threads.getState(t.thread_id), 404, "getState after delete:");
    await rejectsWithStatus(client.threads.delete(t.thread_id), 404, "second delete:");
  });

  it("get / update / state / history of an unknown thread -> 404", async () => {
    const id = uuid4();
    await rejectsWithStatus(client.threads.get(id), 404, "get:");
    await rejectsWithStatus(client.threads.update(id, { metadata: { a: 1 } }), 404, "update:");
    await rejectsWithStatus(client.threads.getState(id), 404, "getState:");
    await rejectsWithStatus(client.threads.getHistory(id), 404, "getHistory:");
    await rejectsWithStatus(
      client.threads.updateState(id, { values: { messages: [human("x", "x1")] } }),
      404,
      "updateState:",
    );
  });

  it("copy of an unknown thread -> 404", async () => {
    // Agent Protocol says 404; the JS reference server answers 409 here (reference §2.3).
    await rejectsWithStatus(client.threads.copy(uuid4()), 404);
  });
});

describe("thread search and count", () => {
  it("search by metadata", async () => {
    const { tag, made } = await createTrio();
    const found = await client.threads.search({ metadata: { tag } });
    assert.deepEqual(ids(found).sort(), ids(made).sort());
    for (const t of found) assertThreadShape(t);
    const one = await client.threads.search({ metadata: { tag, n: 2 } });
    assert.deepEqual(ids(one), [made[1].thread_id]);
    assert.deepEqual(await client.threads.search({ metadata: { tag, n: 4 } }), []);
  });

  it("search by ids", async () => {
    const { made } = await createTrio();
    const found = await client.threads.search({ ids: [made[0].thread_id, made[2].thread_id] });
    assert.deepEqual(ids(found).sort(), [made[0].thread_id, made[2].thread_id].sort());
  });

  it("search by status", async () => {
    const { tag } = await createTrio();
    assert.equal((await client.threads.search({ metadata: { tag }, status: "idle" })).length, 3);
    assert.equal((await client.threads.search({ metadata: { tag }, status: "busy" })).length, 0);
    assert.equal((await client.threads.search({ metadata: { tag }, status: "interrupted" })).length, 0);
  });

  it("sortBy created_at asc / desc", async () => {
    const { tag, made } = await createTrio();
    const asc = await client.threads.search({ metadata: { tag }, sortBy: "created_at", sortOrder: "asc" });
    assert.deepEqual(ids(asc), ids(made));
    const desc = await client.threads.search({ metadata: { tag }, sortBy: "created_at", sortOrder: "desc" });
    assert.deepEqual(ids(desc), ids(made).reverse());
    // default order is created_at desc
    const dflt = await client.threads.search({ metadata: { tag } });
    assert.deepEqual(ids(dflt), ids(made).reverse());
  });

  it("limit and offset", async () => {
    const { tag, made } = await createTrio();
    const q = { metadata: { tag }, sortBy: "created_at", sortOrder: "asc" };
    assert.deepEqual(ids(await client.threads.search({ ...q, limit: 2 })), ids(made).slice(0, 2));
    assert.deepEqual(ids(await client.threads.search({ ...q, limit: 1, offset: 1 })), [made[1].thread_id]);
    assert.deepEqual(ids(await client.threads.search({ ...q, limit: 5, offset: 2 })), [made[2].thread_id]);
    assert.deepEqual(await client.threads.search({ ...q, limit: 5, offset: 3 }), []);
  });

  it("select returns only the requested fields", async () => {
    const { tag } = await createTrio();
    const found = await client.threads.search({ metadata: { tag }, select: ["thread_id", "status"] });
    assert.equal(found.length, 3);
    for (const t of found) {
      assert.deepEqual(keysOf(t), ["status", "thread_id"]);
      assert.equal(t.status, "idle");
    }
  });

  it("search and count by state values", async () => {
    const key = await plainStateKey();
    const mark = uniqueTag("v");
    const t1 = await echoThread();
    const t2 = await echoThread();
    await echoThread();
    await update(t1.thread_id, { [key]: mark });
    await update(t2.thread_id, { [key]: `${mark}-other` });
    const found = await client.threads.search({ values: { [key]: mark } });
    assert.deepEqual(ids(found), [t1.thread_id]);
    assert.equal(await client.threads.count({ values: { [key]: mark } }), 1);
  });

  it("count by metadata and status", async () => {
    const { tag } = await createTrio();
    assert.equal(await client.threads.count({ metadata: { tag } }), 3);
    assert.equal(await client.threads.count({ metadata: { tag, n: 1 } }), 1);
    assert.equal(await client.threads.count({ metadata: { tag }, status: "idle" }), 3);
    assert.equal(await client.threads.count({ metadata: { tag }, status: "busy" }), 0);
  });
});

describe("thread state", () => {
  it("getState of a new thread: empty values, no next, checkpoint shape", async () => {
    const t = await client.threads.create({ metadata: { tag: uniqueTag() } });
    const s = await client.threads.getState(t.thread_id);
    assertStateShape(s, "state", { fresh: true });
    const emptyValues =
      (Array.isArray(s.values) && s.values.length === 0) ||
      (s.values && typeof s.values === "object" && Object.keys(s.values).length === 0);
    assert.ok(emptyValues, `values of a new thread should be empty, got ${JSON.stringify(s.values)}`);
    assert.deepEqual(s.next, []);
    assert.deepEqual(s.tasks, []);
    if (s.checkpoint !== null) {
      assert.equal(typeof s.checkpoint, "object");
      if ("thread_id" in s.checkpoint) assert.equal(s.checkpoint.thread_id, t.thread_id);
      if ("checkpoint_ns" in s.checkpoint) assert.equal(s.checkpoint.checkpoint_ns, "");
    }
  });

  it("updateState returns a checkpoint; getState and the thread show the new values", async () => {
    const t = await echoThread();
    const res = await update(t.thread_id, { messages: [human("hi", "m1")] });
    assert.ok(res && typeof res === "object", "updateState should return JSON");
    assertCheckpointShape(res.checkpoint, t.thread_id, "updateState().checkpoint");

    const s = await client.threads.getState(t.thread_id);
    assertStateShape(s);
    assert.deepEqual(msgs(s.values), [{ type: "human", content: "hi", id: "m1" }]);
    assertCheckpointShape(s.checkpoint, t.thread_id, "state.checkpoint");
    assert.equal(cpId(s), res.checkpoint.checkpoint_id, "getState should be at the checkpoint updateState made");
    assert.equal(s.metadata?.source, "update", "checkpoint metadata.source of a state update");
    assertTimestamp(s.created_at, "state.created_at");

    const got = await client.threads.get(t.thread_id);
    assert.deepEqual(msgs(got.values), [{ type: "human", content: "hi", id: "m1" }], "thread.values after update");
    assert.equal(got.status, "idle", "a state update does not make the thread busy");

    const withSubgraphs = await client.threads.getState(t.thread_id, undefined, { subgraphs: true });
    assert.equal(cpId(withSubgraphs), res.checkpoint.checkpoint_id, "getState accepts ?subgraphs=true");
  });

  it("getHistory is newest first and contains the updates", async () => {
    const t = await echoThread();
    const r1 = await update(t.thread_id, { messages: [human("one", "m1")] });
    const r2 = await update(t.thread_id, { messages: [human("two", "m2")] });
    const c1 = r1.checkpoint.checkpoint_id;
    const c2 = r2.checkpoint.checkpoint_id;
    assert.notEqual(c1, c2);

    const history = await client.threads.getHistory(t.thread_id);
    assert.ok(Array.isArray(history));
    assert.ok(history.length >= 2, `expected at least 2 history entries, got ${history.length}`);
    for (const [i, h] of history.entries()) {
      assertStateShape(h, `history[${i}]`);
      assertCheckpointShape(h.checkpoint, t.thread_id, `history[${i}].checkpoint`);
    }
    assert.equal(cpId(history[0]), c2, "history[0] should be the newest checkpoint");
    assert.equal(cpId(history[1]), c1, "history[1] should be the previous checkpoint");
    assert.deepEqual(
      msgs(history[0].values).map((m) => m.id),
      ["m1", "m2"],
    );
    assert.deepEqual(
      msgs(history[1].values).map((m) => m.id),
      ["m1"],
    );
    for (let i = 1; i < history.length; i++) {
      const a = Date.parse(history[i - 1].created_at);
      const b = Date.parse(history[i].created_at);
      assert.ok(a >= b, "history should be ordered newest first by created_at");
    }
    assert.equal(history[0].parent_checkpoint?.checkpoint_id, c1, "parent_checkpoint of the newest entry");
  });

  it("getHistory honours limit and before (RunnableConfig form)", async () => {
    const t = await echoThread();
    const c1 = (await update(t.thread_id, { messages: [human("one", "m1")] })).checkpoint.checkpoint_id;
    const c2 = (await update(t.thread_id, { messages: [human("two", "m2")] })).checkpoint.checkpoint_id;
    const c3 = (await update(t.thread_id, { messages: [human("three", "m3")] })).checkpoint.checkpoint_id;

    const last = await client.threads.getHistory(t.thread_id, { limit: 1 });
    assert.deepEqual(last.map(cpId), [c3]);
    const two = await client.threads.getHistory(t.thread_id, { limit: 2 });
    assert.deepEqual(two.map(cpId), [c3, c2]);

    const beforeC3 = await client.threads.getHistory(t.thread_id, {
      limit: 1,
      before: { configurable: { checkpoint_id: c3 } },
    });
    assert.deepEqual(beforeC3.map(cpId), [c2]);
    const beforeC2 = await client.threads.getHistory(t.thread_id, {
      limit: 10,
      before: { configurable: { checkpoint_id: c2 } },
    });
    assert.equal(cpId(beforeC2[0]), c1);
    assert.ok(!beforeC2.map(cpId).includes(c2), "before is exclusive");
    assert.ok(!beforeC2.map(cpId).includes(c3));
  });

  it("getHistory accepts before as a bare checkpoint id or a checkpoint object", async () => {
    const t = await echoThread();
    const c1 = (await update(t.thread_id, { messages: [human("one", "m1")] })).checkpoint.checkpoint_id;
    const c2 = (await update(t.thread_id, { messages: [human("two", "m2")] })).checkpoint.checkpoint_id;
    const asString = await client.threads.getHistory(t.thread_id, { limit: 1, before: c2 });
    assert.deepEqual(asString.map(cpId), [c1]);
    const asObject = await client.threads.getHistory(t.thread_id, { limit: 1, before: { checkpoint_id: c2 } });
    assert.deepEqual(asObject.map(cpId), [c1]);
  });

  it("getState at a checkpoint: string id and {checkpoint} object forms", async () => {
    const t = await echoThread();
    const r1 = await update(t.thread_id, { messages: [human("one", "m1")] });
    await update(t.thread_id, { messages: [human("two", "m2")] });
    const c1 = r1.checkpoint.checkpoint_id;

    const byString = await client.threads.getState(t.thread_id, c1);
    assertStateShape(byString);
    assert.equal(cpId(byString), c1);
    assert.deepEqual(
      msgs(byString.values).map((m) => m.id),
      ["m1"],
    );

    // POST /threads/{id}/state/checkpoint with the checkpoint object updateState returned
    const byObject = await client.threads.getState(t.thread_id, r1.checkpoint);
    assert.equal(cpId(byObject), c1);
    assert.deepEqual(
      msgs(byObject.values).map((m) => m.id),
      ["m1"],
    );

    const byMinimal = await client.threads.getState(t.thread_id, { checkpoint_id: c1 });
    assert.equal(cpId(byMinimal), c1);

    const latest = await client.threads.getState(t.thread_id);
    assert.deepEqual(
      msgs(latest.values).map((m) => m.id),
      ["m1", "m2"],
    );
  });

  it("messages reducer: different ids append, same id replaces in place", async () => {
    const t = await echoThread();
    await update(t.thread_id, { messages: [human("first", "m1")] });
    await update(t.thread_id, { messages: [human("second", "m2")] });
    let s = await client.threads.getState(t.thread_id);
    assert.deepEqual(msgs(s.values), [
      { type: "human", content: "first", id: "m1" },
      { type: "human", content: "second", id: "m2" },
    ]);

    await update(t.thread_id, { messages: [human("first, edited", "m1")] });
    s = await client.threads.getState(t.thread_id);
    assert.deepEqual(msgs(s.values), [
      { type: "human", content: "first, edited", id: "m1" },
      { type: "human", content: "second", id: "m2" },
    ]);
  });

  it("a non-messages state key is overwritten, not merged", async () => {
    const key = await plainStateKey();
    const t = await echoThread();
    await update(t.thread_id, { messages: [human("hi", "m1")], [key]: "first" });
    await update(t.thread_id, { [key]: "second" });
    const s = await client.threads.getState(t.thread_id);
    assert.equal(s.values[key], "second");
    assert.deepEqual(
      msgs(s.values).map((m) => m.id),
      ["m1"],
      "messages untouched by an update that omits them",
    );
  });

  it("create with supersteps applies the updates in order", async () => {
    const node = await echoNode(client);
    const tag = uniqueTag("th");
    const t = await client.threads.create({
      graphId: GRAPH_ID,
      metadata: { tag },
      supersteps: [
        { updates: [{ values: { messages: [human("s1", "m1")] }, asNode: node }] },
        { updates: [{ values: { messages: [human("s2", "m2")] }, asNode: node }] },
      ],
    });
    assertThreadShape(t);
    assert.equal(t.metadata.tag, tag);
    const s = await client.threads.getState(t.thread_id);
    assert.deepEqual(msgs(s.values), [
      { type: "human", content: "s1", id: "m1" },
      { type: "human", content: "s2", id: "m2" },
    ]);
    const history = await client.threads.getHistory(t.thread_id);
    assert.ok(history.length >= 2, `each superstep should leave a checkpoint (got ${history.length})`);
  });
});

describe("thread copy", () => {
  it("copy makes a new thread with the same values, metadata and history", async () => {
    const t = await echoThread({ origin: "copy-test" });
    await update(t.thread_id, { messages: [human("one", "m1")] });
    await update(t.thread_id, { messages: [human("two", "m2")] });

    const c = await client.threads.copy(t.thread_id);
    assertThreadShape(c, "copy");
    assert.notEqual(c.thread_id, t.thread_id);
    assert.equal(c.status, "idle");
    for (const [k, v] of Object.entries(t.metadata)) {
      assert.deepEqual(c.metadata[k], v, `copy should keep metadata.${k}`);
    }

    const [so, sc] = await Promise.all([client.threads.getState(t.thread_id), client.threads.getState(c.thread_id)]);
    assert.deepEqual(sc.values, so.values, "copied values");
    if (sc.checkpoint?.thread_id !== undefined) assert.equal(sc.checkpoint.thread_id, c.thread_id);

    const [ho, hc] = await Promise.all([
      client.threads.getHistory(t.thread_id),
      client.threads.getHistory(c.thread_id),
    ]);
    assert.equal(hc.length, ho.length, "copied history length");
    assert.deepEqual(
      hc.map((h) => msgs(h.values)),
      ho.map((h) => msgs(h.values)),
    );

    // the copy is independent of the original
    await update(c.thread_id, { messages: [human("three", "m3")] });
    const after = await client.threads.getState(t.thread_id);
    assert.deepEqual(
      msgs(after.values).map((m) => m.id),
      ["m1", "m2"],
    );
    const copyAfter = await client.threads.getState(c.thread_id);
    assert.deepEqual(
      msgs(copyAfter.values).map((m) => m.id),
      ["m1", "m2", "m3"],
    );
  });
});

let plainKeyCache;
/**
 * A state key of the echo graph with plain last-value semantics: the first
 * property of the state schema other than `messages`, else "note".
 */
async function plainStateKey() {
  if (plainKeyCache) return plainKeyCache;
  let key = "note";
  try {
    const schemas = await client.assistants.getSchemas(GRAPH_ID);
    const props = Object.keys(schemas?.state_schema?.properties ?? {}).filter(
      (k) => k !== "messages" && k !== "async_tasks",
    );
    if (props.length) key = props[0];
  } catch {
    // fall back to "note"
  }
  plainKeyCache = key;
  return key;
}

describe("RemoteGraph state of a paused thread", () => {
  it("getState and getStateHistory map every task, interrupts included", async () => {
    const t = await echoThread();
    await client.runs.wait(t.thread_id, GRAPH_ID, { input: { messages: [human("wait", "p1")] }, interruptBefore: "*" });
    const graph = new RemoteGraph({ graphId: GRAPH_ID, client });
    const config = { configurable: { thread_id: t.thread_id } };
    const snap = await graph.getState(config);
    assert.equal(snap.next.length, 1, `paused state next = ${JSON.stringify(snap.next)}`);
    assert.equal(snap.tasks.length, 1);
    assert.equal(snap.tasks[0].name, snap.next[0]);
    assert.deepEqual(snap.tasks[0].interrupts, []);
    const history = [];
    for await (const s of graph.getStateHistory(config)) history.push(s);
    assert.ok(history.length >= 1, "history should not be empty");
    assert.deepEqual(history[0].tasks.map((task) => task.name), snap.next);
  });
});
