// Long-term store (/store/*) through the real JS SDK (@langchain/langgraph-sdk).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { assertTimestamp, makeClient, raw, uniqueTag } from "./lib.mjs";

const client = makeClient();

const sortNs = (list) => list.map((ns) => ns.join("/")).sort();
const itemKeys = (items) => items.map((i) => `${i.namespace.join("/")}:${i.key}`).sort();

describe("store items", () => {
  it("putItem then getItem returns the item with snake_case timestamps mapped to camelCase", async () => {
    const ns = ["sdk", uniqueTag("s"), "users"];
    const value = { name: "Ada", langs: ["en", "fr"], nested: { n: 1, ok: true } };
    const put = await client.store.putItem(ns, "user-1", value);
    assert.equal(put, undefined, "PUT /store/items should answer 204 (no body)");

    const item = await client.store.getItem(ns, "user-1");
    assert.ok(item, "getItem should return the item");
    assert.deepEqual(item.namespace, ns);
    assert.equal(item.key, "user-1");
    assert.deepEqual(item.value, value);
    assertTimestamp(item.created_at, "created_at (wire)");
    assertTimestamp(item.updated_at, "updated_at (wire)");
    assert.equal(item.createdAt, item.created_at);
    assert.equal(item.updatedAt, item.updated_at);
  });

  it("getItem of a missing key or namespace returns null", async () => {
    const ns = ["sdk", uniqueTag("s")];
    assert.equal(await client.store.getItem(ns, "nope"), null);
    await client.store.putItem(ns, "present", { x: 1 });
    assert.equal(await client.store.getItem(ns, "absent"), null);
    assert.equal(await client.store.getItem([...ns, "deeper"], "present"), null);
  });

  it("putItem on an existing key overwrites the value and keeps created_at", async () => {
    const ns = ["sdk", uniqueTag("s")];
    await client.store.putItem(ns, "k", { v: 1, gone: true });
    const first = await client.store.getItem(ns, "k");
    await client.store.putItem(ns, "k", { v: 2 });
    const second = await client.store.getItem(ns, "k");
    assert.deepEqual(second.value, { v: 2 }, "put replaces the whole value");
    assert.equal(second.created_at, first.created_at, "created_at survives an overwrite");
    assert.ok(Date.parse(second.updated_at) >= Date.parse(first.updated_at), "updated_at should not go backwards");
  });

  it("deleteItem removes the item", async () => {
    const ns = ["sdk", uniqueTag("s")];
    await client.store.putItem(ns, "k", { v: 1 });
    const res = await client.store.deleteItem(ns, "k");
    assert.equal(res, undefined, "DELETE /store/items should answer 204 (no body)");
    assert.equal(await client.store.getItem(ns, "k"), null);
  });

  it("putItem with a ttl (minutes) and index options is accepted; getItem with refreshTtl works", async () => {
    const ns = ["sdk", uniqueTag("s")];
    await client.store.putItem(ns, "ttl", { v: 1 }, { ttl: 5 });
    await client.store.putItem(ns, "noidx", { v: 2 }, { index: false, ttl: null });
    await client.store.putItem(ns, "idx", { text: "hello" }, { index: ["text"] });
    assert.deepEqual((await client.store.getItem(ns, "ttl", { refreshTtl: true }))?.value, { v: 1 });
    assert.deepEqual((await client.store.getItem(ns, "noidx"))?.value, { v: 2 });
    assert.deepEqual((await client.store.getItem(ns, "idx"))?.value, { text: "hello" });
  });

  it("a single-label namespace works", async () => {
    const ns = [uniqueTag("s")];
    await client.store.putItem(ns, "k", { one: 1 });
    const item = await client.store.getItem(ns, "k");
    assert.deepEqual(item?.namespace, ns);
    assert.deepEqual(item?.value, { one: 1 });
  });
});

