// The picture of a graph, drawn as SVG from GET /assistants/{id}/graph
// ({nodes: [{id}], edges: [{source, target, conditional}]}) without any
// library: nodes in layers by their longest distance from __start__,
// edges that go back up (loops) drawn as curves on the right.

const SVG = 'http://www.w3.org/2000/svg';
const NODE_H = 30;
const ROW_GAP = 56;
const COL_GAP = 28;
const PAD = 16;
const LOOP_ROOM = 70;

function el(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  for (const c of children) if (c) e.append(c);
  return e;
}

// backEdges finds the edges that close a cycle, by a depth-first walk from
// the entry (and then from any node not reached).
function backEdges(ids, out) {
  const back = new Set();
  const state = new Map(); // 1: on the walk's stack, 2: done
  const walk = (n) => {
    state.set(n, 1);
    for (const e of out.get(n) || []) {
      const s = state.get(e.target);
      if (s === 1) back.add(e);
      else if (!s) walk(e.target);
    }
    state.set(n, 2);
  };
  if (ids.includes('__start__')) walk('__start__');
  for (const n of ids) if (!state.has(n)) walk(n);
  return back;
}

// layers gives each node its longest distance from a source over the
// edges that are not back edges; __end__ goes below everything else.
function layers(ids, edges, back) {
  const layer = new Map(ids.map((n) => [n, 0]));
  const forward = edges.filter((e) => !back.has(e));
  for (let i = 0; i < ids.length; i++) {
    let changed = false;
    for (const e of forward) {
      if (layer.get(e.target) < layer.get(e.source) + 1) { layer.set(e.target, layer.get(e.source) + 1); changed = true; }
    }
    if (!changed) break;
  }
  if (layer.has('__end__')) layer.set('__end__', Math.max(0, ...[...layer.entries()].filter(([n]) => n !== '__end__').map(([, l]) => l)) + 1);
  return layer;
}

const label = (n) => (n === '__start__' ? 'start' : n === '__end__' ? 'end' : n);
const widthOf = (n) => Math.max(72, label(n).length * 8 + 28);

/**
 * graphSVG draws graph g. active names the nodes running (or waiting) now,
 * visits counts how often each node ran in the run shown.
 */
export function graphSVG(g, { active = [], visits = new Map(), title = 'graph' } = {}) {
  const ids = (g.nodes || []).map((n) => n.id);
  const edges = (g.edges || []).filter((e) => ids.includes(e.source) && ids.includes(e.target));
  const out = new Map();
  for (const e of edges) out.set(e.source, [...(out.get(e.source) || []), e]);
  const back = backEdges(ids, out);
  const layer = layers(ids, edges, back);
  const rows = [];
  for (const n of ids) (rows[layer.get(n)] ||= []).push(n);
  const rowWidth = (r) => r.reduce((w, n) => w + widthOf(n), 0) + COL_GAP * (r.length - 1);
  const inner = Math.max(160, ...rows.filter(Boolean).map(rowWidth));
  const width = inner + PAD * 2 + (back.size ? LOOP_ROOM : 0);
  const height = PAD * 2 + rows.length * NODE_H + (rows.length - 1) * ROW_GAP;
  const pos = new Map();
  rows.forEach((r, i) => {
    if (!r) return;
    let x = PAD + (inner - rowWidth(r)) / 2;
    for (const n of r) {
      pos.set(n, { x, y: PAD + i * (NODE_H + ROW_GAP), w: widthOf(n) });
      x += widthOf(n) + COL_GAP;
    }
  });
  const marker = `arrow-${Math.random().toString(36).slice(2, 8)}`;
  const running = active.filter((n) => ids.includes(n));
  const svg = el('svg', {
    class: 'graph-svg', id: 'graph-svg', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img',
    'aria-label': `${title}: ${ids.map(label).join(', ')}${running.length ? `; now at ${running.join(', ')}` : ''}`,
  });
  svg.append(el('defs', {}, el('marker', { id: marker, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
    el('path', { d: 'M0,0 L10,5 L0,10 z', class: 'graph-arrow' }))));
  let loop = 0;
  for (const e of edges) {
    const a = pos.get(e.source);
    const b = pos.get(e.target);
    let d;
    if (back.has(e) || e.source === e.target) {
      // A loop: out of the source's right side, round the right, into the target's right side.
      loop++;
      const x1 = a.x + a.w;
      const x2 = b.x + b.w;
      const bulge = Math.max(x1, x2) + 24 + loop * 12;
      d = `M${x1},${a.y + NODE_H / 2} C${bulge},${a.y + NODE_H / 2} ${bulge},${b.y + NODE_H / 2} ${x2 + 2},${b.y + NODE_H / 2}`;
    } else {
      d = `M${a.x + a.w / 2},${a.y + NODE_H} L${b.x + b.w / 2},${b.y - 2}`;
    }
    svg.append(el('path', { d, class: `graph-edge${e.conditional ? ' conditional' : ''}`, 'marker-end': `url(#${marker})`, 'data-edge': `${e.source}->${e.target}` }));
  }
  for (const n of ids) {
    const p = pos.get(n);
    const terminal = n === '__start__' || n === '__end__';
    const cls = ['graph-node', terminal && 'terminal', running.includes(n) && 'active', visits.get(n) && 'visited'].filter(Boolean).join(' ');
    const count = visits.get(n);
    svg.append(el('g', { class: cls, 'data-node': n },
      el('title', {}, document.createTextNode(`${n}${count ? ` (ran ${count}×)` : ''}${running.includes(n) ? ' (now)' : ''}`)),
      el('rect', { x: p.x, y: p.y, width: p.w, height: NODE_H, rx: terminal ? NODE_H / 2 : 7 }),
      el('text', { x: p.x + p.w / 2, y: p.y + NODE_H / 2, 'text-anchor': 'middle', 'dominant-baseline': 'central' },
        document.createTextNode(label(n) + (count ? ` ×${count}` : '')))));
  }
  return svg;
}
