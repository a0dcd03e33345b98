// The web console in a real browser: find a thread by id, metadata or
// text, follow a subagent thread to its supervisor and back, read a
// thread's state and history, edit a past checkpoint and fork from it,
// watch a run stream live, read a run's timeline, graph, tokens and output
// (also after a restart), answer an interrupt, cancel and rerun runs, see
// the run queue and the task tree of a supervisor thread, use it with the
// keyboard only, and read it in light and dark. Screenshots go to
// $UI_SCREENSHOTS (default tests/ui/screenshots); each is decoded and
// checked for what it must show.
import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { apiClient, launchBrowser, startServer, stopAll } from './harness.mjs';
import { contrast, decodePNG, hasColour, region } from './pixels.mjs';

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
let researcherThread;
let coderThread;
let rejectThread;
const pageErrors = [];

// shot saves a screenshot without the passing toast, so shots compare
// well, and checks it: the viewport's size, not blank, and each selector
// in shows drawn on it (inside the picture, more than one colour). It
// returns the decoded picture.
const shot = async (name, shows = []) => {
  await page.evaluate(() => { document.getElementById('toast').className = 'toast'; });
  const img = decodePNG(await page.screenshot({ path: join(SHOTS, `${name}.png`), animations: 'disabled' }));
  assert.deepEqual([img.width, img.height], [1280, 800], `${name}: the screenshot is the viewport`);
  assert.ok(region(img).colours > 12, `${name}: the screenshot is not blank`);
  for (const sel of shows) {
    // A part redrawn since the picture stays where it was: wait for its box.
    const box = await waitFor(`${sel}'s box`, () => page.locator(sel).first().boundingBox().catch(() => null));
    assert.ok(box && box.width > 0 && box.height > 0 && box.y < img.height && box.x < img.width, `${name}: ${sel} is on screen (${JSON.stringify(box)})`);
    const visible = { x: box.x, y: box.y, width: Math.min(box.width, img.width - box.x), height: Math.min(box.height, img.height - box.y) };
    assert.ok(region(img, visible).colours > 1, `${name}: ${sel} is drawn, not an empty box`);
  }
  return img;
};
// rgb reads a computed CSS colour.
const rgb = (css) => (/(\d+(?:\.\d+)?)[,\s]+(\d+(?:\.\d+)?)[,\s]+(\d+(?:\.\d+)?)/.exec(css) || []).slice(1, 4).map(Number);
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
  researcherThread = taskId;
  await waitFor('the researcher to finish', async () => (await api('GET', `/threads/${taskId}`)).status === 'idle');
  await api('POST', `/threads/${supervisor}/runs/wait`, { assistant_id: 'supervisor', input: { messages: [{ role: 'user', content: `check ${taskId}` }] } });

  // Two coder threads waiting for approval of a file write.
  coderThread = (await api('POST', '/threads', {})).thread_id;
  await api('POST', `/threads/${coderThread}/runs/wait`, { assistant_id: 'coder', input: { messages: [{ role: 'user', content: 'write notes.txt hello otters' }] } });
  rejectThread = (await api('POST', '/threads', {})).thread_id;
  await api('POST', `/threads/${rejectThread}/runs/wait`, { assistant_id: 'coder', input: { messages: [{ role: 'user', content: 'write secrets.txt do not write this' }] } });

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
  // Threads are listed by their first message, with the newest as a preview.
  const echoRow = page.locator(`#thread-list [data-thread-id="${echoThread}"]`);
  assert.equal((await echoRow.locator('.title').textContent()).trim(), 'first question');
  assert.match(await echoRow.locator('.preview').textContent(), /agent: echo: second question/);
  // The researcher the supervisor started is nested under it and names its agent.
  const nested = page.locator(`#thread-list [data-thread-id="${supervisor}"] + .list-children [data-thread-id="${researcherThread}"]`);
  await nested.waitFor(WAIT);
  assert.match(await nested.locator('.title').textContent(), /^researcher/);
  await shot('threads-light', [`[data-thread-id="${echoThread}"]`, `[data-thread-id="${researcherThread}"]`]);
});

