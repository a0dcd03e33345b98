// Assistants API through the real JS SDK (@langchain/langgraph-sdk).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  GRAPH_ID,
  NAMESPACE_GRAPH,
  assertTimestamp,
  assertUuid,
  keysOf,
  makeClient,
  rejectsWithStatus,
  uniqueTag,
  uuid4,
  uuid5,
} from "./lib.mjs";

const client = makeClient();
const SYSTEM_ID = uuid5(NAMESPACE_GRAPH, GRAPH_ID);

function assertAssistantShape(a, what = "assistant") {
  assert.equal(typeof a, "object", `${what} should be an object`);
  assertUuid(a.assistant_id, `${what}.assistant_id`);
  assert.equal(typeof a.graph_id, "string", `${what}.graph_id`);
  assert.equal(typeof a.config, "object", `${what}.config should be an object`);
  assert.ok(a.config !== null, `${what}.config should not be null`);
  assert.equal(typeof a.metadata, "object", `${what}.metadata should be an object`);
  assert.ok(a.metadata !== null, `${what}.metadata should not be null`);
  assert.equal(typeof a.version, "number", `${what}.version should be a number`);
  assert.equal(typeof a.name, "string", `${what}.name should be a string`);
  assertTimestamp(a.created_at, `${what}.created_at`);
  assertTimestamp(a.updated_at, `${what}.updated_at`);
}

/** Creates three assistants tagged with a fresh tag, sequentially (created_at order = alpha, beta, gamma). */
async function createTrio() {
  const tag = uniqueTag("a");
  const made = [];
  for (const suffix of ["beta", "alpha", "gamma"]) {
    made.push(
      await client.assistants.create({
        graphId: GRAPH_ID,
        name: `${tag}-${suffix}`,
        metadata: { tag, suffix },
      }),
    );
  }
  return { tag, made };
}

