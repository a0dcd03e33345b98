// The threads page: a searchable list on the left, the open thread on the
// right (state, history with time travel, runs, task tree, live events).
import { get, post, openStream } from './api.js';
import { h, replace, badge, shortId, time, json, messages, guard, debounce, toast, appendEvent, textOf, clip, firstHuman, duration } from './ui.js';
import { runView, startRun, graphOf, inputPreview, runMs, runTokens } from './run.js';
import { renderTaskTree } from './tasks.js';
import { interruptPanel } from './hitl.js';

const LIST_REFRESH_MS = 5000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const STATUSES = ['', 'idle', 'busy', 'interrupted', 'error'];

export function threadsPage(ctx) {
  const search = h('input', { type: 'search', id: 'thread-search', class: 'grow', placeholder: 'Text, thread id, or key=value', 'aria-label': 'Search threads: text in their messages, a thread id, or key=value of their metadata' });
  const status = h('select', { id: 'thread-status', title: 'Status', 'aria-label': 'Thread status' }, STATUSES.map((s) => h('option', { value: s }, s || 'any status')));
  const list = h('ul', { class: 'list', id: 'thread-list' });
  const detail = h('div', { class: 'content', id: 'thread-detail' });
  const newThread = h('button', { class: 'btn', type: 'button', onclick: () => guard(async () => {
    const t = await post('/threads', {});
    location.hash = `#/threads/${t.thread_id}`;
    await loadList();
  }) }, 'New thread');
  const el = h('div', { class: 'split' },
    h('aside', { class: 'sidebar' },
      h('div', { class: 'sidebar-head' },
        h('div', { class: 'row' }, h('h1', { class: 'grow' }, 'Threads'), newThread),
        h('div', { class: 'row' }, search, status)),
      list),
    detail);

  let selected = null;
  let open = null;
  let listKey = '';

  // query turns the search text into a /threads/search body; text that is
  // neither an id nor key=value is looked for in the threads of the page
  // (ids, graphs, titles and the text of their messages).
  const query = () => {
    const text = search.value.trim();
    const body = { limit: 100, sort_by: 'updated_at', sort_order: 'desc' };
    if (status.value) body.status = status.value;
    if (UUID.test(text)) body.ids = [text];
    else if (/^[^=\s]+=.+$/.test(text)) {
      const [k, ...v] = text.split('=');
      body.metadata = { [k]: v.join('=') };
    }
    return { body, filter: UUID.test(text) || /^[^=\s]+=.+$/.test(text) ? '' : text.toLowerCase() };
  };

  async function loadList() {
    const { body, filter } = query();
    const threads = (await guard(() => post('/threads/search', body))) || [];
    const shown = threads.filter((t) => !filter || searchText(t).includes(filter));
    // A list that did not change is left as it is.
    const key = JSON.stringify(shown.map((t) => [t.thread_id, t.status, t.updated_at, t.state_updated_at]));
    if (key === listKey && list.childElementCount) return;
    listKey = key;
    // A refresh keeps the keyboard focus on the thread it was on.
    const focused = list.contains(document.activeElement) ? document.activeElement.dataset.threadId : null;
    replace(list, shown.length ? nest(shown).map(threadItem) : h('li', { class: 'empty' }, 'No threads match.'));
    if (focused) list.querySelector(`[data-thread-id="${CSS.escape(focused)}"]`)?.focus();
  }

  const threadItem = ({ t, children }) => h('li', {}, threadLink(t, selected),
    children.length > 0 && h('ul', { class: 'list-children', 'aria-label': 'subagent threads' }, children.map((c) => h('li', {}, threadLink(c, selected, true)))));

  const reload = debounce(loadList, 250);
  search.addEventListener('input', reload);
  status.addEventListener('change', reload);
  const timer = setInterval(loadList, LIST_REFRESH_MS);
  loadList();

  return {
    el,
    update(route) {
      selected = route.tid;
      for (const a of list.querySelectorAll('.list-item')) a.classList.toggle('selected', a.dataset.threadId === selected);
      if (!route.tid) {
        open?.dispose();
        open = null;
        replace(detail, h('div', { class: 'empty' }, 'Pick a thread on the left, or start a new one.'));
        return;
      }
      if (open && open.tid === route.tid) { open.update(route); return; }
      open?.dispose();
      open = threadDetail(route, ctx, loadList);
      replace(detail, open.el);
      open.update(route);
    },
    dispose() { clearInterval(timer); open?.dispose(); },
  };
}

