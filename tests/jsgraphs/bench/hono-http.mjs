// Serves the fixture's Hono app (src/app.ts) over loopback HTTP with Node's
// own server, the alternative to carrying custom routes over the worker
// protocol: BenchmarkJSAuthRequest/hono-loopback measures a request to it.
// Prints "listening <url>" once ready.
import http from "node:http";
import { register } from "tsx/esm/api";

register();
const { app } = await import("../src/app.ts");

const server = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = chunks.length && req.method !== "GET" && req.method !== "HEAD" ? Buffer.concat(chunks) : undefined;
  const headers = Object.entries(req.headers).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]]));
  const out = await app.fetch(new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers, body }), { langgraph_auth_user: { identity: "alice" } });
  res.writeHead(out.status, [...out.headers].flat());
  if (out.body) for await (const c of out.body) res.write(c);
  res.end();
});
server.listen(0, "127.0.0.1", () => console.log(`listening http://127.0.0.1:${server.address().port}`));
