// The official MCP TypeScript client (@modelcontextprotocol/sdk) against the
// server's /mcp endpoint (streamable HTTP, stateless): every assistant is a
// tool, and five task tools run assistants in the background.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { API_URL, pollUntil, uniqueTag } from "./lib.mjs";

async function connect() {
  const client = new Client({ name: "sdk-tests", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${API_URL}/mcp`)));
  return client;
}

/** Calls a task tool and parses its JSON text answer. */
async function callJSON(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.ok(!res.isError, `${name} failed: ${res.content?.[0]?.text}`);
  return JSON.parse(res.content[0].text);
}

describe("MCP endpoint", () => {
  it("lists the assistants and the task tools", async () => {
    const client = await connect();
    try {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const want of ["echo", "start_async_task", "check_async_task", "update_async_task", "cancel_async_task", "list_async_tasks"]) {
        assert.ok(names.includes(want), `missing tool ${want} in ${names}`);
      }
      const echo = tools.find((t) => t.name === "echo");
      assert.equal(echo.inputSchema.type, "object");
      assert.ok(echo.inputSchema.properties.messages, "echo's input schema has messages");
    } finally {
      await client.close();
    }
  });

  it("calls an assistant and returns its answer", async () => {
    const client = await connect();
    try {
      const tag = uniqueTag("mcp");
      const res = await client.callTool({ name: "echo", arguments: { messages: [{ role: "user", content: tag }] } });
      assert.ok(!res.isError);
      assert.match(res.content[0].text, new RegExp(tag));
      assert.ok(Array.isArray(res.structuredContent.messages));
    } finally {
      await client.close();
    }
  });

  it("starts an async task and checks it until it succeeds", async () => {
    const client = await connect();
    try {
      const tag = uniqueTag("task");
      const started = await callJSON(client, "start_async_task", { subagent_type: "echo", description: tag });
      assert.equal(started.status, "running");
      const checked = await pollUntil(
        async () => {
          const c = await callJSON(client, "check_async_task", { task_id: started.task_id });
          return c.status === "success" && c;
        },
        { what: "the task to succeed" },
      );
      assert.match(String(checked.result), new RegExp(tag));
      const listed = await callJSON(client, "list_async_tasks", {});
      assert.ok(listed.tasks.some((t) => t.task_id === started.task_id));
    } finally {
      await client.close();
    }
  });
});