/** threadTitle names a thread: its first human message, else its graph. */
export function threadTitle(t) {
  const first = firstHuman(t.values?.messages);
  return first ? clip(first, 90) : t.metadata?.graph_id ? `${t.metadata.graph_id} thread` : 'empty thread';
}

// threadPreview is the newest message of a thread, on one line.
function threadPreview(t) {
  const msgs = t.values?.messages || [];
  const last = msgs[msgs.length - 1];
  if (!last) return 'no messages yet';
  const who = last.type === 'human' || last.role === 'user' ? 'user' : last.type === 'tool' ? `tool ${last.name || ''}`.trim() : 'agent';
  const text = textOf(last.content) || (last.tool_calls || []).map((c) => `→ ${c.name}`).join(' ');
  return `${who}: ${clip(text, 120)}`;
}

// searchText is what a text search looks in: id, graph, metadata values and messages.
function searchText(t) {
  const msgs = (t.values?.messages || []).map((m) => textOf(m.content)).join('\n');
  return [t.thread_id, t.metadata?.graph_id, ...Object.values(t.metadata || {}).map(String), msgs].join('\n').toLowerCase();
}

// nest puts the subagent threads of the page under the supervisor thread
// that started them (metadata.parent_thread_id), keeping the page's order.
function nest(threads) {
  const ids = new Set(threads.map((t) => t.thread_id));
  const children = new Map();
  for (const t of threads) {
    const p = t.metadata?.parent_thread_id;
    if (p && ids.has(p)) children.set(p, [...(children.get(p) || []), t]);
  }
  return threads.filter((t) => !(t.metadata?.parent_thread_id && ids.has(t.metadata.parent_thread_id)))
    .map((t) => ({ t, children: children.get(t.thread_id) || [] }));
}

// threadLink is one row of the thread list: title, status, preview, graph and time.
function threadLink(t, selected, child = false) {
  const agent = t.metadata?.async_task_agent;
  const parent = t.metadata?.parent_thread_id;
  return h('a', {
    class: `list-item${child ? ' child' : ''}${t.thread_id === selected ? ' selected' : ''}`, href: `#/threads/${t.thread_id}`,
    dataset: { threadId: t.thread_id, parentThreadId: parent },
  },
  h('span', { class: 'title' }, agent && h('span', { class: 'chip' }, agent), threadTitle(t)),
  badge(t.status),
  h('span', { class: 'preview' }, threadPreview(t)),
  h('span', { class: 'sub' },
    h('span', {}, t.metadata?.graph_id || 'no runs yet', ' · ', h('span', { class: 'mono' }, shortId(t.thread_id)),
      parent && !child ? [' · subagent of ', h('span', { class: 'mono' }, shortId(parent))] : null),
    time(t.updated_at)));
}

const TABS = [['state', 'State'], ['history', 'History'], ['runs', 'Runs'], ['tasks', 'Task tree'], ['events', 'Live events']];
const MAX_EVENTS = 200;
const TREE_POLL_MS = 2000;