describe("system assistant", () => {
  it("the uuid5 helper matches the documented production example", () => {
    // reference §3.8: graph "chat" <-> assistant eb6db400-e3c8-5d06-a834-015cb89efe69
    assert.equal(uuid5(NAMESPACE_GRAPH, "chat"), "eb6db400-e3c8-5d06-a834-015cb89efe69");
  });

  it("search by graph_id finds the system assistant with id uuid5(NAMESPACE_GRAPH, graph_id)", async () => {
    const found = await client.assistants.search({ graphId: GRAPH_ID, limit: 1000 });
    assert.ok(Array.isArray(found), "search should return an array");
    for (const a of found) assert.equal(a.graph_id, GRAPH_ID, "search by graph_id returned another graph");
    const sys = found.find((a) => a.assistant_id === SYSTEM_ID);
    assert.ok(sys, `no assistant ${SYSTEM_ID} among ${JSON.stringify(found.map((a) => a.assistant_id))}`);
    assertAssistantShape(sys, "system assistant");
    assert.equal(sys.name, GRAPH_ID);
    assert.equal(sys.metadata.created_by, "system");
  });

  it("search with metadata created_by=system and graph_id returns exactly the system assistant", async () => {
    const found = await client.assistants.search({ graphId: GRAPH_ID, metadata: { created_by: "system" } });
    assert.deepEqual(
      found.map((a) => a.assistant_id),
      [SYSTEM_ID],
    );
  });

  it("get by UUID", async () => {
    const a = await client.assistants.get(SYSTEM_ID);
    assertAssistantShape(a);
    assert.equal(a.assistant_id, SYSTEM_ID);
    assert.equal(a.graph_id, GRAPH_ID);
    assert.equal(a.name, GRAPH_ID);
    assert.equal(a.metadata.created_by, "system");
  });

  it("get by graph name resolves to the system assistant", async () => {
    const a = await client.assistants.get(GRAPH_ID);
    assertAssistantShape(a);
    assert.equal(a.assistant_id, SYSTEM_ID);
    assert.equal(a.graph_id, GRAPH_ID);
  });

  it("getGraph returns nodes and edges that reference them", async () => {
    for (const id of [GRAPH_ID, SYSTEM_ID]) {
      const g = await client.assistants.getGraph(id);
      assert.ok(Array.isArray(g.nodes), "nodes should be an array");
      assert.ok(Array.isArray(g.edges), "edges should be an array");
      assert.ok(g.nodes.length > 0, "graph should have nodes");
      assert.ok(g.edges.length > 0, "graph should have edges");
      const ids = new Set(g.nodes.map((n) => String(n.id)));
      for (const n of g.nodes) assert.ok(n.id !== undefined && n.id !== null, "node without id");
      for (const e of g.edges) {
        assert.ok(ids.has(String(e.source)), `edge source ${e.source} is not a node`);
        assert.ok(ids.has(String(e.target)), `edge target ${e.target} is not a node`);
      }
    }
  });

  it("getGraph accepts xray", async () => {
    const g = await client.assistants.getGraph(GRAPH_ID, { xray: true });
    assert.ok(Array.isArray(g.nodes) && g.nodes.length > 0);
    const g1 = await client.assistants.getGraph(GRAPH_ID, { xray: 1 });
    assert.ok(Array.isArray(g1.nodes) && g1.nodes.length > 0);
  });

  it("getSchemas returns graph_id and JSON-schema objects", async () => {
    const s = await client.assistants.getSchemas(GRAPH_ID);
    assert.equal(s.graph_id, GRAPH_ID);
    assert.ok(s.input_schema && typeof s.input_schema === "object", "input_schema should be an object");
    assert.ok(s.state_schema && typeof s.state_schema === "object", "state_schema should be an object");
    assert.ok("config_schema" in s, "config_schema key should be present");
    const byUuid = await client.assistants.getSchemas(SYSTEM_ID);
    assert.equal(byUuid.graph_id, GRAPH_ID);
  });

  it("getSubgraphs returns an object (map of namespace -> schema)", async () => {
    const sg = await client.assistants.getSubgraphs(GRAPH_ID);
    assert.equal(typeof sg, "object");
    assert.ok(sg !== null && !Array.isArray(sg), `expected a plain object, got ${JSON.stringify(sg)}`);
    const rec = await client.assistants.getSubgraphs(GRAPH_ID, { recurse: true });
    assert.ok(rec !== null && typeof rec === "object" && !Array.isArray(rec));
  });
});

