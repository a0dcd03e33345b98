// Custom routes in the style of the LangGraph.js docs ("How to add custom
// routes"): a Hono app the server serves behind its own routes.
import { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { authenticateCalls } from "./auth.ts";

type Env = { Bindings: { langgraph_auth_user?: { identity: string } | null } };

export const app = new Hono<Env>();

app.get("/hello", (c) => c.json({ hello: "world", user: c.env?.langgraph_auth_user?.identity ?? null }));

// The server's own GET /ok takes precedence: this one is never reached.
app.get("/ok", (c) => c.json({ shadowed: false }));

app.post("/echo/:name", async (c) => c.json({ name: c.req.param("name"), body: await c.req.json(), query: c.req.query("q") ?? null }));

app.get("/ticks", (c) =>
  streamSSE(c, async (stream) => {
    for (let i = 1; i <= 3; i++) await stream.writeSSE({ event: "tick", data: String(i) });
  }),
);

// Served without credentials (langgraph.auth.json's http.public_routes).
app.get("/public/auth-calls", (c) => c.json({ calls: authenticateCalls() }));