// threadDetail is one open thread. It follows the thread's own stream
// (GET /threads/{id}/stream) and refreshes what is on screen when events come.
function threadDetail(first, ctx, refreshList) {
  const tid = first.tid;
  const base = `/threads/${tid}`;
  const statusSlot = h('span', { id: 'thread-status-badge' }, badge('…'));
  const liveDot = h('span', { class: 'live-dot', id: 'live-dot', title: 'thread stream' });
  const meta = h('dl', { class: 'kv' });
  const tabs = h('nav', { class: 'tabs' }, TABS.map(([id, label]) => h('a', { href: `#/threads/${tid}/${id}`, 'data-tab': id }, label)));
  const body = h('div', { class: 'card-body', id: 'tab-body' });
  const composer = composerForm(ctx, tid, undefined);
  const title = h('h1', { class: 'grow thread-title', id: 'thread-title' }, tid);
  const relations = h('div', { id: 'thread-relations', class: 'relations' });
  const hitl = h('div', { id: 'thread-hitl' });
  const el = h('div', {},
    h('section', { class: 'card' },
      h('div', { class: 'card-head' }, liveDot, title, statusSlot),
      h('div', { class: 'card-body' }, h('div', { class: 'mono small muted mb-8', id: 'thread-id' }, tid), meta, relations, h('div', { class: 'mt-12' }, composer))),
    hitl,
    h('section', { class: 'card' }, tabs, body));

  let thread = null;
  let route = first;
  let child = null; // the tab's own resources (a run view, a timer)
  const eventList = h('ul', { class: 'events', id: 'thread-events' });

  async function loadThread() {
    thread = await guard(() => get(base));
    if (!thread) return;
    replace(statusSlot, badge(thread.status));
    replace(meta,
      h('dt', {}, 'graph'), h('dd', {}, thread.metadata?.graph_id || '—'),
      h('dt', {}, 'created'), h('dd', {}, time(thread.created_at)),
      h('dt', {}, 'updated'), h('dd', {}, time(thread.updated_at)),
      h('dt', {}, 'metadata'), h('dd', {}, h('code', {}, JSON.stringify(thread.metadata || {}))));
    composer.setDefault(thread.metadata?.graph_id);
    title.textContent = threadTitle(thread);
    showInterrupts();
    loadRelations();
  }

  // showInterrupts puts the approval panel above the tabs while the thread
  // waits on an interrupt; it is rebuilt only when the interrupts change,
  // so a decision being typed stays.
  let shownInterrupts = '';
  function showInterrupts() {
    const pending = thread.status === 'interrupted' ? Object.values(thread.interrupts || {}).flat() : [];
    const key = JSON.stringify(pending.map((i) => i.id ?? i));
    if (key === shownInterrupts) return;
    shownInterrupts = key;
    if (!pending.length) { replace(hitl); return; }
    replace(hitl, h('section', { class: 'card hitl-card' }, h('div', { class: 'card-body' },
      interruptPanel(pending, (command) => startRun(tid, { assistant: thread.metadata?.graph_id || thread.metadata?.assistant_id, command })))));
  }

  // loadRelations links the supervisor thread that started this one (its
  // metadata) and the subagent threads this one started (theirs).
  let relationsKey = '';
  async function loadRelations() {
    const md = thread.metadata || {};
    const kids = (await guard(() => post('/threads/search', { metadata: { parent_thread_id: tid }, limit: 100, sort_by: 'created_at', sort_order: 'asc' }))) || [];
    const key = JSON.stringify([md.parent_thread_id, kids.map((k) => [k.thread_id, k.status])]);
    if (key === relationsKey) return;
    relationsKey = key;
    replace(relations,
      md.parent_thread_id && h('p', { class: 'relation', id: 'thread-parent' },
        h('span', { class: 'chip' }, md.async_task_agent || 'subagent'), ' started by supervisor thread ',
        h('a', { href: `#/threads/${md.parent_thread_id}`, class: 'mono' }, shortId(md.parent_thread_id)),
        md.parent_run_id && [' in run ', h('a', { href: `#/threads/${md.parent_thread_id}/runs/${md.parent_run_id}`, class: 'mono' }, shortId(md.parent_run_id))]),
      kids.length > 0 && h('div', { class: 'relation', id: 'thread-children' }, h('span', { class: 'muted' }, `Subagent threads (${kids.length}): `),
        kids.map((k) => h('a', { href: `#/threads/${k.thread_id}`, class: 'child-link', dataset: { threadId: k.thread_id } },
          h('span', { class: 'chip' }, k.metadata?.async_task_agent || k.metadata?.graph_id || 'subagent'), ' ', clip(threadTitle(k), 40), ' ', badge(k.status)))));
  }

  const renderers = {
    state: renderState,
    history: (slot) => renderHistory(slot, ctx, tid),
    runs: (slot) => renderRuns(slot, tid),
    tasks: (slot) => renderTaskTree(slot, tid),
    events: (slot) => replace(slot, h('p', { class: 'muted small' }, 'Events of every run of this thread, as they happen (newest last).'), eventList),
  };

  async function renderState(slot) {
    const st = await guard(() => get(`${base}/state`));
    if (st) replace(slot, stateView(st));
  }

  // paint renders the tab off-screen and swaps it in at once, keeping open
  // <details>, so a refresh never shows a half-built or collapsed view. A
  // paint overtaken by a newer one is dropped.
  let painted = 0;
  async function paint() {
    const n = ++painted;
    const slot = h('div');
    await (renderers[route.tab] || renderers.state)(slot);
    if (n !== painted || !slot.childElementCount) return;
    for (const d of body.querySelectorAll('details[open][data-key]')) {
      slot.querySelector(`details[data-key="${CSS.escape(d.dataset.key)}"]`)?.setAttribute('open', '');
    }
    replace(body, slot);
  }

  function showTab() {
    child?.dispose?.();
    child = null;
    painted++;
    for (const a of tabs.querySelectorAll('a')) a.classList.toggle('active', a.dataset.tab === route.tab);
    if (route.rid) {
      child = runView(tid, route.rid, ctx);
      replace(body, child.el);
      return;
    }
    paint();
  }

  // refresh re-reads what the open tab shows; a run view follows its own
  // stream, and history is left where the user is travelling.
  const refresh = debounce(() => {
    loadThread();
    refreshList();
    if (!route.rid && route.tab !== 'events' && route.tab !== 'history') paint();
  }, 400);

  // Subagents run on threads of their own, whose events this thread's stream
  // does not carry: while the tree shows one still working, it is re-read.
  const poll = setInterval(() => {
    if (!route.rid && route.tab === 'tasks' && body.querySelector('[data-live="1"]')) paint();
  }, TREE_POLL_MS);

  const stream = openStream(`${base}/stream`, {
    reconnect: true,
    onState: (live) => liveDot.classList.toggle('on', live),
    onEvent: (ev) => {
      appendEvent(eventList, ev, MAX_EVENTS);
      refresh();
    },
  });

  loadThread();
  return {
    tid, el,
    update(r) {
      const changed = r.tab !== route.tab || r.rid !== route.rid || !child && !body.childElementCount;
      route = r;
      if (changed) showTab();
    },
    dispose() { stream.close(); clearInterval(poll); child?.dispose?.(); },
  };
}

