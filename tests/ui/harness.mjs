// Starts what the browser test needs: the scripted model, the server (with
// an API key) over a throw-away data directory, and Debian's Chromium with a
// fresh profile. Nothing is downloaded and only 127.0.0.1 is used.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const READY_MS = 20000;

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

// started processes, stopped in reverse order by stopAll.
const procs = [];
const dirs = [];

function start(bin, args, env) {
  const p = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  p.log = '';
  p.stdout.on('data', (d) => { p.log += d; });
  p.stderr.on('data', (d) => { p.log += d; });
  procs.push(p);
  return p;
}

async function until(what, fn) {
  const deadline = Date.now() + READY_MS;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what} not ready within ${READY_MS} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

export function tempDir(prefix) {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

function stop(p) {
  if (p.exitCode !== null) return Promise.resolve();
  p.kill('SIGTERM');
  return new Promise((r) => { p.once('exit', r); setTimeout(r, 5000); });
}

/**
 * startServer starts the scripted model and the server built at bins;
 * returns the base URL, the server's log, and restart(), which stops the
 * server and starts it again on the same port and data. With
 * AGENTSERVER_TEST_DATABASE_URL set (scripts/pg-test-cluster.sh) the
 * server keeps its data in that PostgreSQL database.
 */
export async function startServer({ bins, config, apiKey }) {
  const model = start(join(bins, 'scriptedllm'), ['-addr', '127.0.0.1:0']);
  const modelURL = await until('scriptedllm', async () => /^(http:\/\/127\.0\.0\.1:\d+\/v1)\n/.exec(model.log)?.[1]);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = ['--addr', `127.0.0.1:${port}`, '--data-dir', tempDir('ui-data-'), '--config', config];
  const env = { OPENAI_BASE_URL: modelURL, OPENAI_API_KEY: 'test-key', AGENTSERVER_API_KEY: apiKey };
  if (process.env.AGENTSERVER_TEST_DATABASE_URL) env.AGENTSERVER_DATABASE_URL = process.env.AGENTSERVER_TEST_DATABASE_URL;
  let server = start(join(bins, 'server'), args, env);
  let earlier = '';
  await until('server', async () => (await fetch(`${url}/ok`)).ok);
  return {
    url,
    backend: env.AGENTSERVER_DATABASE_URL ? 'postgres' : 'bbolt',
    log: () => earlier + server.log,
    async restart() {
      await stop(server);
      earlier += server.log;
      server = start(join(bins, 'server'), args, env);
      await until('server after restart', async () => (await fetch(`${url}/ok`)).ok);
    },
  };
}

/** launchBrowser opens Chromium with a fresh profile and a 1280×800 page. */
export async function launchBrowser() {
  const context = await chromium.launchPersistentContext(tempDir('ui-profile-'), {
    executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: { width: 1280, height: 800 },
  });
  return context;
}

export async function stopAll() {
  for (const p of procs.reverse()) await stop(p);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}

/** api calls the server as a client that knows the key. */
export function apiClient(url, apiKey) {
  return async (method, path, body) => {
    const res = await fetch(url + path, {
      method, headers: { 'x-api-key': apiKey, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text.trim() ? JSON.parse(text) : null;
  };
}
