// The threads page: a searchable list on the left, the open thread on the
// right (state, history with time travel, runs, task tree, live events).
import { get, post, openStream } from './api.js';
import { h, replace, badge, shortId, time, json, messages, guard, debounce, toast, appendEvent } from './ui.js';
import { runView, startRun, graphOf } from './run.js';
import { renderTaskTree } from './tasks.js';

const LIST_REFRESH_MS = 5000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const STATUSES = ['', 'idle', 'busy', 'interrupted', 'error'];

export function threadsPage(ctx) {
  const search = h('input', { type: 'search', id: 'thread-search', class: 'grow', placeholder: 'Thread id, graph, or key=value' });
  const status = h('select', { id: 'thread-status', title: 'Status' }, STATUSES.map((s) => h('option', { value: s }, s || 'any status')));
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

  // query turns the search text into a /threads/search body; text that is
  // neither an id nor key=value filters the page on id and graph.
  const query = () => {
    const text = search.value.trim();
    const body = { limit: 100, sort_by: 'updated_at', sort_order: 'desc' };
    if (status.value) body.status = status.value;
    if (UUID.test(text)) body.ids = [text];
    else if (/^[^=\s]+=.+$/.test(text)) {
      const [k, ...v] = text.split('=');
      body.metadata = { [k]: v.join('=') };
    }
    return { body, filter: UUID.test(text) || text.includes('=') ? '' : text.toLowerCase() };
  };

  async function loadList() {
    const { body, filter } = query();
    const threads = (await guard(() => post('/threads/search', body))) || [];
    const shown = threads.filter((t) => !filter || t.thread_id.includes(filter) || String(t.metadata?.graph_id || '').toLowerCase().includes(filter));
    replace(list, shown.length ? shown.map(threadItem) : h('li', { class: 'empty' }, 'No threads match.'));
  }

  const threadItem = (t) => h('li', {}, h('a', {
    class: `list-item${t.thread_id === selected ? ' selected' : ''}`, href: `#/threads/${t.thread_id}`,
    dataset: { threadId: t.thread_id },
  },
  h('span', { class: 'title' }, t.thread_id),
  badge(t.status),
  h('span', { class: 'sub' }, h('span', {}, t.metadata?.graph_id || 'no runs yet'), time(t.updated_at))));

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
  const el = h('div', {},
    h('section', { class: 'card' },
      h('div', { class: 'card-head' }, liveDot, h('h1', { class: 'mono grow' }, tid), statusSlot),
      h('div', { class: 'card-body' }, meta, h('div', { class: 'mt-12' }, composer))),
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
    class: 'clickable', dataset: { checkpointId: cp.checkpoint?.checkpoint_id },
    onclick: (e) => pick(e.currentTarget, cp, i === 0),
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
  const form = composerForm(ctx, tid, cp.metadata?.graph_id, { checkpointId: id, copy, label: 'Run from here' });
  return h('div', {},
    h('div', { class: 'row' }, h('h3', { class: 'grow' }, newest ? 'Newest checkpoint' : 'Past checkpoint'), h('span', { class: 'mono small' }, id)),
    h('div', { class: 'mt-8 mb-12' }, form,
      h('label', { class: 'small muted row mt-6' }, copy, 'fork: run on a copy of the thread (this thread stays as it is)')),
    stateView(cp, { stacked: true }));
}

// composerForm is the "send a message" form: assistant, text, Run. With a
// checkpoint id it runs from that checkpoint, optionally on a copy.
function composerForm(ctx, tid, defaultGraph, { checkpointId, copy, label = 'Run' } = {}) {
  const assistant = h('select', { class: 'composer-assistant', title: 'Assistant' }, ctx.graphs.map((g) => h('option', { value: g }, g)));
  const text = h('input', { type: 'text', class: 'composer-input', placeholder: checkpointId ? 'Message to continue with (optional)' : 'Message to the agent' });
  const go = h('button', { class: 'btn primary composer-run', type: 'submit' }, label);
  const form = h('form', { class: 'composer', onsubmit: (e) => {
    e.preventDefault();
    guard(async () => {
      let target = tid;
      if (copy?.checked) target = (await post(`/threads/${tid}/copy`, {})).thread_id;
      const run = await startRun(target, { assistant: assistant.value, text: text.value, checkpointId });
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

/** runsTable lists runs with Open and Cancel. */
export function runsTable(runs, { showThread, onChange = () => {} }) {
  const live = (s) => s === 'pending' || s === 'running';
  return h('table', { class: 'runs-table' },
    h('colgroup', {}, h('col', { class: 'w-150' }), showThread && h('col', { class: 'w-150' }), h('col'), h('col', { class: 'w-110' }), h('col', { class: 'w-110' }), h('col', { class: 'w-150' })),
    h('thead', {}, h('tr', {}, h('th', {}, 'run'), showThread && h('th', {}, 'thread'), h('th', {}, 'assistant'), h('th', {}, 'status'), h('th', {}, 'created'), h('th', {}, ''))),
    h('tbody', {}, runs.map((r) => h('tr', { dataset: { runId: r.run_id } },
      h('td', { class: 'mono' }, h('a', { href: `#/threads/${r.thread_id}/runs/${r.run_id}` }, shortId(r.run_id))),
      showThread && h('td', { class: 'mono' }, h('a', { href: `#/threads/${r.thread_id}` }, shortId(r.thread_id))),
      h('td', {}, graphOf(r)),
      h('td', {}, badge(r.status)),
      h('td', {}, time(r.created_at)),
      h('td', { class: 'row end' },
        live(r.status) && h('button', { class: 'btn danger run-cancel', type: 'button', onclick: () => guard(async () => {
          await post(`/threads/${r.thread_id}/runs/${r.run_id}/cancel`, {});
          toast('Cancel requested');
          onChange();
        }) }, 'Cancel'),
        h('a', { class: 'btn', href: `#/threads/${r.thread_id}/runs/${r.run_id}` }, 'Open'))))));
}