/** stateView shows a ThreadState: its messages, the other values, and where it stands. */
function stateView(st, { stacked = false } = {}) {
  const values = st.values || {};
  const { messages: msgs, ...rest } = values;
  return h('div', { class: stacked ? 'stack' : 'split-2' },
    h('div', {}, h('h3', {}, 'Messages'), messages(msgs)),
    h('div', {},
      h('h3', {}, 'Checkpoint'),
      h('dl', { class: 'kv' },
        h('dt', {}, 'checkpoint'), h('dd', { class: 'mono', id: 'state-checkpoint' }, st.checkpoint?.checkpoint_id || '—'),
        h('dt', {}, 'created'), h('dd', {}, time(st.created_at)),
        h('dt', {}, 'next'), h('dd', {}, (st.next || []).join(', ') || '—'),
        h('dt', {}, 'step'), h('dd', {}, st.metadata?.step ?? '—')),
      h('h3', { class: 'mt-12' }, 'Other values'),
      json(rest)));
}

// renderHistory lists the thread's checkpoints; picking one shows its state
// (time travel) with a form to run from it, on this thread or on a copy.
async function renderHistory(slot, ctx, tid) {
  const history = await guard(() => post(`/threads/${tid}/history`, { limit: 100 }));
  if (!history) return;
  if (history.length === 0) { replace(slot, h('p', { class: 'empty' }, 'No checkpoints yet.')); return; }
  const pane = h('div', { id: 'checkpoint-pane' });
  const rows = history.map((cp, i) => h('tr', {
    class: 'clickable', tabindex: '0', 'aria-label': `checkpoint at step ${cp.metadata?.step ?? ''} (${cp.metadata?.source ?? ''})`,
    dataset: { checkpointId: cp.checkpoint?.checkpoint_id },
    onclick: (e) => pick(e.currentTarget, cp, i === 0),
    onkeydown: (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); pick(e.currentTarget, cp, i === 0); } },
  },
  h('td', { class: 'mono' }, shortId(cp.checkpoint?.checkpoint_id)),
  h('td', { class: 'num' }, cp.metadata?.step ?? ''),
  h('td', {}, cp.metadata?.source ?? ''),
  h('td', {}, (cp.next || []).join(', ') || '—'),
  h('td', {}, time(cp.created_at))));
  const table = h('table', { id: 'history-table' },
    h('colgroup', {}, h('col', { class: 'w-120' }), h('col', { class: 'w-44' }), h('col', { class: 'w-64' }), h('col'), h('col', { class: 'w-110' })),
    h('thead', {}, h('tr', {}, h('th', {}, 'checkpoint'), h('th', {}, 'step'), h('th', {}, 'source'), h('th', {}, 'next'), h('th', {}, 'time'))),
    h('tbody', {}, rows));
  function pick(row, cp, newest) {
    for (const r of table.querySelectorAll('tr.selected')) r.classList.remove('selected');
    row.classList.add('selected');
    replace(pane, checkpointView(ctx, tid, cp, newest));
  }
  replace(slot, h('div', { class: 'split-history' }, h('div', { class: 'history-list' }, table), pane));
  pick(rows[0], history[0], true);
}

