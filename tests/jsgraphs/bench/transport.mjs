// Round trip of one checkpoint-sized call over the two candidate transports of the graph worker:
// newline-delimited JSON on a Unix stream socket, and loopback HTTP with keep-alive (both ends
// in Node). Run: node tests/jsgraphs/bench/transport.mjs (figures in docs/benchmarks.md).
import net from "node:net"; import http from "node:http"; import os from "node:os"; import path from "node:path";
const N = 3000;
const sock = path.join(os.tmpdir(), "rt-" + process.pid + ".sock");
const srv = net.createServer((c) => { let b = ""; c.setEncoding("utf8"); c.on("data", (d) => { b += d; let i; while ((i = b.indexOf("\n")) >= 0) { const line = b.slice(0, i); b = b.slice(i + 1); c.write(JSON.stringify({ id: JSON.parse(line).id, result: {} }) + "\n"); } }); });
await new Promise((r) => srv.listen(sock, r));
const c = net.connect(sock); c.setEncoding("utf8"); await new Promise((r) => c.on("connect", r));
let buf = ""; const waiting = new Map(); c.on("data", (d) => { buf += d; let i; while ((i = buf.indexOf("\n")) >= 0) { const m = JSON.parse(buf.slice(0, i)); buf = buf.slice(i + 1); waiting.get(m.id)(); } });
const payload = { method: "checkpoint.put", params: { checkpoint: { v: 4, id: "x", channel_values: { count: 1 } } } };
async function sockRT(id) { return new Promise((r) => { waiting.set(id, r); c.write(JSON.stringify({ id, ...payload }) + "\n"); }); }
const hs = http.createServer((req, res) => { let b = ""; req.on("data", (d) => (b += d)); req.on("end", () => { JSON.parse(b); res.setHeader("content-type", "application/json"); res.end("{}"); }); });
await new Promise((r) => hs.listen(0, "127.0.0.1", r));
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
function httpRT() { return new Promise((r) => { const req = http.request({ host: "127.0.0.1", port: hs.address().port, method: "POST", path: "/put", agent, headers: { "content-type": "application/json" } }, (res) => { res.resume(); res.on("end", r); }); req.end(JSON.stringify(payload)); }); }
async function measure(f) { const t = []; for (let i = 0; i < N; i++) { const s = process.hrtime.bigint(); await f(i); t.push(Number(process.hrtime.bigint() - s) / 1000); } t.sort((a, b) => a - b); return `p50 ${t[N / 2].toFixed(1)} µs, p90 ${t[Math.floor(N * 0.9)].toFixed(1)} µs`; }
for (let round = 0; round < 2; round++) { console.log("unix socket NDJSON:", await measure(sockRT)); console.log("loopback HTTP keep-alive:", await measure(httpRT)); }
process.exit(0);