describe("store search", () => {
  async function seed() {
    const tag = uniqueTag("s");
    const a = ["sdk", tag, "a"];
    const b = ["sdk", tag, "b"];
    await client.store.putItem(a, "1", { color: "red", size: 1 });
    await client.store.putItem(a, "2", { color: "blue", size: 2 });
    await client.store.putItem(b, "3", { color: "red", size: 3 });
    await client.store.putItem(b, "4", { color: "green", size: 4 });
    await client.store.putItem(["sdk", `${tag}x`, "a"], "5", { color: "red" }); // shares a string prefix only
    return { tag, a, b };
  }

  it("searchItems by namespace prefix returns every item below it", async () => {
    const { tag, a } = await seed();
    const res = await client.store.searchItems(["sdk", tag]);
    assert.ok(Array.isArray(res.items));
    assert.deepEqual(itemKeys(res.items), [`sdk/${tag}/a:1`, `sdk/${tag}/a:2`, `sdk/${tag}/b:3`, `sdk/${tag}/b:4`]);
    for (const item of res.items) {
      assertTimestamp(item.created_at);
      assertTimestamp(item.updated_at);
      assert.equal(item.createdAt, item.created_at);
      assert.equal(typeof item.value, "object");
    }
    const onlyA = await client.store.searchItems(a);
    assert.deepEqual(itemKeys(onlyA.items), [`sdk/${tag}/a:1`, `sdk/${tag}/a:2`]);
  });

  it("searchItems filters on value fields", async () => {
    const { tag } = await seed();
    const red = await client.store.searchItems(["sdk", tag], { filter: { color: "red" } });
    assert.deepEqual(itemKeys(red.items), [`sdk/${tag}/a:1`, `sdk/${tag}/b:3`]);
    for (const item of red.items) assert.equal(item.value.color, "red");
    const none = await client.store.searchItems(["sdk", tag], { filter: { color: "purple" } });
    assert.deepEqual(none.items, []);
    const two = await client.store.searchItems(["sdk", tag], { filter: { color: "red", size: 3 } });
    assert.deepEqual(itemKeys(two.items), [`sdk/${tag}/b:3`]);
  });

  it("searchItems limit / offset page without overlap", async () => {
    const { tag } = await seed();
    const p1 = await client.store.searchItems(["sdk", tag], { limit: 2, offset: 0 });
    const p2 = await client.store.searchItems(["sdk", tag], { limit: 2, offset: 2 });
    const p3 = await client.store.searchItems(["sdk", tag], { limit: 2, offset: 4 });
    assert.equal(p1.items.length, 2);
    assert.equal(p2.items.length, 2);
    assert.equal(p3.items.length, 0);
    assert.deepEqual(itemKeys([...p1.items, ...p2.items]), [
      `sdk/${tag}/a:1`,
      `sdk/${tag}/a:2`,
      `sdk/${tag}/b:3`,
      `sdk/${tag}/b:4`,
    ]);
    const one = await client.store.searchItems(["sdk", tag], { limit: 1 });
    assert.equal(one.items.length, 1);
  });

  it("searchItems accepts a natural-language query", async () => {
    const { tag } = await seed();
    const res = await client.store.searchItems(["sdk", tag], { query: "red things", limit: 10 });
    assert.ok(Array.isArray(res.items));
    assert.ok(res.items.length <= 4);
    for (const item of res.items) {
      assert.deepEqual(item.namespace.slice(0, 2), ["sdk", tag]);
      if ("score" in item) assert.ok(item.score === null || typeof item.score === "number");
    }
  });

  it("searchItems with a query ranks by similarity of the indexed text (store.index) with a score", async () => {
    // The suite's server embeds the `text` field with the scripted model
    // (a bag of words): sharing more words with the query ranks higher.
    const ns = ["sdk", uniqueTag("sem")];
    await client.store.putItem(ns, "pizza", { text: "I love pizza", kind: "food" });
    await client.store.putItem(ns, "plumber", { text: "I am a plumber", kind: "job" });
    await client.store.putItem(ns, "twice", { text: "pizza pizza every day", kind: "food" });
    await client.store.putItem(ns, "skipped", { text: "pizza" }, { index: false });
    const res = await client.store.searchItems(ns, { query: "pizza", limit: 10 });
    assert.deepEqual(res.items.map((i) => i.key), ["twice", "pizza", "plumber", "skipped"]);
    const [twice, pizza, plumber, skipped] = res.items;
    assert.ok(twice.score > pizza.score && pizza.score > plumber.score, JSON.stringify(res.items.map((i) => i.score)));
    assert.ok(Math.abs(twice.score - 2 / Math.sqrt(6)) < 1e-5, `score ${twice.score}`);
    assert.equal(skipped.score ?? null, null, "an item put with index: false has no score");
    const food = await client.store.searchItems(ns, { query: "pizza", filter: { kind: "food" }, limit: 1, offset: 1 });
    assert.deepEqual(food.items.map((i) => i.key), ["pizza"]);
  });

  it("the wire response of POST /store/items/search is {items: [...]} with snake_case timestamps", async () => {
    const { tag } = await seed();
    const res = await raw("POST", "/store/items/search", { json: { namespace_prefix: ["sdk", tag], limit: 10 } });
    assert.equal(res.status, 200, res.text);
    assert.ok(Array.isArray(res.json?.items), `expected {items: [...]}, got ${res.text}`);
    for (const item of res.json.items) {
      assertTimestamp(item.created_at);
      assertTimestamp(item.updated_at);
    }
  });
});