function checkpointView(ctx, tid, cp, newest) {
  const id = cp.checkpoint?.checkpoint_id;
  const copy = h('input', { type: 'checkbox', id: 'fork-copy' });
  const original = JSON.stringify(cp.values || {}, null, 2);
  const editor = h('textarea', { class: 'state-editor', id: 'state-editor', rows: 14, spellcheck: 'false', 'aria-label': 'the checkpoint\'s values (JSON)' });
  editor.value = original;
  // prepare writes the edited values as a new checkpoint whose parent is
  // this one (POST /threads/{id}/state with checkpoint_id): only the
  // channels that changed, so messages are replaced by id, not doubled.
  const prepare = async (target) => {
    if (editor.value === original) return id;
    let values;
    try { values = JSON.parse(editor.value); } catch (err) { throw new Error(`The edited state is not JSON: ${err.message}`); }
    const changed = Object.fromEntries(Object.entries(values).filter(([k, v]) => JSON.stringify(v) !== JSON.stringify(cp.values?.[k])));
    const res = await post(`/threads/${target}/state`, { values: changed, checkpoint_id: id });
    return res.checkpoint.checkpoint_id;
  };
  const form = composerForm(ctx, tid, cp.metadata?.graph_id, { checkpointId: id, copy, prepare, label: 'Run from here' });
  return h('div', {},
    h('div', { class: 'row' }, h('h3', { class: 'grow' }, newest ? 'Newest checkpoint' : 'Past checkpoint'), h('span', { class: 'mono small' }, id)),
    h('div', { class: 'mt-8 mb-12' }, form,
      h('label', { class: 'small muted row mt-6' }, copy, 'fork: run on a copy of the thread (this thread stays as it is)')),
    h('details', { class: 'mb-12', id: 'state-edit' }, h('summary', {}, 'Edit the state before running'),
      h('p', { class: 'small muted' }, 'Change any value; Run from here first saves the changed values as a new checkpoint after this one, then runs from it.'),
      editor),
    stateView(cp, { stacked: true }));
}

