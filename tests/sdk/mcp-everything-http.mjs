// Serves the @modelcontextprotocol/server-everything reference server over
// streamable HTTP on 127.0.0.1 (its own launcher listens on every
// interface), for the Go tests of MCP client tools. Prints
// "listening <url>" once ready and "session <id>" for every session opened,
// so a test can count sessions.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createServer } from "./node_modules/@modelcontextprotocol/server-everything/dist/server/index.js";

const transports = new Map();

async function handle(req, res) {
  const sid = req.headers["mcp-session-id"];
  if (sid && transports.has(sid)) {
    await transports.get(sid).handleRequest(req, res);
    return;
  }
  if (sid || req.method !== "POST") {
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "unknown session" }, id: null }));
    return;
  }
  const { server } = createServer();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => {
      transports.set(id, transport);
      console.log(`session ${id}`);
    },
  });
  transport.onclose = () => transports.delete(transport.sessionId);
  await server.connect(transport);
  await transport.handleRequest(req, res);
}

const srv = http.createServer((req, res) => {
  handle(req, res).catch((err) => {
    if (!res.headersSent) res.writeHead(500);
    res.end(String(err));
  });
});
srv.listen(0, "127.0.0.1", () => {
  console.log(`listening http://127.0.0.1:${srv.address().port}/mcp`);
});
