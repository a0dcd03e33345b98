// Entry point: theme, API key dialog, server info and the hash router.
import { get, setKeyPrompt, currentKey, storeKey } from './api.js';
import { guard, h, replace } from './ui.js';
import { threadsPage } from './threads.js';
import { queuePage, cronsPage } from './queue.js';

const THEME_STORAGE = 'agentserver.console.theme';
const THEMES = ['system', 'light', 'dark'];

function applyTheme(theme) {
  if (theme === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  document.getElementById('theme-button').textContent = `Theme: ${theme}`;
}

function setupTheme() {
  let theme = localStorage.getItem(THEME_STORAGE) || 'system';
  applyTheme(theme);
  document.getElementById('theme-button').addEventListener('click', () => {
    theme = THEMES[(THEMES.indexOf(theme) + 1) % THEMES.length];
    localStorage.setItem(THEME_STORAGE, theme);
    applyTheme(theme);
  });
}

// askKey opens the key dialog and resolves with the typed key, or null.
function askKey() {
  const dialog = document.getElementById('key-dialog');
  const input = document.getElementById('key-input');
  input.value = currentKey();
  return new Promise((resolve) => {
    const done = (key) => {
      dialog.removeEventListener('close', onClose);
      resolve(key);
    };
    const onClose = () => done(dialog.returnValue === 'save' ? input.value.trim() || null : null);
    dialog.addEventListener('close', onClose);
    dialog.returnValue = '';
    dialog.showModal();
  });
}

function setupKeyDialog() {
  const dialog = document.getElementById('key-dialog');
  document.getElementById('key-form').addEventListener('submit', (e) => {
    e.preventDefault();
    dialog.close('save');
  });
  document.getElementById('key-cancel').addEventListener('click', () => dialog.close(''));
  document.getElementById('key-button').addEventListener('click', async () => {
    const key = await askKey();
    if (key !== null) { storeKey(key); location.reload(); }
  });
  setKeyPrompt(askKey);
}

/** parseRoute reads the hash: #/threads/<tid>/<tab> or #/threads/<tid>/runs/<rid>, #/queue, #/crons. */
function parseRoute() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const page = parts[0] || 'threads';
  if (page !== 'threads') return { page };
  const route = { page, tid: parts[1] || null, tab: parts[2] || 'state', rid: null };
  if (parts[2] === 'runs' && parts[3]) { route.tab = 'runs'; route.rid = parts[3]; }
  return route;
}

async function start() {
  setupTheme();
  setupKeyDialog();
  const app = document.getElementById('app');
  const info = (await guard(() => get('/info'))) || { flags: {}, metadata: {} };
  const ctx = { info, graphs: info.metadata?.graphs || [] };
  document.getElementById('server-version').textContent = info.version ? `v${info.version}` : '';
  const cronsLink = document.querySelector('[data-nav="crons"]');
  cronsLink.hidden = !info.flags?.crons;

  const pages = { threads: threadsPage, queue: queuePage, crons: cronsPage };
  let current = null;
  const route = () => {
    const r = parseRoute();
    for (const a of document.querySelectorAll('[data-nav]')) a.classList.toggle('active', a.dataset.nav === r.page);
    if (current && current.page === r.page && current.view.update) { current.view.update(r); return; }
    current?.view.dispose?.();
    const make = pages[r.page];
    if (!make || (r.page === 'crons' && !info.flags?.crons)) {
      current = null;
      replace(app, h('div', { class: 'page empty' }, 'Nothing here. ', h('a', { href: '#/threads' }, 'Back to threads')));
      return;
    }
    const view = make(ctx);
    current = { page: r.page, view };
    replace(app, view.el);
    view.update?.(r);
  };
  window.addEventListener('hashchange', route);
  route();
}

start();
