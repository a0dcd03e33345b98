// One run: its record, its live stream (replayed from the first event),
// the text the model is writing, and its task-tool subagents.
import { get, post, openStream } from './api.js';
import { h, replace, badge, time, guard, debounce, toast, textOf, appendEvent } from './ui.js';
import { subagentNodes } from './tasks.js';

/** STREAM_MODES are what runs started here record, so a later join sees them all. */
export const STREAM_MODES = ['values', 'messages-tuple', 'updates', 'custom'];

/** startRun creates a run on a thread from a message (and maybe a checkpoint). */
export function startRun(tid, { assistant, text, checkpointId, input, config }) {
  const body = { assistant_id: assistant, stream_mode: STREAM_MODES };
  if (input !== undefined) body.input = input;
  else if (text) body.input = { messages: [{ role: 'user', content: text }] };
  if (checkpointId) body.checkpoint_id = checkpointId;
  if (config) body.config = config;
  return post(`/threads/${tid}/runs`, body);
}

/** graphOf names the graph a run ran (the server records it in its config). */
export function graphOf(run) {
  return run.kwargs?.config?.configurable?.graph_id || run.assistant_id;
}

const MAX_EVENTS = 300;

/** runView follows one run until it ends; dispose() stops following. */
export function runView(tid, rid, ctx) {
  const path = `/threads/${tid}/runs/${rid}`;
  const statusSlot = h('span', { id: 'run-status' }, badge('…'));
  const meta = h('dl', { class: 'kv' });
  const output = h('div', { class: 'live-output', id: 'run-output' });
  const eventList = h('ul', { class: 'events', id: 'run-events' });
  const subagents = h('div', { id: 'run-subagents' }, h('p', { class: 'muted' }, 'No task-tool subagents in this run.'));
  const cancel = h('button', { class: 'btn danger', id: 'run-cancel', type: 'button', disabled: true, onclick: () => guard(async () => {
    await post(`${path}/cancel`);
    toast('Cancel requested');
  }) }, 'Cancel');
  const rerun = h('button', { class: 'btn', id: 'run-rerun', type: 'button', disabled: true, onclick: () => guard(async () => {
    const k = run.kwargs || {};
    const again = await startRun(tid, { assistant: run.assistant_id, input: k.input ?? null, config: k.config });
    toast('Run started again');
    location.hash = `#/threads/${tid}/runs/${again.run_id}`;
  }) }, 'Rerun');
  const el = h('div', {},
    h('div', { class: 'row mb-12' },
      h('a', { href: `#/threads/${tid}/runs` }, '← all runs'), h('span', { class: 'grow' }),
      h('span', { class: 'mono small muted' }, rid), statusSlot, cancel, rerun),
    h('div', { class: 'split-2' },
      h('div', {}, h('h3', {}, 'Run'), meta, h('h3', { class: 'mt-12' }, 'Output'), output),
      h('div', {}, h('h3', {}, 'Stream'), eventList)),
    h('div', { class: 'mt-12' }, h('h3', {}, 'Task-tool subagents'), subagents));

  let run = null;
  const texts = new Map(); // message id → text written so far

  async function loadRun() {
    run = await guard(() => get(path));
    if (!run) return;
    replace(statusSlot, badge(run.status));
    const live = run.status === 'pending' || run.status === 'running';
    cancel.disabled = !live;
    rerun.disabled = live;
    replace(meta,
      h('dt', {}, 'assistant'), h('dd', {}, graphOf(run)),
      h('dt', {}, 'created'), h('dd', {}, time(run.created_at)),
      h('dt', {}, 'updated'), h('dd', {}, time(run.updated_at)),
      h('dt', {}, 'strategy'), h('dd', {}, run.multitask_strategy || '—'),
      run.error && [h('dt', {}, 'error'), h('dd', {}, String(run.error))]);
  }

  async function loadSubagents() {
    const list = await guard(() => get(`${path}/subagents`));
    if (list && list.length) replace(subagents, h('ul', { class: 'tree' }, subagentNodes(list)));
  }
  const refreshSubagents = debounce(loadSubagents, 300);

  // showText keeps the newest AI message's text in the output panel.
  function showText(id, text, append) {
    texts.set(id, append ? (texts.get(id) || '') + text : text);
    const atBottom = output.scrollTop + output.clientHeight >= output.scrollHeight - 4;
    output.textContent = texts.get(id);
    if (atBottom) output.scrollTop = output.scrollHeight;
  }

  function onEvent(ev) {
    appendEvent(eventList, ev, MAX_EVENTS);
    if (ev.event === 'metadata') loadRun();
    if (ev.event === 'messages' && Array.isArray(ev.data)) {
      const [chunk] = ev.data;
      if (chunk && (chunk.type === 'AIMessageChunk' || chunk.type === 'ai')) showText(chunk.id, textOf(chunk.content), chunk.type === 'AIMessageChunk');
    }
    if (ev.event === 'values') {
      const last = (ev.data?.messages || []).filter((m) => m.type === 'ai').pop();
      if (last && textOf(last.content)) showText(last.id, textOf(last.content), false);
    }
    if (ev.event === 'custom' && String(ev.data?.type || '').startsWith('task_')) refreshSubagents();
  }

  let seen = 0;
  const stream = openStream(`${path}/stream`, {
    lastEventId: -1,
    onEvent: (ev) => { seen++; onEvent(ev); },
    onEnd: () => {
      if (seen === 0) output.textContent = 'The server no longer keeps this run\'s events; its result is in the thread\'s state.';
      loadRun();
      loadSubagents();
    },
  });
  loadRun();
  loadSubagents();
  return { el, dispose() { stream.close(); } };
}

