// @ts-check
/**
 * A laid-out graph as SVG. The graph arrives laid out (the server's
 * graph-layout.ts places every box); this only draws it.
 */
import { h, s } from './dom.js';
import { clip, enc } from './format.js';

/** What the server's layout sends: the shape graph-layout.ts declares. @typedef {import('../graph-layout.js').GraphLayout} Graph */

/**
 * Boxes coloured by state, edges labelled by trigger; job boxes link to the job, the focused one does not.
 * @param {Graph} g
 * @param {string | null} focus
 */
export function drawGraph(g, focus) {
  if (!g.nodes.length) return h('p', { class: 'muted' }, 'Nothing to draw.');
  const byId = new Map(g.nodes.map((n) => [n.id, n]));
  const edges = g.edges.map((e) => {
    const a = byId.get(e.from),
      b = byId.get(e.to);
    if (!a || !b) return null;
    const x1 = a.x + a.width,
      y1 = a.y + a.height / 2,
      x2 = b.x,
      y2 = b.y + b.height / 2;
    const mx = (x1 + x2) / 2;
    return s(
      'g',
      { class: 'edge on-' + e.on },
      s('path', {
        d: 'M' + x1 + ',' + y1 + ' C' + mx + ',' + y1 + ' ' + mx + ',' + y2 + ' ' + x2 + ',' + y2,
        'marker-end': 'url(#arrow)',
      }),
      e.on !== 'member'
        ? s('text', { x: mx, y: (y1 + y2) / 2 - 4, 'text-anchor': 'middle', class: 'edge-label' }, e.on)
        : null,
    );
  });
  const nodes = g.nodes.map((n) => {
    const label = n.kind === 'group' ? n.count + ' × ' + n.label : n.label;
    const sub =
      n.kind === 'batch'
        ? 'batch · ' + n.state
        : (n.role && n.role !== 'member' && n.role !== 'this' ? n.role + ' · ' : '') + n.state;
    const box = s(
      'g',
      { class: 'node st-' + n.state + (n.id === focus ? ' focus' : '') + ' kind-' + n.kind, 'data-id': n.id },
      s('title', null, label + ' (' + n.state + ')' + (n.kind === 'group' ? '' : ' ' + n.id)),
      s('rect', { x: n.x, y: n.y, width: n.width, height: n.height, rx: n.kind === 'batch' ? 12 : 4 }),
      s('text', { x: n.x + 8, y: n.y + 16, class: 'node-label' }, clip(label, 24)),
      s('text', { x: n.x + 8, y: n.y + 31, class: 'node-sub' }, clip(sub, 28)),
    );
    if (n.kind === 'group' || n.id === focus) return box;
    return s('a', { href: (n.kind === 'batch' ? '#/batches/' : '#/jobs/') + enc(n.id) }, box);
  });
  return h(
    'div',
    { class: 'graph' },
    s(
      'svg',
      {
        width: g.width,
        height: g.height,
        viewBox: '0 0 ' + g.width + ' ' + g.height,
        class: 'dag',
        role: 'img',
        'aria-label': 'dependency graph',
      },
      s(
        'defs',
        null,
        s(
          'marker',
          {
            id: 'arrow',
            viewBox: '0 0 10 10',
            refX: 10,
            refY: 5,
            markerWidth: 7,
            markerHeight: 7,
            orient: 'auto-start-reverse',
          },
          s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }),
        ),
      ),
      edges,
      nodes,
    ),
    g.truncated ? h('p', { class: 'muted' }, 'Cut short: the graph is larger than drawn here.') : null,
  );
}
