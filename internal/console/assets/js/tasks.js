// The task tree of a supervisor thread: its async subagents (the
// async_tasks channel of its state) and the task-tool subagents of its runs.
import { get, ApiError } from './api.js';
import { h, replace, badge, shortId, time, textOf, messages, guard } from './ui.js';

const RUNS_LOOKED_AT = 20;

/** renderTaskTree fills slot with the tree of thread tid. */
export async function renderTaskTree(slot, tid) {
  const [state, runs] = await Promise.all([
    guard(() => get(`/threads/${tid}/state`)),
    guard(() => get(`/threads/${tid}/runs?limit=${RUNS_LOOKED_AT}`)),
  ]);
  if (!state || !runs) return;
  const records = Object.values(state.values?.async_tasks || {});
  const reported = resultsInMessages(state.values?.messages || []);
  const nodes = await guard(() => Promise.all([
    Promise.all(records.map((rec) => asyncTaskNode(rec, reported.get(rec.task_id)))),
    Promise.all(runs.map((run) => runSubagentsNode(tid, run))),
  ]));
  if (!nodes) return;
  const [asyncNodes, runNodes] = nodes;
  const withSubagents = runNodes.filter(Boolean);
  if (asyncNodes.length === 0 && withSubagents.length === 0) {
    replace(slot, h('p', { class: 'empty' }, 'No subagents on this thread: a supervisor\'s async tasks and a lead\'s task-tool subagents show here.'));
    return;
  }
  replace(slot, h('ul', { class: 'tree', id: 'task-tree' }, h('li', {},
    node('T', '', h('span', { class: 'mono grow' }, `thread ${tid}`), null, []),
    h('ul', {},
      h('li', {}, h('h3', {}, `Async subagents (${asyncNodes.length})`), h('ul', { id: 'async-tasks' }, asyncNodes)),
      h('li', {}, h('h3', {}, `Task-tool subagents (${withSubagents.reduce((n, r) => n + r.count, 0)})`), h('ul', { id: 'task-subagents' }, withSubagents.map((r) => r.el)))))));
}

// resultsInMessages maps task ids to what check_async_task last reported,
// read from the supervisor's tool messages (works for remote tasks too).
function resultsInMessages(msgs) {
  const out = new Map();
  for (const m of msgs) {
    if (m.type !== 'tool' || m.name !== 'check_async_task') continue;
    try {
      const body = JSON.parse(textOf(m.content));
      if (body.thread_id) out.set(body.thread_id, body.result ?? body.error ?? null);
    } catch { /* not a JSON report */ }
  }
  return out;
}

// asyncTaskNode shows one async_tasks record. A task whose thread is on this
// server is local: its live status and last answer are read from there.
async function asyncTaskNode(rec, reported) {
  let where = 'remote';
  let live = null;
  let result = reported;
  try {
    live = await get(`/threads/${rec.task_id}`);
    where = 'local';
    const last = (live.values?.messages || []).filter((m) => m.type === 'ai').pop();
    if (last && rec.status === 'success') result = textOf(last.content);
  } catch (err) {
    // Not a thread here (404, or 422 for an id that is not ours): remote.
    if (!(err instanceof ApiError && err.status < 500)) throw err;
  }
  const title = h('span', { class: 'grow' }, h('strong', {}, rec.agent_name), ' ', h('span', { class: 'mono muted' }, shortId(rec.task_id)));
  return h('li', { class: 'async-task', dataset: { taskId: rec.task_id, live: live?.status === 'busy' ? '1' : '0' } },
    node('A', 'async', title, badge(rec.status), [
      h('span', {}, where === 'local' ? h('a', { href: `#/threads/${rec.task_id}` }, 'local thread') : 'remote server'),
      live && h('span', {}, 'thread ', live.status),
      h('span', {}, 'run ', h('span', { class: 'mono' }, shortId(rec.run_id))),
      h('span', {}, 'started ', time(rec.created_at)),
      h('span', {}, 'last check ', time(rec.last_checked_at)),
    ], result != null && h('div', { class: 'node-result' }, typeof result === 'string' ? result : JSON.stringify(result))));
}

// runSubagentsNode is one run with its task-tool subagents, or null when it has none.
async function runSubagentsNode(tid, run) {
  const list = await guard(() => get(`/threads/${tid}/runs/${run.run_id}/subagents`));
  if (!list || list.length === 0) return null;
  const el = h('li', {},
    node('R', '', h('a', { class: 'mono grow', href: `#/threads/${tid}/runs/${run.run_id}` }, `run ${shortId(run.run_id)}`), badge(run.status), [h('span', {}, time(run.created_at))]),
    h('ul', {}, subagentNodes(list)));
  return { el, count: list.length };
}

/** subagentNodes shows task-tool subagent records: steps, usage, stop reason. */
export function subagentNodes(list) {
  return list.map((s) => {
    const usage = s.usage || {};
    const tokens = usage.total_tokens ?? ((usage.input_tokens || 0) + (usage.output_tokens || 0));
    const steps = s.steps || [];
    return h('li', { class: 'subagent', dataset: { toolCallId: s.tool_call_id, live: s.status === 'running' ? '1' : '0' } },
      node('S', '', h('span', { class: 'grow' }, h('strong', {}, s.subagent_type), ' ', s.description || ''), badge(s.status), [
        h('span', {}, `${steps.length} step${steps.length === 1 ? '' : 's'}`),
        h('span', {}, `${tokens} tokens`),
        h('span', {}, 'stop ', s.stop_reason || '—'),
        s.model && h('span', {}, s.model),
        h('span', {}, 'ended ', time(s.ended_at)),
      ], [
        (s.result || s.error) && h('div', { class: 'node-result' }, s.result || s.error),
        steps.length > 0 && h('details', { 'data-key': `steps-${s.tool_call_id}` }, h('summary', {}, 'steps'), messages(steps)),
      ]));
  });
}

// node is one box of the tree: an icon, a title line, a meta line, extra content.
function node(icon, kind, title, status, metaItems, extra) {
  return h('div', { class: 'node' },
    h('span', { class: `node-icon ${kind}` }, icon),
    h('div', { class: 'node-main' },
      h('div', { class: 'node-line' }, title, status),
      metaItems.length > 0 && h('div', { class: 'node-meta' }, metaItems),
      extra));
}
