// The run queue (pending and running runs across threads, from
// POST /runs/search) and the crons page (shown when /info says crons exist).
import { get, post } from './api.js';
import { h, replace, guard, time, shortId } from './ui.js';
import { runsTable } from './threads.js';

const QUEUE_REFRESH_MS = 2000;
const QUEUE_LIMIT = 100;

// A page that re-reads its content every refresh ms while it is shown.
function pollingPage(title, intro, refreshMs, load) {
  const slot = h('div', { class: 'card-body' });
  const stamp = h('span', { class: 'muted small num' });
  const el = h('div', { class: 'page' },
    h('section', { class: 'card' },
      h('div', { class: 'card-head' }, h('h1', { class: 'grow' }, title), stamp),
      h('div', { class: 'card-body muted small' }, intro),
      slot));
  const tick = async () => {
    const content = await load(tick);
    if (content) { replace(slot, content); stamp.textContent = `updated ${new Date().toLocaleTimeString()}`; }
  };
  const timer = setInterval(tick, refreshMs);
  tick();
  return { el, dispose() { clearInterval(timer); } };
}

export function queuePage() {
  return pollingPage('Run queue',
    'Runs waiting for a worker or running, on every thread, oldest first.',
    QUEUE_REFRESH_MS, async (again) => {
      // The Agent Protocol search reports running runs as pending; each
      // run's own record (LangGraph route) tells the two apart.
      const found = await guard(() => post('/runs/search', { status: 'pending', limit: QUEUE_LIMIT }));
      if (!found) return null;
      const runs = (await Promise.all(found.map((r) => get(`/threads/${r.thread_id}/runs/${r.run_id}`).catch(() => null))))
        .filter((r) => r && (r.status === 'pending' || r.status === 'running'))
        .sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
      if (runs.length === 0) return h('p', { class: 'empty', id: 'queue-empty' }, 'The queue is empty: no run is pending or running.');
      return runsTable(runs, { showThread: true, onChange: again });
    });
}

const CRON_REFRESH_MS = 10000;

export function cronsPage() {
  return pollingPage('Crons', 'Scheduled runs, as POST /runs/crons/search lists them.', CRON_REFRESH_MS, async () => {
    const crons = await guard(() => post('/runs/crons/search', { limit: QUEUE_LIMIT }));
    if (!crons) return null;
    if (crons.length === 0) return h('p', { class: 'empty' }, 'No crons.');
    return h('table', { id: 'crons-table' },
      h('colgroup', {}, ['w-130', '', 'w-130', 'w-150', 'w-80', 'w-190', 'w-150'].map((c) => h('col', { class: c || undefined }))),
      h('thead', {}, h('tr', {}, ['cron', 'schedule', 'assistant', 'thread', 'enabled', 'next run', 'end'].map((c) => h('th', {}, c)))),
      h('tbody', {}, crons.map((c) => h('tr', { dataset: { cronId: c.cron_id } },
        h('td', { class: 'mono' }, shortId(c.cron_id)),
        h('td', { class: 'mono', title: c.timezone || 'UTC' }, c.schedule || '—', c.timezone ? ` (${c.timezone})` : ''),
        h('td', { class: 'mono' }, shortId(c.assistant_id)),
        h('td', { class: 'mono' }, c.thread_id ? h('a', { href: `#/threads/${c.thread_id}` }, shortId(c.thread_id)) : 'new thread per run'),
        h('td', {}, c.enabled === false ? 'no' : 'yes'),
        h('td', {}, time(c.next_run_date)),
        h('td', {}, time(c.end_time))))));
  });
}
