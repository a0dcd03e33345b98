// Wire-level error handling and input leniency, checked with raw fetch (what the SDK hides).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { makeClient, raw, rejectsWithStatus, uniqueTag, uuid4, uuid7 } from "./lib.mjs";

const client = makeClient();

function assertJsonError(res, what) {
  const ct = res.headers.get("content-type") ?? "";
  assert.match(ct, /application\/json/, `${what}: content-type should be JSON, got "${ct}" (body: ${res.text})`);
  assert.ok(res.json && typeof res.json === "object", `${what}: body should be a JSON object, got ${res.text}`);
  assert.equal(typeof res.json.detail, "string", `${what}: body.detail should be a string, got ${res.text}`);
  assert.ok(res.json.detail.length > 0, `${what}: body.detail should not be empty`);
  assert.equal(typeof res.json.message, "string", `${what}: body.message should be a string, got ${res.text}`);
}

describe("error responses", () => {
  it("malformed JSON on POST /threads -> 400 or 422 with {detail, message}", async () => {
    const res = await raw("POST", "/threads", {
      body: '{"metadata": {"a": 1',
      headers: { "content-type": "application/json" },
    });
    assert.ok([400, 422].includes(res.status), `expected 400 or 422, got ${res.status}: ${res.text}`);
    assertJsonError(res, "malformed JSON");
  });

  it("a body of the wrong type on POST /threads -> 422 JSON", async () => {
    const res = await raw("POST", "/threads", { json: { metadata: "not-an-object" } });
    assert.equal(res.status, 422, `got ${res.status}: ${res.text}`);
    assertJsonError(res, "metadata of the wrong type");
  });

  it("an invalid UUID in the path -> 422 JSON", async () => {
    const res = await raw("GET", "/threads/not-a-uuid");
    assert.equal(res.status, 422, `got ${res.status}: ${res.text}`);
    assertJsonError(res, "GET /threads/not-a-uuid");
  });

  it("an unknown thread -> 404 JSON with detail", async () => {
    const res = await raw("GET", `/threads/${uuid4()}`);
    assert.equal(res.status, 404, `got ${res.status}: ${res.text}`);
    assertJsonError(res, "unknown thread");
  });

  it("the SDK surfaces 404 as an error carrying the status", async () => {
    const err = await rejectsWithStatus(client.threads.get(uuid4()), 404);
    assert.match(err.message, /404/);
  });

  it("an invalid thread_id in the create body -> 422", async () => {
    const res = await raw("POST", "/threads", { json: { thread_id: "not-a-uuid" } });
    assert.equal(res.status, 422, `got ${res.status}: ${res.text}`);
    assertJsonError(res, "invalid thread_id");
  });

  it("store put with an empty namespace or a label containing '.' -> 422 JSON", async () => {
    for (const namespace of [[], ["sdk", ""], ["sdk", "a.b"]]) {
      const res = await raw("PUT", "/store/items", { json: { namespace, key: "k", value: { v: 1 } } });
      assert.equal(res.status, 422, `namespace ${JSON.stringify(namespace)}: got ${res.status}: ${res.text}`);
      assertJsonError(res, `namespace ${JSON.stringify(namespace)}`);
    }
  });

  it("an invalid if_exists value -> 422", async () => {
    const res = await raw("POST", "/threads", { json: { if_exists: "explode" } });
    assert.equal(res.status, 422, `got ${res.status}: ${res.text}`);
  });
});

describe("input leniency", () => {
  it("POST /threads with text/plain carrying JSON is accepted", async () => {
    const tag = uniqueTag("e");
    const res = await raw("POST", "/threads", {
      body: JSON.stringify({ metadata: { tag } }),
      headers: { "content-type": "text/plain;charset=UTF-8" },
    });
    assert.equal(res.status, 200, `got ${res.status}: ${res.text}`);
    assert.equal(res.json?.metadata?.tag, tag);
  });

  it("POST /threads with an empty body is accepted", async () => {
    const res = await raw("POST", "/threads");
    assert.equal(res.status, 200, `got ${res.status}: ${res.text}`);
    assert.equal(typeof res.json?.thread_id, "string");
    assert.equal(res.json.status, "idle");
  });

  it("POST /threads with {} (what the Python SDK sends) is accepted", async () => {
    const res = await raw("POST", "/threads", { json: {} });
    assert.equal(res.status, 200, `got ${res.status}: ${res.text}`);
    assert.deepEqual(res.json?.metadata, {});
  });

  it("UUIDv7 thread ids are accepted", async () => {
    const id = uuid7();
    assert.equal(id[14], "7");
    const t = await client.threads.create({ threadId: id, metadata: { tag: uniqueTag() } });
    assert.equal(t.thread_id, id);
    const got = await client.threads.get(id);
    assert.equal(got.thread_id, id);
    const raws = await raw("GET", `/threads/${id}`);
    assert.equal(raws.status, 200);
  });

  it("DELETE answers 204 with no body", async () => {
    const t = await client.threads.create({ metadata: { tag: uniqueTag() } });
    const res = await raw("DELETE", `/threads/${t.thread_id}`);
    assert.equal(res.status, 204);
    assert.equal(res.text, "");
  });

  it("GET /ok answers {ok: true}", async () => {
    const res = await raw("GET", "/ok");
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { ok: true });
  });

  it("GET /store/items accepts repeated namespace params as well as the dot-joined form", async () => {
    const tag = uniqueTag("e");
    await client.store.putItem(["sdk", tag], "k", { v: 1 });
    const dotted = await raw("GET", `/store/items?namespace=sdk.${tag}&key=k`);
    assert.equal(dotted.status, 200, dotted.text);
    assert.deepEqual(dotted.json?.value, { v: 1 });
    const repeated = await raw("GET", `/store/items?namespace=sdk&namespace=${tag}&key=k`);
    assert.equal(repeated.status, 200, repeated.text);
    assert.deepEqual(repeated.json?.value, { v: 1 });
    const missing = await raw("GET", `/store/items?namespace=sdk.${tag}&key=absent`);
    assert.equal(missing.status, 200, missing.text);
    assert.equal(missing.text.trim(), "null");
  });
});
