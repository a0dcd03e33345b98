// The timeline of a run, built from what the server stores: the run's
// checkpoints in the thread's history. Each checkpoint of a super-step
// holds the writes of the nodes that ran in it (metadata.writes) and when it
// was written, so a step lasted from the checkpoint before it to its own.
// Model calls are the AI messages a node wrote (model, tokens), tool calls
// the tool messages (their arguments come from the AI message that asked
// for them), subagents the async tasks started and the task tool's results,
// and interrupts the pending tasks of the run's last checkpoint.
import { h, json, textOf, duration, ms, tokens, clip } from './ui.js';

const SVG = 'http://www.w3.org/2000/svg';

/** runCheckpoints picks the run's checkpoints out of a thread's history (newest first) and returns them oldest first. */
export function runCheckpoints(history, runId) {
  return (history || []).filter((cp) => cp.metadata?.run_id === runId).reverse();
}

/** interruptsOf lists the pending interrupts of a checkpoint (or thread state). */
export function interruptsOf(cp) {
  if (!cp) return [];
  if (Array.isArray(cp.interrupts) && cp.interrupts.length) return cp.interrupts;
  return (cp.tasks || []).flatMap((t) => t.interrupts || []);
}

// toolCallsById maps tool call ids to the calls of the AI messages in msgs.
function toolCallsById(msgs) {
  const out = new Map();
  for (const m of msgs || []) for (const c of m?.tool_calls || []) out.set(c.id, c);
  return out;
}

// itemsOf turns one node's writes into timeline items.
// An AI message a node writes again (the tools node adds the subagents'
// usage to the message that asked for them) is the same model call: seen
// holds the ids of the AI messages already shown.
function itemsOf(node, write, calls, stepMs, seen) {
  const items = [];
  const msgs = Array.isArray(write?.messages) ? write.messages : [];
  for (const m of msgs) {
    const type = m?.type || m?.role;
    if ((type === 'ai' || type === 'assistant') && m.id && seen.has(m.id)) continue;
    if (m?.id) seen.add(m.id);
    if (type === 'ai' || type === 'assistant') {
      items.push({
        kind: 'model', model: m.response_metadata?.model_name || '', usage: m.usage_metadata, ms: stepMs,
        text: textOf(m.content), calls: (m.tool_calls || []).map((c) => c.name),
      });
    } else if (type === 'tool') {
      const call = calls.get(m.tool_call_id);
      const extra = m.additional_kwargs || {};
      if (m.name === 'task' && extra.subagent_status) {
        items.push({
          kind: 'subagent', how: 'task tool', agent: call?.args?.subagent_type || 'subagent', status: extra.subagent_status,
          usage: extra.subagent_token_usage, model: extra.subagent_model_name, text: textOf(m.content), args: call?.args, ms: stepMs,
        });
      } else {
        items.push({ kind: 'tool', name: m.name || call?.name || 'tool', args: call?.args, result: textOf(m.content), status: m.status || 'success', ms: stepMs });
      }
    } else if (type === 'human' || type === 'user') {
      items.push({ kind: 'input', text: textOf(m.content) });
    }
  }
  for (const rec of Object.values(write?.async_tasks || {})) {
    if (rec && rec.status === 'running' && rec.task_id) {
      items.push({ kind: 'subagent', how: 'async', agent: rec.agent_name, status: rec.status, thread: rec.thread_id || rec.task_id, ms: null });
    }
  }
  const other = Object.keys(write || {}).filter((k) => k !== 'messages' && k !== 'async_tasks');
  if (other.length) items.push({ kind: 'update', channels: Object.fromEntries(other.map((k) => [k, write[k]])) });
  if (items.length === 0 && node !== '__start__') items.push({ kind: 'update', channels: write ?? null });
  return items;
}

/**
 * buildTimeline turns a run's checkpoints (oldest first) into steps
 * {node, step, at, offset, ms, items}; startedAt is when the run started,
 * the start of its first step when it has no input checkpoint. The last
 * step is a pending one when the run's last checkpoint has a next node.
 */
export function buildTimeline(cps, { startedAt, live } = {}) {
  if (!cps.length) return { steps: [], total: 0 };
  const origin = Date.parse(cps[0].metadata?.source === 'input' ? cps[0].created_at : startedAt || cps[0].created_at);
  const steps = [];
  const seen = new Set();
  let prev = cps[0].metadata?.source === 'input' ? cps[0].created_at : startedAt || cps[0].created_at;
  for (const cp of cps) {
    const md = cp.metadata || {};
    if (md.source === 'input') {
      steps.push({ node: 'input', step: md.step, at: cp.created_at, offset: 0, ms: null, items: itemsOf('input', md.writes?.__start__, new Map(), null, seen) });
      continue;
    }
    const stepMs = ms(prev, cp.created_at);
    const calls = toolCallsById(cp.values?.messages);
    for (const [node, write] of Object.entries(md.writes || {})) {
      if (node === '__start__') continue; // the input applied: shown by the input step
      steps.push({ node, step: md.step, at: cp.created_at, offset: Date.parse(prev) - origin, ms: stepMs, items: itemsOf(node, write, calls, stepMs, seen) });
    }
    prev = cp.created_at;
  }
  const last = cps[cps.length - 1];
  const interrupts = interruptsOf(last);
  if (interrupts.length) {
    steps.push({ node: (last.next || []).join(', ') || 'interrupt', step: (last.metadata?.step ?? 0) + 1, at: last.created_at, offset: Date.parse(last.created_at) - origin, ms: null, items: interrupts.map((i) => ({ kind: 'interrupt', value: i.value ?? i })) });
  } else if (live && (last.next || []).length) {
    const now = new Date().toISOString();
    steps.push({ node: last.next.join(', '), step: (last.metadata?.step ?? 0) + 1, at: now, offset: Date.parse(last.created_at) - origin, ms: ms(last.created_at, now), running: true, items: [] });
  }
  const total = Math.max(1, ...steps.map((s) => (s.offset || 0) + (s.ms || 0)));
  return { steps, total };
}