describe("store namespaces", () => {
  async function seed() {
    const tag = uniqueTag("s");
    await client.store.putItem(["sdk", tag, "a", "x"], "k", { v: 1 });
    await client.store.putItem(["sdk", tag, "b", "x"], "k", { v: 2 });
    await client.store.putItem(["sdk", tag, "b", "y"], "k", { v: 3 });
    await client.store.putItem(["sdk", tag, "b", "y"], "k2", { v: 4 });
    return tag;
  }

  it("listNamespaces with a prefix returns {namespaces: [...]} with each namespace once", async () => {
    const tag = await seed();
    const res = await client.store.listNamespaces({ prefix: ["sdk", tag] });
    assert.ok(res && Array.isArray(res.namespaces), `expected {namespaces: [...]}, got ${JSON.stringify(res)}`);
    assert.deepEqual(sortNs(res.namespaces), [`sdk/${tag}/a/x`, `sdk/${tag}/b/x`, `sdk/${tag}/b/y`]);
  });

  it("listNamespaces with prefix and suffix", async () => {
    const tag = await seed();
    const res = await client.store.listNamespaces({ prefix: ["sdk", tag], suffix: ["x"] });
    assert.deepEqual(sortNs(res.namespaces), [`sdk/${tag}/a/x`, `sdk/${tag}/b/x`]);
    const none = await client.store.listNamespaces({ prefix: ["sdk", tag], suffix: ["zzz"] });
    assert.deepEqual(none.namespaces, []);
  });

  it("listNamespaces with maxDepth truncates and de-duplicates", async () => {
    const tag = await seed();
    const res = await client.store.listNamespaces({ prefix: ["sdk", tag], maxDepth: 3 });
    assert.deepEqual(sortNs(res.namespaces), [`sdk/${tag}/a`, `sdk/${tag}/b`]);
    const shallow = await client.store.listNamespaces({ prefix: ["sdk", tag], maxDepth: 2 });
    assert.deepEqual(sortNs(shallow.namespaces), [`sdk/${tag}`]);
  });

  it("listNamespaces limit / offset page without overlap", async () => {
    const tag = await seed();
    const all = [`sdk/${tag}/a/x`, `sdk/${tag}/b/x`, `sdk/${tag}/b/y`];
    const p1 = await client.store.listNamespaces({ prefix: ["sdk", tag], limit: 2, offset: 0 });
    const p2 = await client.store.listNamespaces({ prefix: ["sdk", tag], limit: 2, offset: 2 });
    const p3 = await client.store.listNamespaces({ prefix: ["sdk", tag], limit: 2, offset: 3 });
    assert.equal(p1.namespaces.length, 2);
    assert.equal(p2.namespaces.length, 1);
    assert.deepEqual(p3.namespaces, []);
    assert.deepEqual(sortNs([...p1.namespaces, ...p2.namespaces]), all);
  });
});