describe("assistant lifecycle", () => {
  it("create with metadata, name, description, config and context", async () => {
    const tag = uniqueTag("a");
    const a = await client.assistants.create({
      graphId: GRAPH_ID,
      name: `asst-${tag}`,
      description: "made by the SDK suite",
      metadata: { tag, kind: "lifecycle" },
      config: { configurable: { foo: "bar" }, tags: ["sdk"] },
      context: { model: "scripted", temperature: 0 },
    });
    assertAssistantShape(a);
    assert.notEqual(a.assistant_id, SYSTEM_ID);
    assert.equal(a.graph_id, GRAPH_ID);
    assert.equal(a.name, `asst-${tag}`);
    assert.equal(a.description, "made by the SDK suite");
    assert.deepEqual(a.metadata, { tag, kind: "lifecycle" });
    assert.equal(a.config.configurable?.foo, "bar");
    assert.deepEqual(a.config.tags, ["sdk"]);
    assert.deepEqual(a.context, { model: "scripted", temperature: 0 });
    assert.equal(a.version, 1);

    const got = await client.assistants.get(a.assistant_id);
    assert.equal(got.assistant_id, a.assistant_id);
    assert.equal(got.name, a.name);
    assert.deepEqual(got.metadata, a.metadata);
    assert.deepEqual(got.context, a.context);
    assert.equal(got.config.configurable?.foo, "bar");
  });

  it("create with an explicit assistant_id uses it", async () => {
    const id = uuid4();
    const a = await client.assistants.create({ graphId: GRAPH_ID, assistantId: id, metadata: { tag: uniqueTag() } });
    assert.equal(a.assistant_id, id);
    assert.equal((await client.assistants.get(id)).assistant_id, id);
  });

  it("update makes a new version, merges metadata and keeps unspecified fields", async () => {
    const tag = uniqueTag("a");
    const a = await client.assistants.create({
      graphId: GRAPH_ID,
      name: `upd-${tag}`,
      metadata: { tag, k: "v", keep: 1 },
      config: { configurable: { foo: "bar" } },
    });
    const u = await client.assistants.update(a.assistant_id, { metadata: { k: "v2", extra: true } });
    assertAssistantShape(u);
    assert.equal(u.assistant_id, a.assistant_id);
    assert.equal(u.version, 2);
    assert.deepEqual(u.metadata, { tag, k: "v2", keep: 1, extra: true });
    assert.equal(u.name, `upd-${tag}`, "name must survive a metadata-only update");
    assert.equal(u.graph_id, GRAPH_ID);
    assert.ok(Date.parse(u.updated_at) >= Date.parse(a.updated_at), "updated_at should not go backwards");

    const u3 = await client.assistants.update(a.assistant_id, {
      name: `renamed-${tag}`,
      config: { configurable: { foo: "baz" } },
    });
    assert.equal(u3.version, 3);
    assert.equal(u3.name, `renamed-${tag}`);
    assert.equal(u3.config.configurable?.foo, "baz");

    const got = await client.assistants.get(a.assistant_id);
    assert.equal(got.version, 3);
    assert.equal(got.name, `renamed-${tag}`);
  });

  it("getVersions lists versions newest first; setLatest switches the active version", async () => {
    const tag = uniqueTag("a");
    const a = await client.assistants.create({
      graphId: GRAPH_ID,
      name: `ver-${tag}`,
      metadata: { tag, step: 1 },
      config: { configurable: { v: 1 } },
    });
    await client.assistants.update(a.assistant_id, { metadata: { step: 2 }, config: { configurable: { v: 2 } } });
    await client.assistants.update(a.assistant_id, { metadata: { step: 3 }, config: { configurable: { v: 3 } } });

    const versions = await client.assistants.getVersions(a.assistant_id);
    assert.ok(Array.isArray(versions));
    assert.deepEqual(
      versions.map((v) => v.version),
      [3, 2, 1],
      "versions should be newest first",
    );
    for (const v of versions) {
      assert.equal(v.assistant_id, a.assistant_id);
      assert.equal(v.graph_id, GRAPH_ID);
      assertTimestamp(v.created_at, "version.created_at");
    }
    assert.deepEqual(versions[2].metadata, { tag, step: 1 });
    assert.equal(versions[2].config.configurable?.v, 1);
    assert.equal(versions[0].metadata.step, 3);

    const paged = await client.assistants.getVersions(a.assistant_id, { limit: 1, offset: 1 });
    assert.deepEqual(
      paged.map((v) => v.version),
      [2],
    );

    const latest = await client.assistants.setLatest(a.assistant_id, 1);
    assert.equal(latest.assistant_id, a.assistant_id);
    assert.equal(latest.version, 1);
    assert.equal(latest.config.configurable?.v, 1);
    assert.equal(latest.metadata.step, 1);

    const got = await client.assistants.get(a.assistant_id);
    assert.equal(got.version, 1);
    assert.equal(got.config.configurable?.v, 1);

    await rejectsWithStatus(client.assistants.setLatest(a.assistant_id, 99), 404, "setLatest to a missing version:");
  });

  it("delete removes the assistant (then get -> 404)", async () => {
    const a = await client.assistants.create({ graphId: GRAPH_ID, metadata: { tag: uniqueTag() } });
    await client.assistants.delete(a.assistant_id);
    await rejectsWithStatus(client.assistants.get(a.assistant_id), 404, "get after delete:");
    await rejectsWithStatus(client.assistants.delete(a.assistant_id), 404, "second delete:");
  });
});

