// One run: its record (status, attempt, times, tokens), input and output,
// the graph with the node it is at, the timeline of its steps read from
// its checkpoints, an interrupt it waits on, its live stream (replayed
// from the first event while the server keeps it) and its task-tool
// subagents. Everything but the stream is read from what the server
// stores, so a finished run, or one from before a restart, shows the same.
import { get, post, openStream } from './api.js';
import { h, replace, badge, time, guard, debounce, toast, textOf, appendEvent, json, messages, duration, ms, tokens, clip, lastAI } from './ui.js';
import { subagentNodes } from './tasks.js';
import { runCheckpoints, buildTimeline, renderTimeline, interruptsOf } from './timeline.js';
import { graphSVG } from './graph.js';
import { interruptPanel } from './hitl.js';

/** STREAM_MODES are what runs started here record, so a later join sees them all. */
export const STREAM_MODES = ['values', 'messages-tuple', 'updates', 'custom'];

/** startRun creates a run on a thread from a message, an input or a command (and maybe a checkpoint). */
export function startRun(tid, { assistant, text, checkpointId, input, config, command }) {
  const body = { assistant_id: assistant, stream_mode: STREAM_MODES };
  if (command !== undefined) body.command = command;
  else if (input !== undefined) body.input = input;
  else if (text) body.input = { messages: [{ role: 'user', content: text }] };
  if (checkpointId) body.checkpoint_id = checkpointId;
  if (config) body.config = config;
  return post(`/threads/${tid}/runs`, body);
}

/** graphOf names the graph a run ran (the server records it in its config). */
export function graphOf(run) {
  return run.kwargs?.config?.configurable?.graph_id || run.assistant_id;
}

const live = (s) => s === 'pending' || s === 'running';

/** runMs is how long a run ran (so far, while it runs); null before it started. */
export function runMs(run) {
  if (!run.started_at) return null;
  return ms(run.started_at, run.ended_at || (live(run.status) ? new Date().toISOString() : run.updated_at));
}

/** inputPreview is one line saying what a run was asked. */
export function inputPreview(run) {
  const k = run.kwargs || {};
  if (k.command && Object.keys(k.command).length) return `command ${clip(JSON.stringify(k.command), 80)}`;
  const msgs = k.input?.messages;
  if (Array.isArray(msgs) && msgs.length) return clip(textOf(msgs[msgs.length - 1].content), 120);
  if (k.input && Object.keys(k.input).length) return clip(JSON.stringify(k.input), 120);
  return 'continue (no input)';
}

/** runTokens is a run's total tokens, subagents' included, or null. */
export function runTokens(run) {
  const u = run.metadata?.usage;
  return u && u.total_tokens ? u.total_tokens : null;
}

const MAX_EVENTS = 300;
const HISTORY_LIMIT = 500;

