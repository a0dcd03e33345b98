// The web console in a real browser: find a thread, read its state and
// history, travel to a past checkpoint, watch a run stream live, cancel and
// rerun runs, see the run queue and the task tree of a supervisor thread,
// in light and dark. Screenshots go to $UI_SCREENSHOTS (default
// tests/ui/screenshots).
import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { apiClient, launchBrowser, startServer, stopAll } from './harness.mjs';

const KEY = 'ui-test-key';
const BINS = process.env.UI_BINS;
const CONFIG = process.env.UI_CONFIG;
const SHOTS = process.env.UI_SCREENSHOTS || join(import.meta.dirname, 'screenshots');
const WAIT = { timeout: 10000 };

let server;
let api;
let browser;
let page;
let supervisor;
let echoThread;
const pageErrors = [];

// shot saves a screenshot without the passing toast, so shots compare well.
const shot = async (name) => {
  await page.evaluate(() => { document.getElementById('toast').className = 'toast'; });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), animations: 'disabled' });
};
const open = async (hash) => { await page.evaluate((h) => { location.hash = h; }, hash); };
const waitFor = async (what, fn) => {
  const deadline = Date.now() + WAIT.timeout;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startServer({ bins: BINS, config: CONFIG, apiKey: KEY });
  api = apiClient(server.url, KEY);
  // An echo thread with two runs (so it has a history), and a supervisor
  // thread that started an async researcher and delegated with the task tool.
  echoThread = (await api('POST', '/threads', { metadata: { purpose: 'ui-test' } })).thread_id;
  for (const text of ['first question', 'second question']) {
    await api('POST', `/threads/${echoThread}/runs/wait`, { assistant_id: 'echo', input: { messages: [{ role: 'user', content: text }] } });
  }
  supervisor = (await api('POST', '/threads', {})).thread_id;
  await api('POST', `/threads/${supervisor}/runs/wait`, {
    assistant_id: 'supervisor',
    input: { messages: [{ role: 'user', content: 'start researcher: find three facts about otters\ndelegate: summarise the notes' }] },
  });
  const tasks = (await api('GET', `/threads/${supervisor}/state`)).values.async_tasks;
  const [taskId] = Object.keys(tasks);
  await waitFor('the researcher to finish', async () => (await api('GET', `/threads/${taskId}`)).status === 'idle');
  await api('POST', `/threads/${supervisor}/runs/wait`, { assistant_id: 'supervisor', input: { messages: [{ role: 'user', content: `check ${taskId}` }] } });

  browser = await launchBrowser();
  page = browser.pages()[0] || await browser.newPage();
  page.on('pageerror', (err) => pageErrors.push(err.message));
});

afterEach(() => {
  assert.deepEqual(pageErrors.splice(0), [], 'no script errors in the page');
});

after(async () => {
  await browser?.close();
  if (process.exitCode && server) console.error(server.log().slice(-4000));
  await stopAll();
});

test('asks for the API key once and lists the threads', async () => {
  await page.emulateMedia({ colorScheme: 'light' });
  await page.goto(`${server.url}/ui`);
  const dialog = page.locator('#key-dialog');
  await dialog.waitFor({ state: 'visible', ...WAIT });
  await page.fill('#key-input', KEY);
  await page.click('#key-save');
  await page.locator(`[data-thread-id="${supervisor}"]`).waitFor(WAIT);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('agentserver.console.apiKey')), KEY);
  assert.equal(await dialog.isVisible(), false);
  const { flags } = await api('GET', '/info');
  assert.equal(await page.locator('[data-nav="crons"]').isVisible(), flags.crons === true, 'a Crons page exactly when /info says crons: true');
  await shot('threads-light');
});

test('search finds a thread by id and by metadata', async () => {
  await page.fill('#thread-search', echoThread);
  await waitFor('only the echo thread', async () => (await page.locator('#thread-list .list-item').count()) === 1
    && (await page.locator(`[data-thread-id="${echoThread}"]`).count()) === 1);
  await page.fill('#thread-search', 'purpose=ui-test');
  await waitFor('metadata match', async () => (await page.locator('#thread-list .list-item').count()) === 1);
  await page.fill('#thread-search', '');
});