describe("assistant search and count", () => {
  it("metadata filter returns exactly the tagged assistants", async () => {
    const { tag, made } = await createTrio();
    const found = await client.assistants.search({ metadata: { tag } });
    assert.deepEqual(found.map((a) => a.assistant_id).sort(), made.map((a) => a.assistant_id).sort());
    for (const a of found) assertAssistantShape(a);

    const one = await client.assistants.search({ metadata: { tag, suffix: "gamma" } });
    assert.deepEqual(
      one.map((a) => a.name),
      [`${tag}-gamma`],
    );
  });

  it("graph_id + metadata filters combine", async () => {
    const { tag } = await createTrio();
    assert.equal((await client.assistants.search({ graphId: GRAPH_ID, metadata: { tag } })).length, 3);
    assert.equal((await client.assistants.search({ graphId: "no-such-graph", metadata: { tag } })).length, 0);
  });

  it("name filter is a substring match", async () => {
    const { tag } = await createTrio();
    const byPrefix = await client.assistants.search({ name: tag });
    assert.equal(byPrefix.length, 3);
    const bySub = await client.assistants.search({ name: `${tag.slice(2)}-alp` });
    assert.deepEqual(
      bySub.map((a) => a.name),
      [`${tag}-alpha`],
    );
  });

  it("name filter is case-insensitive", async () => {
    const { tag } = await createTrio();
    const found = await client.assistants.search({ name: `${tag}-BETA`.toUpperCase() });
    assert.deepEqual(
      found.map((a) => a.name),
      [`${tag}-beta`],
    );
  });

  it("sortBy name / created_at with sortOrder", async () => {
    const { tag, made } = await createTrio(); // created in order beta, alpha, gamma
    const nameAsc = await client.assistants.search({ metadata: { tag }, sortBy: "name", sortOrder: "asc" });
    assert.deepEqual(
      nameAsc.map((a) => a.name),
      [`${tag}-alpha`, `${tag}-beta`, `${tag}-gamma`],
    );
    const nameDesc = await client.assistants.search({ metadata: { tag }, sortBy: "name", sortOrder: "desc" });
    assert.deepEqual(
      nameDesc.map((a) => a.name),
      [`${tag}-gamma`, `${tag}-beta`, `${tag}-alpha`],
    );
    const createdAsc = await client.assistants.search({ metadata: { tag }, sortBy: "created_at", sortOrder: "asc" });
    assert.deepEqual(
      createdAsc.map((a) => a.assistant_id),
      made.map((a) => a.assistant_id),
    );
    const createdDesc = await client.assistants.search({ metadata: { tag }, sortBy: "created_at", sortOrder: "desc" });
    assert.deepEqual(
      createdDesc.map((a) => a.assistant_id),
      made.map((a) => a.assistant_id).reverse(),
    );
  });

  it("limit and offset page through results", async () => {
    const { tag } = await createTrio();
    const q = { metadata: { tag }, sortBy: "name", sortOrder: "asc" };
    const p1 = await client.assistants.search({ ...q, limit: 2, offset: 0 });
    const p2 = await client.assistants.search({ ...q, limit: 2, offset: 2 });
    const mid = await client.assistants.search({ ...q, limit: 1, offset: 1 });
    const past = await client.assistants.search({ ...q, limit: 2, offset: 3 });
    assert.deepEqual(
      p1.map((a) => a.name),
      [`${tag}-alpha`, `${tag}-beta`],
    );
    assert.deepEqual(
      p2.map((a) => a.name),
      [`${tag}-gamma`],
    );
    assert.deepEqual(
      mid.map((a) => a.name),
      [`${tag}-beta`],
    );
    assert.deepEqual(past, []);
  });

  it("includePagination reads X-Pagination-Next when more results remain", async () => {
    const { tag } = await createTrio();
    // created in order beta, alpha, gamma
    const q = { metadata: { tag }, sortBy: "created_at", sortOrder: "asc", includePagination: true };
    const first = await client.assistants.search({ ...q, limit: 2 });
    assert.deepEqual(
      first.assistants.map((a) => a.name),
      [`${tag}-beta`, `${tag}-alpha`],
    );
    assert.ok(first.next !== null, "X-Pagination-Next should be set when a full page leaves more results");
    assert.equal(Number(first.next), 2, `X-Pagination-Next should be the next offset, got ${first.next}`);
    const rest = await client.assistants.search({ ...q, limit: 2, offset: Number(first.next) });
    assert.deepEqual(
      rest.assistants.map((a) => a.name),
      [`${tag}-gamma`],
    );
    assert.equal(rest.next, null, "no X-Pagination-Next on the last, partial page");
    const all = await client.assistants.search({ ...q, limit: 10 });
    assert.equal(all.assistants.length, 3);
    assert.equal(all.next, null);
  });

  it("select returns only the requested fields", async () => {
    const { tag } = await createTrio();
    const found = await client.assistants.search({ metadata: { tag }, select: ["assistant_id", "name"] });
    assert.equal(found.length, 3);
    for (const a of found) {
      assert.deepEqual(keysOf(a), ["assistant_id", "name"]);
      assertUuid(a.assistant_id);
    }
  });

  it("count honours metadata, graph_id and name filters", async () => {
    const { tag } = await createTrio();
    assert.equal(await client.assistants.count({ metadata: { tag } }), 3);
    assert.equal(await client.assistants.count({ metadata: { tag, suffix: "alpha" } }), 1);
    assert.equal(await client.assistants.count({ graphId: GRAPH_ID, metadata: { tag } }), 3);
    assert.equal(await client.assistants.count({ name: `${tag}-gam` }), 1);
    const total = await client.assistants.count({ graphId: GRAPH_ID });
    assert.equal(typeof total, "number");
    assert.ok(total >= 4, `count by graph_id should include the system assistant and the trio (got ${total})`);
  });
});