// composerForm is the "send a message" form: assistant, text, Run. With a
// checkpoint id it runs from that checkpoint, optionally on a copy.
function composerForm(ctx, tid, defaultGraph, { checkpointId, copy, prepare, label = 'Run' } = {}) {
  const assistant = h('select', { class: 'composer-assistant', title: 'Assistant', 'aria-label': 'Assistant' }, ctx.graphs.map((g) => h('option', { value: g }, g)));
  const text = h('input', { type: 'text', class: 'composer-input', 'aria-label': 'Message', placeholder: checkpointId ? 'Message to continue with (optional)' : 'Message to the agent' });
  const go = h('button', { class: 'btn primary composer-run', type: 'submit' }, label);
  const form = h('form', { class: 'composer', onsubmit: (e) => {
    e.preventDefault();
    guard(async () => {
      let target = tid;
      if (copy?.checked) target = (await post(`/threads/${tid}/copy`, {})).thread_id;
      const from = prepare ? await prepare(target) : checkpointId;
      const run = await startRun(target, { assistant: assistant.value, text: text.value, checkpointId: from });
      text.value = '';
      toast(copy?.checked ? 'Forked into a new thread' : 'Run started');
      location.hash = `#/threads/${target}/runs/${run.run_id}`;
    });
  } }, assistant, text, go);
  form.setDefault = (g) => { if (g && !form.dataset.touched) assistant.value = g; };
  assistant.addEventListener('change', () => { form.dataset.touched = '1'; });
  form.setDefault(defaultGraph);
  return form;
}

// renderRuns lists the thread's runs with their actions.
async function renderRuns(slot, tid) {
  const runs = await guard(() => get(`/threads/${tid}/runs?limit=50`));
  if (!runs) return;
  if (runs.length === 0) { replace(slot, h('p', { class: 'empty' }, 'No runs yet. Send a message above.')); return; }
  replace(slot, runsTable(runs, { showThread: false }));
}

/** runsTable lists runs with what they were asked, how long they took and their tokens, with Open and Cancel. */
export function runsTable(runs, { showThread, onChange = () => {} }) {
  const live = (s) => s === 'pending' || s === 'running';
  return h('table', { class: 'runs-table' },
    h('colgroup', {}, h('col', { class: 'w-110' }), showThread && h('col', { class: 'w-110' }), h('col'), h('col', { class: 'w-100' }), h('col', { class: 'w-110' }), h('col', { class: 'w-80' }), h('col', { class: 'w-80' }), h('col', { class: 'w-100' }), h('col', { class: 'w-130' })),
    h('thead', {}, h('tr', {}, h('th', {}, 'run'), showThread && h('th', {}, 'thread'), h('th', {}, 'input'), h('th', {}, 'assistant'), h('th', {}, 'status'),
      h('th', { class: 'r' }, 'duration'), h('th', { class: 'r' }, 'tokens'), h('th', {}, 'created'), h('th', {}, h('span', { class: 'sr-only' }, 'actions')))),
    h('tbody', {}, runs.map((r) => h('tr', { dataset: { runId: r.run_id } },
      h('td', { class: 'mono' }, h('a', { href: `#/threads/${r.thread_id}/runs/${r.run_id}` }, shortId(r.run_id))),
      showThread && h('td', { class: 'mono' }, h('a', { href: `#/threads/${r.thread_id}` }, shortId(r.thread_id))),
      h('td', { class: 'run-input', title: inputPreview(r) }, inputPreview(r)),
      h('td', {}, graphOf(r)),
      h('td', {}, badge(r.status)),
      h('td', { class: 'num r run-duration' }, duration(runMs(r))),
      h('td', { class: 'num r run-tokens' }, runTokens(r) ?? '—'),
      h('td', {}, time(r.created_at)),
      h('td', { class: 'row end' },
        live(r.status) && h('button', { class: 'btn danger run-cancel', type: 'button', onclick: () => guard(async () => {
          await post(`/threads/${r.thread_id}/runs/${r.run_id}/cancel`, {});
          toast('Cancel requested');
          onChange();
        }) }, 'Cancel'),
        h('a', { class: 'btn', href: `#/threads/${r.thread_id}/runs/${r.run_id}` }, 'Open'))))));
}