test('a thread shows its state and its history, and runs from a past checkpoint', async () => {
  await page.click(`[data-thread-id="${echoThread}"]`);
  await page.locator('#tab-body .msg', { hasText: 'second question' }).first().waitFor(WAIT);
  await shot('thread-state');
  await page.click('[data-tab="history"]');
  const rows = page.locator('#history-table tbody tr');
  await rows.first().waitFor(WAIT);
  const count = await rows.count();
  assert.ok(count >= 4, `history has ${count} checkpoints`);
  // The oldest checkpoint with messages holds only the first exchange.
  const past = rows.nth(count - 2);
  const pastId = await past.getAttribute('data-checkpoint-id');
  await past.click();
  const pane = page.locator('#checkpoint-pane');
  await pane.getByText('Past checkpoint').waitFor(WAIT);
  assert.equal(await pane.locator('.msg', { hasText: 'second question' }).count(), 0);
  await shot('thread-history');
  // Fork: run from that checkpoint on a copy of the thread.
  await pane.locator('.composer-assistant').selectOption('echo');
  await pane.locator('.composer-input').fill('another branch');
  await pane.locator('#fork-copy').check();
  await pane.locator('.composer-run').click();
  await waitFor('the fork', async () => /#\/threads\/[^/]+\/runs\//.test(page.url()) && !page.url().includes(echoThread));
  const forked = /#\/threads\/([^/]+)\//.exec(page.url())[1];
  await page.locator('#run-status [data-status="success"]').waitFor(WAIT);
  const state = await api('GET', `/threads/${forked}/state`);
  const texts = state.values.messages.map((m) => m.content);
  assert.ok(texts.includes('another branch') && !texts.includes('second question'), `fork from ${pastId}: ${texts}`);
  const original = await api('GET', `/threads/${echoThread}/state`);
  assert.ok(!original.values.messages.some((m) => m.content === 'another branch'), 'the original thread is unchanged');
});

test('a run streams live, without layout jumps, and can be cancelled and rerun', async () => {
  await open(`#/threads/${echoThread}`);
  const composer = page.locator('#thread-detail .card').first().locator('.composer');
  await composer.locator('.composer-assistant').selectOption('researcher');
  await composer.locator('.composer-input').fill(`slow: ${Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ')}`);
  await composer.locator('.composer-run').click();
  await page.locator('#run-status [data-status="running"]').waitFor(WAIT);
  await waitFor('streamed text', async () => /You said: word/.test(await page.locator('#run-output').textContent()));
  const before = await page.locator('#run-events').boundingBox();
  const firstText = await page.locator('#run-output').textContent();
  await waitFor('more text', async () => (await page.locator('#run-output').textContent()).length > firstText.length + 10);
  const afterBox = await page.locator('#run-events').boundingBox();
  assert.deepEqual(afterBox, before, 'the event list did not move while the run streamed');
  await shot('run-live');
  await page.click('#run-cancel');
  await page.locator('#run-status [data-status="interrupted"]').waitFor(WAIT);
  const text = await page.locator('#run-output').textContent();
  assert.ok(!text.includes('word39'), 'the run stopped before its last word');
  await page.locator('#run-rerun').click();
  await waitFor('the rerun', async () => (await page.locator('#run-status [data-status="running"]').count()) === 1);
  const rerunId = /runs\/([^/]+)$/.exec(page.url())[1];
  const rerun = await api('GET', `/threads/${echoThread}/runs/${rerunId}`);
  assert.equal(rerun.assistant_id, (await api('GET', '/assistants/researcher')).assistant_id);
  await page.click('#run-cancel');
  await page.locator('#run-status [data-status="interrupted"]').waitFor(WAIT);
});

test('the run queue lists pending runs across threads and cancels them', async () => {
  const run = await api('POST', `/threads/${echoThread}/runs`, { assistant_id: 'echo', after_seconds: 600, input: { messages: [{ role: 'user', content: 'later' }] } });
  await open('#/queue');
  const row = page.locator(`tr[data-run-id="${run.run_id}"]`);
  await row.waitFor(WAIT);
  assert.equal(await row.locator('[data-status]').getAttribute('data-status'), 'pending');
  assert.match(await row.textContent(), /echo/, 'the queue names the run\'s graph');
  await shot('queue');
  await row.locator('.run-cancel').click();
  await page.locator('#queue-empty').waitFor(WAIT);
  assert.equal((await api('GET', `/threads/${echoThread}/runs/${run.run_id}`)).status, 'interrupted');
});

test('a supervisor thread shows its task tree', async () => {
  await open(`#/threads/${supervisor}/tasks`);
  const asyncTask = page.locator('#async-tasks .async-task');
  await asyncTask.first().waitFor(WAIT);
  assert.equal(await asyncTask.count(), 1);
  const taskText = await asyncTask.textContent();
  assert.match(taskText, /researcher/);
  assert.match(taskText, /local thread/);
  assert.match(taskText, /last check/);
  assert.match(taskText, /You said: find three facts about otters/);
  assert.equal(await asyncTask.locator('[data-status]').first().getAttribute('data-status'), 'success');
  const sub = page.locator('#task-subagents .subagent');
  await sub.first().waitFor(WAIT);
  const subText = await sub.first().textContent();
  assert.match(subText, /general-purpose/);
  assert.match(subText, /\d+ steps?/);
  assert.match(subText, /\d+ tokens/);
  const runs = await api('GET', `/threads/${supervisor}/runs?limit=10`);
  const records = (await Promise.all(runs.map((r) => api('GET', `/threads/${supervisor}/runs/${r.run_id}/subagents`)))).flat();
  assert.equal(records.length, 1);
  assert.ok(subText.includes(`stop ${records[0].stop_reason ?? '—'}`), subText);
  assert.ok(subText.includes(`${records[0].steps.length} step`), subText);
  await shot('task-tree-light');
  await page.emulateMedia({ colorScheme: 'dark' });
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(bg, 'rgb(15, 18, 24)', 'prefers-color-scheme: dark applies the dark colours');
  await shot('task-tree-dark');
});

test('the task tree updates live from the thread stream', async () => {
  await api('POST', `/threads/${supervisor}/runs`, { assistant_id: 'supervisor', input: { messages: [{ role: 'user', content: 'start coder: write a haiku' }] } });
  await waitFor('the second async task', async () => (await page.locator('#async-tasks .async-task').count()) === 2);
  await page.locator('#live-dot.on').waitFor(WAIT);
  await page.click('[data-tab="events"]');
  await page.locator('#thread-events li .ev', { hasText: 'values' }).first().waitFor(WAIT);
  await shot('thread-events');
});

test('the crons page lists crons when the server has them', async (t) => {
  const { flags } = await api('GET', '/info');
  if (!flags.crons) {
    t.skip('this server has no crons (GET /info flags.crons is false)');
    return;
  }
  const cron = await api('POST', '/runs/crons', { assistant_id: 'echo', schedule: '0 0 1 1 *', input: { messages: [{ role: 'user', content: 'new year' }] } });
  await page.click('[data-nav="crons"]');
  const row = page.locator(`#crons-table tr[data-cron-id="${cron.cron_id}"]`);
  await row.waitFor(WAIT);
  assert.match(await row.textContent(), /0 0 1 1 \*/);
  await shot('crons');
});

test('the theme toggle overrides the system scheme', async () => {
  await page.emulateMedia({ colorScheme: 'dark' });
  await open(`#/threads/${echoThread}`);
  const theme = () => page.evaluate(() => document.documentElement.dataset.theme || 'system');
  assert.equal(await theme(), 'system');
  await page.click('#theme-button');
  assert.equal(await theme(), 'light');
  assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), 'rgb(246, 247, 249)');
  await page.click('#theme-button');
  assert.equal(await theme(), 'dark');
  await shot('thread-dark');
  await page.click('#theme-button');
  assert.equal(await theme(), 'system');
});
