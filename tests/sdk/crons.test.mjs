// Cron jobs through the real JS SDK's client.crons. The suite's server
// accepts a leading seconds field (--cron-seconds), so a firing shows
// within a second or two; it is observed through runs.list.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  GRAPH_ID,
  assertTimestamp,
  assertUuid,
  human,
  makeClient,
  pollUntil,
  rejectsWithStatus,
  uniqueTag,
  uuid4,
} from "./lib.mjs";

const client = makeClient();

describe("crons", () => {
  it("create, createForThread, search, count, update, delete", async () => {
    const tag = uniqueTag("cron");
    const thread = await client.threads.create();
    const stateless = await client.crons.create(GRAPH_ID, {
      schedule: "0 9 * * *",
      timezone: "Europe/Paris",
      metadata: { tag, kind: "stateless" },
      input: { messages: [human("hello", uuid4())] },
    });
    assertUuid(stateless.cron_id);
    assert.equal(stateless.thread_id, null);
    assert.equal(stateless.schedule, "0 9 * * *");
    assert.equal(stateless.timezone, "Europe/Paris");
    assert.equal(stateless.enabled, true);
    assert.equal(stateless.on_run_completed, "delete");
    assertTimestamp(stateless.next_run_date, "next_run_date");
    assertTimestamp(stateless.created_at, "created_at");
    assert.ok(stateless.payload.input, "payload keeps the run input");

    const bound = await client.crons.createForThread(thread.thread_id, GRAPH_ID, {
      schedule: "@hourly",
      metadata: { tag, kind: "thread" },
      enabled: false,
    });
    assert.equal(bound.thread_id, thread.thread_id);
    assert.equal(bound.enabled, false);

    const all = await client.crons.search({ metadata: { tag } });
    assert.deepEqual(all.map((c) => c.cron_id), [stateless.cron_id, bound.cron_id]);
    const onThread = await client.crons.search({ threadId: thread.thread_id });
    assert.deepEqual(onThread.map((c) => c.cron_id), [bound.cron_id]);
    const enabled = await client.crons.search({ metadata: { tag }, enabled: true, select: ["cron_id", "schedule"] });
    assert.deepEqual(enabled, [{ cron_id: stateless.cron_id, schedule: "0 9 * * *" }]);
    assert.equal(await client.crons.count({ metadata: { tag } }), 2);
    assert.equal(await client.crons.count({ threadId: thread.thread_id }), 1);

    const updated = await client.crons.update(bound.cron_id, { schedule: "30 * * * *", metadata: { extra: 1 }, enabled: true });
    assert.equal(updated.schedule, "30 * * * *");
    assert.equal(updated.enabled, true);
    assert.deepEqual(updated.metadata, { tag, kind: "thread", extra: 1 });

    await client.crons.delete(stateless.cron_id);
    await client.crons.delete(bound.cron_id);
    assert.equal(await client.crons.count({ metadata: { tag } }), 0);
    await rejectsWithStatus(client.crons.delete(bound.cron_id), 404, "deleting a deleted cron");
  });

  it("refuses an unknown time zone with 422", async () => {
    await rejectsWithStatus(
      client.crons.create(GRAPH_ID, { schedule: "* * * * *", timezone: "Mars/Olympus_Mons" }),
      422,
      "unknown time zone",
    );
  });

  it("fires on its thread; the run is listed with metadata.cron_id", async () => {
    const thread = await client.threads.create();
    const cron = await client.crons.createForThread(thread.thread_id, GRAPH_ID, {
      schedule: "* * * * * *",
      input: { messages: [human("tick", uuid4())] },
    });
    try {
      const runs = await pollUntil(
        async () => {
          const list = await client.runs.list(thread.thread_id);
          return list.length > 0 ? list : null;
        },
        { timeoutMs: 10_000, what: "a cron firing" },
      );
      assert.equal(runs[0].metadata.cron_id, cron.cron_id);
      assert.equal(runs[0].thread_id, thread.thread_id);
    } finally {
      await client.crons.delete(cron.cron_id);
    }
  });
});