test('search finds a thread by id and by metadata', async () => {
  await page.fill('#thread-search', echoThread);
  await waitFor('only the echo thread', async () => (await page.locator('#thread-list .list-item').count()) === 1
    && (await page.locator(`[data-thread-id="${echoThread}"]`).count()) === 1);
  await page.fill('#thread-search', 'purpose=ui-test');
  await waitFor('metadata match', async () => (await page.locator('#thread-list .list-item').count()) === 1);
  // Text is looked for in the messages: the supervisor and its researcher talk about otters.
  await page.fill('#thread-search', 'OTTERS');
  await waitFor('content match', async () => {
    const ids = await page.locator('#thread-list .list-item').evaluateAll((els) => els.map((e) => e.dataset.threadId).sort());
    return JSON.stringify(ids) === JSON.stringify([coderThread, supervisor, researcherThread].sort());
  });
  await page.fill('#thread-search', 'no thread says this');
  await page.locator('#thread-list .empty').waitFor(WAIT);
  await page.fill('#thread-search', '');
});

test('a subagent thread links to its supervisor thread and back', async () => {
  await page.click(`#thread-list [data-thread-id="${researcherThread}"]`);
  const parent = page.locator('#thread-parent');
  await parent.waitFor(WAIT);
  assert.match(await parent.textContent(), /researcher started by supervisor thread/);
  await parent.locator(`a[href="#/threads/${supervisor}"]`).click();
  await page.locator(`#thread-children [data-thread-id="${researcherThread}"]`).waitFor(WAIT);
  assert.match(await page.locator('#thread-title').textContent(), /^start researcher: find three facts about otters/);
  await page.locator(`#thread-children [data-thread-id="${researcherThread}"]`).click();
  await waitFor('the researcher thread', async () => page.url().endsWith(`#/threads/${researcherThread}`));
  await page.locator('#thread-parent').waitFor(WAIT);
});