describe("assistant errors", () => {
  it("get of an unknown UUID rejects with 404", async () => {
    await rejectsWithStatus(client.assistants.get(uuid4()), 404);
  });

  it("get of an unknown graph name rejects with 404", async () => {
    await rejectsWithStatus(client.assistants.get(`no-such-graph-${uniqueTag()}`), 404);
  });

  it("create with an unknown graph_id rejects with 404", async () => {
    await rejectsWithStatus(client.assistants.create({ graphId: `no-such-graph-${uniqueTag()}` }), 404);
  });

  it("create with if_exists=raise on an existing id rejects with 409; do_nothing returns the existing one", async () => {
    const tag = uniqueTag("a");
    const a = await client.assistants.create({ graphId: GRAPH_ID, name: `dup-${tag}`, metadata: { tag } });
    await rejectsWithStatus(
      client.assistants.create({ graphId: GRAPH_ID, assistantId: a.assistant_id, ifExists: "raise" }),
      409,
    );
    // default if_exists is "raise" too
    await rejectsWithStatus(client.assistants.create({ graphId: GRAPH_ID, assistantId: a.assistant_id }), 409);
    const same = await client.assistants.create({
      graphId: GRAPH_ID,
      assistantId: a.assistant_id,
      ifExists: "do_nothing",
      name: "ignored",
      metadata: { ignored: true },
    });
    assert.equal(same.assistant_id, a.assistant_id);
    assert.equal(same.name, `dup-${tag}`);
    assert.deepEqual(same.metadata, { tag });
    assert.equal(same.version, 1);
  });

  it("update / getVersions / delete of an unknown assistant reject with 404", async () => {
    const id = uuid4();
    await rejectsWithStatus(client.assistants.update(id, { metadata: { x: 1 } }), 404, "update:");
    await rejectsWithStatus(client.assistants.getVersions(id), 404, "getVersions:");
    await rejectsWithStatus(client.assistants.delete(id), 404, "delete:");
  });
});