/** runView follows one run until it ends; dispose() stops following. */
export function runView(tid, rid) {
  const path = `/threads/${tid}/runs/${rid}`;
  const statusSlot = h('span', { id: 'run-status' }, badge('…'));
  const meta = h('dl', { class: 'kv', id: 'run-meta' });
  const input = h('div', { id: 'run-input' });
  const output = h('div', { class: 'live-output', id: 'run-output', tabindex: '0', 'aria-label': 'run output' });
  const hitl = h('div', { id: 'run-hitl' });
  const graphSlot = h('div', { class: 'graph-box', id: 'run-graph' }, h('p', { class: 'muted' }, 'Loading the graph…'));
  const timelineSlot = h('div', { id: 'run-timeline-box' }, h('p', { class: 'muted' }, 'Reading the run\'s checkpoints…'));
  const eventList = h('ul', { class: 'events', id: 'run-events', tabindex: '0', 'aria-label': 'stream events' });
  const streamNote = h('p', { class: 'muted small', id: 'run-stream-note' }, 'Events as the run streams them, from its first.');
  const streamBox = h('details', { class: 'mt-12', id: 'run-stream', open: true }, h('summary', {}, 'Stream'), streamNote, eventList);
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
      h('div', {}, h('h3', {}, 'Run'), meta),
      h('div', {}, h('h3', {}, 'Input'), input, h('h3', { class: 'mt-12' }, 'Output'), output)),
    hitl,
    h('div', { class: 'split-graph mt-12' },
      h('div', {}, h('h3', {}, 'Graph'), graphSlot),
      h('div', {}, h('h3', {}, 'Timeline'), timelineSlot)),
    streamBox,
    h('div', { class: 'mt-12' }, h('h3', {}, 'Task-tool subagents'), subagents));

  let run = null;
  let graph = null;
  let streamed = false; // the output panel shows streamed text
  let graphKey = ''; // what the drawn graph shows
  const texts = new Map(); // message id → text written so far

  async function loadRun() {
    run = await guard(() => get(path));
    if (!run) return;
    replace(statusSlot, badge(run.status));
    cancel.disabled = !live(run.status);
    rerun.disabled = live(run.status);
    const u = run.metadata?.usage;
    replace(meta,
      h('dt', {}, 'assistant'), h('dd', {}, graphOf(run)),
      h('dt', {}, 'status'), h('dd', { id: 'run-status-text' }, run.status),
      h('dt', {}, 'attempt'), h('dd', { class: 'num', id: 'run-attempt' }, run.attempt ?? '—'),
      h('dt', {}, 'created'), h('dd', {}, time(run.created_at)),
      h('dt', {}, 'started'), h('dd', {}, time(run.started_at)),
      h('dt', {}, 'ended'), h('dd', {}, time(run.ended_at)),
      h('dt', {}, 'duration'), h('dd', { class: 'num', id: 'run-duration' }, duration(runMs(run))),
      h('dt', {}, 'queued'), h('dd', { class: 'num' }, duration(run.started_at ? ms(run.created_at, run.started_at) : null)),
      h('dt', {}, 'tokens'), h('dd', { class: 'num', id: 'run-tokens' }, tokens(u), u?.calls ? ` · ${u.calls} model call${u.calls === 1 ? '' : 's'}` : ''),
      u?.subagent_tokens ? [h('dt', {}, 'subagents'), h('dd', { class: 'num' }, `${u.subagent_tokens} tok`)] : null,
      h('dt', {}, 'strategy'), h('dd', {}, run.multitask_strategy || '—'),
      run.error && [h('dt', {}, 'error'), h('dd', { class: 'error-text' }, String(run.error))]);
    const k = run.kwargs || {};
    if (k.command && Object.keys(k.command).length) replace(input, h('p', { class: 'small muted' }, 'A command (resume, update or goto):'), json(k.command));
    else if (Array.isArray(k.input?.messages)) replace(input, messages(k.input.messages));
    else if (k.input && Object.keys(k.input).length) replace(input, json(k.input));
    else replace(input, h('p', { class: 'muted' }, 'No input: the run continued from the thread\'s checkpoint.'));
    if (!graphAsked) loadGraph();
  }

  // loadGraph reads the assistant's graph once, then the steps that light it.
  let graphAsked = false;
  async function loadGraph() {
    graphAsked = true;
    graph = await guard(() => get(`/assistants/${run.assistant_id}/graph`));
    if (!graph) replace(graphSlot, h('p', { class: 'muted' }, 'This assistant has no graph to draw.'));
    loadSteps();
  }

  // loadSteps reads the run's checkpoints and the thread (for a pending
  // interrupt) and redraws the timeline, the graph and the stored output.
  async function loadSteps() {
    const [history, thread] = await Promise.all([
      guard(() => post(`/threads/${tid}/history`, { limit: HISTORY_LIMIT })),
      guard(() => get(`/threads/${tid}`)),
    ]);
    if (!history || !run) return;
    const cps = runCheckpoints(history, rid);
    const timeline = buildTimeline(cps, { startedAt: run.started_at, live: live(run.status) });
    replace(timelineSlot, renderTimeline(timeline));
    const last = cps[cps.length - 1];
    const waiting = last && thread?.status === 'interrupted' && history[0]?.checkpoint?.checkpoint_id === last.checkpoint?.checkpoint_id
      ? interruptsOf(history[0]) : [];
    if (waiting.length) {
      replace(hitl, h('section', { class: 'card mt-12 hitl-card' }, h('div', { class: 'card-body' },
        interruptPanel(waiting, (command) => startRun(tid, { assistant: run.assistant_id, command })))));
    } else replace(hitl);
    if (graph) {
      const visits = new Map();
      for (const s of timeline.steps) if (s.node !== 'input' && !s.running && !s.items.some((i) => i.kind === 'interrupt')) visits.set(s.node, (visits.get(s.node) || 0) + 1);
      const active = live(run.status) || waiting.length ? (last?.next || []) : [];
      // Redrawn only when what it shows changed.
      const key = JSON.stringify([active, [...visits], waiting.length]);
      if (key !== graphKey) graphKey = key;
      else return showOutput(last, waiting);
      replace(graphSlot, graphSVG(graph, { active, visits, title: `graph ${graphOf(run)}` }),
        h('p', { class: 'small muted', id: 'graph-legend' }, active.length ? `${waiting.length ? 'Waiting at' : 'Running'}: ${active.join(', ')}` : 'Nodes show how often they ran in this run; dashed edges are conditional.'));
    }
    showOutput(last, waiting);
  }

  // showOutput puts the answer of the run's last checkpoint in the output
  // panel once the run ended, unless its stream showed it already.
  function showOutput(last, waiting) {
    if (streamed || live(run.status)) return;
    const final = lastAI(last?.values?.messages);
    output.textContent = final ? textOf(final.content) : waiting.length ? 'Waiting for a human (see above).' : 'No answer in the run\'s last checkpoint.';
  }
  const refreshSteps = debounce(() => { loadRun().then(loadSteps); }, 300);

  async function loadSubagents() {
    const list = await guard(() => get(`${path}/subagents`));
    if (list && list.length) replace(subagents, h('ul', { class: 'tree' }, subagentNodes(list)));
  }
  const refreshSubagents = debounce(loadSubagents, 300);

  // showText keeps the newest AI message's text in the output panel.
  function showText(id, text, append) {
    streamed = true;
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
      const last = lastAI(ev.data?.messages);
      if (last) showText(last.id, textOf(last.content), false);
      refreshSteps();
    }
    if (ev.event === 'updates') refreshSteps();
    if (ev.event === 'custom' && String(ev.data?.type || '').startsWith('task_')) refreshSubagents();
  }

  let seen = 0;
  const stream = openStream(`${path}/stream`, {
    lastEventId: -1,
    onEvent: (ev) => { seen++; onEvent(ev); },
    onEnd: () => {
      if (seen === 0) {
        streamNote.textContent = 'The server no longer keeps this run\'s events; the timeline and output are read from its checkpoints.';
        streamBox.removeAttribute('open');
      }
      loadRun().then(loadSteps);
      loadSubagents();
    },
  });
  // While the run runs, its duration and the timeline's pending step grow.
  const ticker = setInterval(() => { if (run && live(run.status)) refreshSteps(); }, 2000);
  loadRun();
  loadSubagents();
  return { el, dispose() { stream.close(); clearInterval(ticker); } };
}