// bar is a small waterfall bar: where in the run the step ran, and how long.
function bar(step, total) {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('class', 'tl-bar');
  svg.setAttribute('viewBox', '0 0 1000 10');
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('aria-hidden', 'true');
  const track = document.createElementNS(SVG, 'rect');
  track.setAttribute('class', 'tl-track');
  track.setAttribute('width', '1000');
  track.setAttribute('height', '10');
  const rect = document.createElementNS(SVG, 'rect');
  rect.setAttribute('class', `tl-fill${step.running ? ' running' : ''}`);
  rect.setAttribute('x', String(Math.min(999, ((step.offset || 0) / total) * 1000)));
  rect.setAttribute('width', String(Math.max(4, ((step.ms || 0) / total) * 1000)));
  rect.setAttribute('height', '10');
  svg.append(track, rect);
  return svg;
}

const KIND_LABEL = { model: 'model call', tool: 'tool call', subagent: 'subagent', interrupt: 'interrupt', input: 'input', update: 'state update' };

function itemView(it, key) {
  const head = h('div', { class: 'tl-item-head' }, h('span', { class: `tl-kind ${it.kind}` }, KIND_LABEL[it.kind] || it.kind));
  const body = [];
  switch (it.kind) {
    case 'model':
      head.append(h('strong', {}, it.model || 'model'), h('span', { class: 'num' }, tokens(it.usage)), h('span', { class: 'num' }, duration(it.ms)));
      if (it.text) body.push(h('div', { class: 'tl-text' }, clip(it.text, 400)));
      if (it.calls.length) body.push(h('div', { class: 'tool-call' }, `→ asks for ${it.calls.join(', ')}`));
      break;
    case 'tool':
      head.append(h('strong', {}, it.name), h('span', { class: `tl-status ${it.status}` }, it.status), h('span', { class: 'num' }, duration(it.ms)));
      body.push(h('details', { 'data-key': `${key}-args` }, h('summary', {}, 'arguments ', h('code', {}, clip(JSON.stringify(it.args ?? {}), 90))), json(it.args ?? {})));
      body.push(h('div', { class: 'tl-text' }, h('span', { class: 'muted' }, 'result: '), clip(it.result, 400)));
      break;
    case 'subagent':
      head.append(h('strong', {}, it.agent), h('span', {}, it.how), h('span', { class: `tl-status ${it.status}` }, it.status));
      if (it.usage) head.append(h('span', { class: 'num' }, tokens(it.usage)));
      if (it.thread) body.push(h('a', { href: `#/threads/${it.thread}`, class: 'mono' }, `open subagent thread ${it.thread}`));
      if (it.text) body.push(h('div', { class: 'tl-text' }, clip(it.text, 300)));
      break;
    case 'interrupt':
      body.push(json(it.value));
      break;
    case 'input':
      body.push(h('div', { class: 'tl-text' }, clip(it.text, 300)));
      break;
    default:
      body.push(h('details', { 'data-key': `${key}-update` }, h('summary', {}, 'wrote ', Object.keys(it.channels || {}).join(', ') || 'nothing'), json(it.channels)));
  }
  return h('li', { class: `tl-item ${it.kind}`, dataset: { kind: it.kind } }, head, body);
}

/** renderTimeline draws the steps as a waterfall list with their items. */
export function renderTimeline({ steps, total }) {
  if (!steps.length) return h('p', { class: 'muted', id: 'run-timeline-empty' }, 'No checkpoints of this run are stored (a run that has not started, or was rolled back).');
  return h('ol', { class: 'timeline', id: 'run-timeline' }, steps.map((s, i) => h('li', { class: `tl-step${s.running ? ' running' : ''}`, dataset: { node: s.node, step: s.step } },
    h('div', { class: 'tl-head' },
      h('span', { class: 'tl-node' }, s.node),
      h('span', { class: 'muted small num' }, `step ${s.step ?? '—'}`),
      h('span', { class: 'muted small num', title: s.at }, `+${duration(s.offset)}`),
      bar(s, total),
      h('span', { class: 'num tl-ms' }, s.running ? 'running…' : duration(s.ms))),
    s.items.length > 0 && h('ul', { class: 'tl-items' }, s.items.map((it, j) => itemView(it, `tl-${i}-${j}`))))));
}