// forkFrom runs echo with message from the checkpoint shown in pane, on a
// copy of the echo thread, waits for the run to succeed and returns the
// copy's id.
async function forkFrom(pane, message) {
  await pane.locator('.composer-assistant').selectOption('echo');
  await pane.locator('.composer-input').fill(message);
  await pane.locator('#fork-copy').check();
  await pane.locator('.composer-run').click();
  await waitFor('the fork', async () => /#\/threads\/[^/]+\/runs\//.test(page.url()) && !page.url().includes(echoThread));
  await page.locator('#run-status [data-status="success"]').waitFor(WAIT);
  return /#\/threads\/([^/]+)\//.exec(page.url())[1];
}

test('a thread shows its state and its history, and runs from a past checkpoint', async () => {
  await page.click(`[data-thread-id="${echoThread}"]`);
  await page.locator('#tab-body .msg', { hasText: 'second question' }).first().waitFor(WAIT);
  await shot('thread-state', ['#tab-body .msg']);
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
  await shot('thread-history', ['#history-table', '#checkpoint-pane']);
  // Fork: run from that checkpoint on a copy of the thread.
  const forked = await forkFrom(pane, 'another branch');
  const state = await api('GET', `/threads/${forked}/state`);
  const texts = state.values.messages.map((m) => m.content);
  assert.ok(texts.includes('another branch') && !texts.includes('second question'), `fork from ${pastId}: ${texts}`);
  const original = await api('GET', `/threads/${echoThread}/state`);
  assert.ok(!original.values.messages.some((m) => m.content === 'another branch'), 'the original thread is unchanged');
});

test('time travel: a past checkpoint\'s state is edited and a fork runs from it', async () => {
  await open(`#/threads/${echoThread}/history`);
  const rows = page.locator('#history-table tbody tr');
  await rows.first().waitFor(WAIT);
  const count = await rows.count();
  await rows.nth(count - 2).click();
  const pane = page.locator('#checkpoint-pane');
  await pane.getByText('Past checkpoint').waitFor(WAIT);
  await pane.locator('#state-edit summary').click();
  const editor = pane.locator('#state-editor');
  const values = JSON.parse(await editor.inputValue());
  assert.equal(values.messages[0].content, 'first question', 'the editor holds the checkpoint\'s values');
  values.messages[0].content = 'an edited question';
  await editor.fill(JSON.stringify(values, null, 2));
  const forked = await forkFrom(pane, 'after the edit');
  const texts = (await api('GET', `/threads/${forked}/state`)).values.messages.map((m) => m.content);
  assert.deepEqual(texts.slice(0, 1), ['an edited question'], `the fork starts from the edited state: ${texts}`);
  assert.ok(texts.includes('echo: after the edit') && !texts.includes('first question'), `fork: ${texts}`);
  const original = (await api('GET', `/threads/${echoThread}/state`)).values.messages.map((m) => m.content);
  assert.ok(original.includes('first question') && !original.includes('an edited question'), 'the original thread is unchanged');
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
  // The graph marks the node the run is in.
  await page.locator('#graph-svg .graph-node.active[data-node="model"]').waitFor(WAIT);
  await page.locator('#run-timeline .tl-step.running[data-node="model"]').waitFor(WAIT);
  await page.locator('#run-graph').evaluate((e) => e.scrollIntoView({ block: 'start' }));
  const img = await shot('run-live', ['#graph-svg', '#run-timeline']);
  // The graph is redrawn as the run goes on; the node stays where it is.
  const node = await waitFor('the running node\'s box', () => page.locator('#graph-svg .graph-node.active[data-node="model"] rect').boundingBox().catch(() => null));
  const accent = rgb(await page.evaluate(() => getComputedStyle(document.querySelector('#graph-svg .graph-node.active rect')).fill));
  assert.ok(hasColour(img, node, accent), `the running node is drawn in the accent colour ${accent}`);
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

// supervisorRun is the supervisor's first run: it started the researcher
// and delegated with the task tool.
const supervisorRun = async () => (await api('GET', `/threads/${supervisor}/runs?limit=50`)).at(-1);

// checkRunPage checks a finished supervisor run's page against its record
// and checkpoints: what it was asked and answered, attempt, duration,
// tokens, the steps with their model and tool calls and subagents, and the
// graph with how often each node ran.
async function checkRunPage(run) {
  await open(`#/threads/${supervisor}/runs/${run.run_id}`);
  const timeline = page.locator('#run-timeline');
  await timeline.waitFor(WAIT);
  await page.locator('#run-status [data-status="success"]').waitFor(WAIT);
  assert.match(await page.locator('#run-input').textContent(), /start researcher: find three facts about otters/);
  await waitFor('the output', async () => /done: Launched async subagent/.test(await page.locator('#run-output').textContent()));
  assert.equal((await page.locator('#run-attempt').textContent()).trim(), String(run.attempt));
  assert.equal(run.attempt, 1);
  assert.match(await page.locator('#run-duration').textContent(), /^\d+(\.\d)? (ms|s)$/);
  const usage = run.metadata.usage;
  assert.ok(usage.total_tokens > 0, 'the run recorded tokens');
  assert.match(await page.locator('#run-tokens').textContent(), new RegExp(`^${usage.total_tokens} tok \\(${usage.input_tokens} in / ${usage.output_tokens} out\\) · ${usage.calls} model calls$`));
  // The steps: model (asks for the tools), tools, model (answers).
  const nodes = await timeline.locator(':scope > li').evaluateAll((els) => els.map((e) => e.dataset.node));
  assert.deepEqual(nodes, ['input', 'model', 'tools', 'model']);
  const models = timeline.locator('.tl-item.model');
  assert.equal(await models.count(), 2);
  const firstModel = await models.first().textContent();
  assert.match(firstModel, /gpt-4o-mini/);
  assert.match(firstModel, /\d+ tok \(\d+ in \/ \d+ out\)/);
  assert.match(firstModel, /asks for start_async_task, task/);
  const tool = timeline.locator('.tl-item.tool').first();
  assert.match(await tool.textContent(), /start_async_task.*success.*arguments.*"subagent_type":"researcher".*result: Launched async subagent/s);
  const subagents = await timeline.locator('.tl-item.subagent').allTextContents();
  assert.equal(subagents.length, 2, `subagents: ${subagents}`);
  assert.ok(subagents.some((t) => /researcher.*async.*running/s.test(t)), 'the async researcher it started');
  assert.ok(subagents.some((t) => /general-purpose.*task tool.*completed/s.test(t)), 'the task-tool subagent it ran');
  assert.equal(await timeline.locator(`.tl-item.subagent a[href="#/threads/${researcherThread}"]`).count(), 1, 'the async subagent links to its thread');
  // The graph: model ran twice, tools once; no node is running.
  await page.locator('#graph-svg').waitFor(WAIT);
  assert.deepEqual(await page.locator('#graph-svg .graph-node').evaluateAll((els) => els.map((e) => e.dataset.node)), ['__start__', 'model', 'tools', '__end__']);
  assert.match(await page.locator('#graph-svg [data-node="model"] text').textContent(), /model ×2/);
  assert.match(await page.locator('#graph-svg [data-node="tools"] text').textContent(), /tools ×1/);
  assert.equal(await page.locator('#graph-svg .graph-node.active').count(), 0);
  assert.equal(await page.locator('#graph-svg .graph-edge').count(), 4);
  assert.equal(await page.locator('#graph-svg .graph-edge.conditional').count(), 2);
}

test('a finished run shows its input, output, tokens, graph and a timeline of its steps', async () => {
  await checkRunPage(await supervisorRun());
  await shot('run-page', ['#run-meta', '#run-input', '#run-output']);
  await page.locator('#run-timeline').scrollIntoViewIfNeeded();
  await shot('run-timeline', ['#graph-svg', '#run-timeline .tl-item.model']);
});

test('the runs of a thread can be told apart', async () => {
  await open(`#/threads/${echoThread}/runs`);
  const rows = page.locator('.runs-table tbody tr');
  await rows.first().waitFor(WAIT);
  const inputs = await page.locator('.runs-table .run-input').allTextContents();
  assert.ok(inputs.includes('first question') && inputs.includes('second question'), `inputs: ${inputs}`);
  for (const d of await page.locator('.runs-table .run-duration').allTextContents()) assert.match(d, /^(\d+(\.\d)? (ms|s)|—)$/);
  const rowTexts = await rows.allTextContents();
  assert.equal(new Set(rowTexts).size, rowTexts.length, 'no two rows read the same');
  await open(`#/threads/${supervisor}/runs`);
  const run = await supervisorRun();
  const row = page.locator(`.runs-table tr[data-run-id="${run.run_id}"]`);
  await row.waitFor(WAIT);
  assert.equal((await row.locator('.run-tokens').textContent()).trim(), String(run.metadata.usage.total_tokens));
  assert.match(await row.locator('.run-input').textContent(), /start researcher/);
  await shot('runs', ['.runs-table']);
});

test('human in the loop: an interrupted run is approved with edited arguments, another rejected', async () => {
  await open(`#/threads/${coderThread}`);
  const panel = page.locator('#thread-hitl #hitl-panel');
  await panel.waitFor(WAIT);
  assert.match(await panel.textContent(), /Waiting for your approval.*write_file.*Tool execution requires approval.*notes\.txt/s);
  assert.equal(await panel.locator('.hitl-approve').getAttribute('aria-pressed'), 'true', 'approve is the default');
  await shot('hitl', ['#hitl-panel']);
  await panel.locator('.hitl-edit').click();
  const args = panel.locator('.hitl-args');
  const edited = { ...JSON.parse(await args.inputValue()), content: 'hello edited otters' };
  await args.fill(JSON.stringify(edited));
  await panel.locator('#hitl-resume').click();
  await waitFor('the resumed run', async () => /#\/threads\/[^/]+\/runs\//.test(page.url()));
  await page.locator('#run-status [data-status="success"]').waitFor(WAIT);
  const rid = /runs\/([^/]+)$/.exec(page.url())[1];
  const run = await api('GET', `/threads/${coderThread}/runs/${rid}`);
  assert.deepEqual(run.kwargs.command, { resume: { decisions: [{ type: 'edit', args: edited }] } });
  await waitFor('the thread to be idle', async () => (await api('GET', `/threads/${coderThread}`)).status === 'idle');
  const msgs = (await api('GET', `/threads/${coderThread}/state`)).values.messages;
  const write = msgs.filter((m) => m.type === 'ai').flatMap((m) => m.tool_calls || []).find((c) => c.name === 'write_file');
  assert.equal(write.args.content, 'hello edited otters', 'the tool ran with the edited arguments');
  assert.ok(msgs.some((m) => m.type === 'tool' && m.name === 'write_file' && m.status !== 'error'), 'the write ran');
  // The run page of the paused run showed the interrupt in its timeline.
  const paused = (await api('GET', `/threads/${coderThread}/runs?limit=10`)).at(-1);
  await open(`#/threads/${coderThread}/runs/${paused.run_id}`);
  await page.locator('#run-timeline .tl-item.model').first().waitFor(WAIT);
  assert.match(await page.locator('#run-timeline .tl-step').last().textContent(), /interrupt/);

  await open(`#/threads/${rejectThread}`);
  const second = page.locator('#thread-hitl #hitl-panel');
  await second.waitFor(WAIT);
  await second.locator('.hitl-reject').click();
  await second.locator('.hitl-message').fill('not this file');
  await second.locator('#hitl-resume').click();
  await waitFor('the rejected run', async () => /#\/threads\/[^/]+\/runs\//.test(page.url()));
  await page.locator('#run-status [data-status="success"]').waitFor(WAIT);
  await waitFor('the thread to be idle', async () => (await api('GET', `/threads/${rejectThread}`)).status === 'idle');
  const after = (await api('GET', `/threads/${rejectThread}/state`)).values.messages;
  const toolMsg = after.find((m) => m.type === 'tool' && m.name === 'write_file');
  assert.match(String(toolMsg?.content), /not this file/, `the agent was told why: ${JSON.stringify(toolMsg)}`);
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

test('keyboard only: find a thread, open its history, pick a checkpoint', async () => {
  await page.emulateMedia({ colorScheme: 'light' });
  await open('#/threads');
  await page.locator(`#thread-list [data-thread-id="${echoThread}"]`).waitFor(WAIT);
  await page.evaluate(() => document.activeElement?.blur());
  // tabTo presses Tab until the focused element matches sel; every stop
  // on the way must show a focus outline.
  const tabTo = async (sel, max = 80) => {
    for (let i = 0; i < max; i++) {
      await page.keyboard.press('Tab');
      const f = await page.evaluate((s) => {
        const a = document.activeElement;
        const cs = getComputedStyle(a);
        return { match: a.matches(s), outline: a === document.body || (cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 1), what: a.outerHTML.slice(0, 80) };
      }, sel);
      assert.ok(f.outline, `the focused element shows where focus is: ${f.what}`);
      if (f.match) return;
    }
    throw new Error(`Tab never reached ${sel}`);
  };
  await tabTo('#thread-search');
  await page.keyboard.type('second question');
  await waitFor('the search', async () => (await page.locator(`#thread-list [data-thread-id="${supervisor}"]`).count()) === 0);
  await tabTo(`#thread-list [data-thread-id="${echoThread}"]`);
  await page.keyboard.press('Enter');
  await waitFor('the thread', async () => page.url().endsWith(`#/threads/${echoThread}`));
  await tabTo('[data-tab="history"]');
  await page.keyboard.press('Enter');
  await page.locator('#history-table tbody tr').first().waitFor(WAIT);
  await tabTo('#history-table tbody tr:nth-child(2)');
  await page.keyboard.press('Enter');
  await page.locator('#history-table tbody tr:nth-child(2).selected').waitFor(WAIT);
  await page.locator('#checkpoint-pane').getByText('Past checkpoint').waitFor(WAIT);
  await tabTo('#checkpoint-pane .composer-input');
  await shot('keyboard', ['#checkpoint-pane']);
  await page.fill('#thread-search', '');
});

test('key text is readable in both themes (WCAG AA contrast)', async () => {
  await open(`#/threads/${supervisor}/runs/${(await supervisorRun()).run_id}`);
  await page.locator('#run-timeline .tl-item.model').first().waitFor(WAIT);
  const selectors = ['.brand', '.nav a.active', '.nav a:not(.active)', '#thread-list .list-item .title', '#thread-list .list-item .preview',
    '#thread-list .list-item .sub', '.badge[data-status="success"]', '.badge[data-status="idle"]', '#run-meta dt', '#run-meta dd',
    '.tl-node', '.tl-kind.model', '.tl-kind.tool', '.tl-kind.subagent', '#graph-svg [data-node="model"] text', '.chip', 'h3', '.btn.danger'];
  try {
    for (const theme of ['light', 'dark']) await checkTheme(theme, selectors);
  } finally {
    await page.evaluate(() => { delete document.documentElement.dataset.theme; });
  }
});

// checkTheme forces a theme and checks the contrast of the key text in it
// and that the screenshot is as light or dark as the theme.
async function checkTheme(theme, selectors) {
  {
    await page.evaluate((t) => { document.documentElement.dataset.theme = t; }, theme);
    const found = await page.evaluate((sels) => sels.map((sel) => {
      const el = document.querySelector(sel);
      if (!el) return { sel, missing: true };
      const cs = getComputedStyle(el);
      const fg = el instanceof SVGElement ? cs.fill : cs.color;
      // The background: the first ancestor (or SVG shape) with a colour.
      let bg = null;
      if (el instanceof SVGTextElement) bg = getComputedStyle(el.previousElementSibling).fill;
      for (let n = el; !bg && n; n = n.parentElement) {
        const b = getComputedStyle(n).backgroundColor;
        if (b && !/rgba\(.*,\s*0\)|transparent/.test(b)) bg = b;
      }
      return { sel, fg, bg: bg || getComputedStyle(document.body).backgroundColor };
    }), selectors);
    for (const f of found) {
      assert.ok(!f.missing, `${f.sel} is on the page`);
      const ratio = contrast(rgb(f.fg), rgb(f.bg));
      assert.ok(ratio >= 4.5, `${theme}: ${f.sel} ${f.fg} on ${f.bg} has contrast ${ratio.toFixed(2)}, under 4.5`);
    }
    await page.locator('#run-timeline').scrollIntoViewIfNeeded();
    const img = await shot(`run-timeline-${theme}`, ['#run-timeline']);
    const mean = region(img).mean;
    assert.ok(theme === 'light' ? mean > 0.6 : mean < 0.2, `${theme}: the page is ${theme} (mean luminance ${mean.toFixed(2)})`);
  }
}

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

test('after a restart, a finished run still shows its output and timeline', async () => {
  const run = await supervisorRun();
  await server.restart();
  await page.goto(`${server.url}/ui/`);
  await checkRunPage(run);
  await page.locator('#run-stream-note', { hasText: 'no longer keeps this run\'s events' }).waitFor({ state: 'attached', ...WAIT });
  await shot('run-after-restart', ['#run-output', '#run-meta']);
});
