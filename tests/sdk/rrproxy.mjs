// A round-robin HTTP proxy for the replica run of the suite: every request
// goes to the next of the given backends on 127.0.0.1, so that a client's
// consecutive calls land on different replicas. Bodies and responses
// (event streams included) are piped through as they come.
//
//   node rrproxy.mjs LISTEN_PORT BACKEND_PORT...
import http from "node:http";

const [listen, ...backends] = process.argv.slice(2).map(Number);
if (!listen || backends.length === 0) {
  console.error("usage: node rrproxy.mjs LISTEN_PORT BACKEND_PORT...");
  process.exit(2);
}
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
let next = 0;

const server = http.createServer((req, res) => {
  const port = backends[next++ % backends.length];
  const upstream = http.request(
    { host: "127.0.0.1", port, method: req.method, path: req.url, headers: req.headers, agent },
    (up) => {
      res.writeHead(up.statusCode, up.statusMessage, up.headers);
      res.flushHeaders();
      up.pipe(res);
    },
  );
  upstream.on("error", (err) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" });
    res.end(JSON.stringify({ detail: `proxy: ${err.message}` }));
  });
  res.on("close", () => upstream.destroy());
  req.pipe(upstream);
});
server.listen(listen, "127.0.0.1", () => console.log(`rrproxy on ${listen} -> ${backends.join(",")}`));
