/**
 * Batches: the list with progress and counts; one batch with its counts,
 * its graph (members, the batch, its then/catch/finally callbacks), its
 * members paged and filtered by state, and cancel. The graph arrives laid
 * out (the server places every box); this draws it as SVG.
 */
export const SCRIPT_BATCHES = String.raw`
const BATCH_STATES = ['executing', 'succeeded', 'failed', 'cancelled'];
const COUNTS = ['pending', 'succeeded', 'failed', 'cancelled', 'skipped'];

views.batches = (params) => {
  const state = params.get('state') || '';
  const before = params.get('before') || '';
  const hashFor = (changes) => {
    const q = new URLSearchParams(Object.entries(Object.assign({ state, before }, changes)).filter(([, v]) => v));
    return '#/batches' + (q.toString() ? '?' + q.toString() : '');
  };
  return {
    title: 'Batches',
    nav: 'batches',
    toolbar: () => {
      const select = h('select', { id: 'batch-state', 'aria-label': 'state', onchange: () => { location.hash = hashFor({ state: select.value, before: '' }); } },
        h('option', { value: '' }, 'all states'), BATCH_STATES.map((st) => h('option', { value: st, selected: st === state }, st)));
      return h('div', { class: 'filters' }, select);
    },
    load: () => api('/batches?limit=50' + (state ? '&state=' + enc(state) : '') + (before ? '&before=' + enc(before) : '')),
    render: (page) => h('div', null,
      table(['batch', 'state', 'progress', ...COUNTS.map((c) => ({ attrs: { class: 'n' }, text: c })), { attrs: { class: 'n' }, text: 'total' }, 'created', 'settled'],
        page.batches.map((b) => h('tr', { 'data-id': b.id },
          td(batchLink(b.id, b.name || shortId(b.id))), td(badge(b.state)), td(progressBar(b.progress)),
          COUNTS.map((c) => td(num(b[c]), 'n' + (c === 'failed' && b[c] ? ' st-failed' : ''))), td(num(b.total), 'n'),
          td(time(b.createdAt)), td(time(b.completedAt)))),
        'No ' + (state ? state + ' ' : '') + 'batches.'),
      h('p', { class: 'pager' }, before ? h('a', { href: hashFor({ before: '' }) }, '« newest') : null,
        page.next ? h('a', { href: hashFor({ before: page.next }) }, 'older »') : null)),
  };
};

views.batch = (id, params) => {
  const memberState = params.get('state') || '';
  const skip = Math.max(0, Number(params.get('skip')) || 0);
  const TAKE = 100;
  const hashFor = (changes) => {
    const q = new URLSearchParams(Object.entries(Object.assign({ state: memberState, skip: skip ? String(skip) : '' }, changes)).filter(([, v]) => v));
    return '#/batches/' + enc(id) + (q.toString() ? '?' + q.toString() : '');
  };
  return {
    title: 'Batch ' + id,
    nav: 'batches',
    load: () => Promise.all([
      api('/batches/' + enc(id)),
      api('/batches/' + enc(id) + '/graph'),
      api('/batches/' + enc(id) + '/members?take=' + TAKE + '&skip=' + skip + (memberState ? '&state=' + enc(memberState) : '')),
    ]),
    render: ([b, graph, members]) => h('div', { class: 'detail', 'data-state': b.state },
      h('h2', { class: 'detail-title' }, b.name || 'Batch', ' ', badge(b.state)),
      h('p', { class: 'mono muted' }, b.id),
      h('div', { class: 'actions' }, actionButton('Cancel batch', b.state === 'executing', () => act('Cancel batch',
        'Cancel every member of ' + (b.name || shortId(b.id)) + ' that has not ended? Running members are asked to stop; finally callbacks still run.',
        'Cancel batch', () => post('/batches/' + enc(b.id) + '/cancel'), 'Batch cancelled.'), 'danger')),
      progressBar(b.progress, num(b.succeeded + b.failed + b.cancelled + b.skipped) + ' of ' + num(b.total) + ' ended'),
      h('dl', { class: 'facts' }, COUNTS.map((c) => fact(c, num(b[c]))), fact('created', time(b.createdAt, true)),
        fact('started', time(b.startedAt)), fact('settled', time(b.completedAt))),
      h('section', null, h('h3', null, 'Graph'), drawGraph(graph, null)),
      h('section', null, h('h3', null, 'Members'),
        h('div', { class: 'filters' }, h('select', { 'aria-label': 'member state', onchange: (e) => { location.hash = hashFor({ state: e.target.value, skip: '' }); } },
          h('option', { value: '' }, 'all states'), STATES.filter((st) => st !== 'scheduled').map((st) => h('option', { value: st, selected: st === memberState }, st)))),
        table(['job', 'name', 'state', { attrs: { class: 'n' }, text: 'attempt' }, 'ended', 'error'],
          members.map((j) => h('tr', { 'data-id': j.id }, td(jobLink(j.id)), td(j.name), td(badge(j.state)), td(j.attempt + '/' + j.maxAttempts, 'n'),
            td(time(j.completedAt)), td(j.lastError ? h('span', { class: 'err' }, j.lastError.message) : '', 'wide'))),
          'No ' + (memberState ? memberState + ' ' : '') + 'members.'),
        h('p', { class: 'pager' }, skip ? h('a', { href: hashFor({ skip: String(Math.max(0, skip - TAKE)) }) }, '« previous') : null,
          members.length === TAKE ? h('a', { href: hashFor({ skip: String(skip + TAKE) }) }, 'next »') : null))),
  };
};

/** A laid-out graph as SVG: boxes coloured by state, edges labelled by trigger; job boxes link to the job. */
function drawGraph(g, focus) {
  if (!g.nodes.length) return h('p', { class: 'muted' }, 'Nothing to draw.');
  const byId = new Map(g.nodes.map((n) => [n.id, n]));
  const edges = g.edges.map((e) => {
    const a = byId.get(e.from), b = byId.get(e.to);
    const x1 = a.x + a.width, y1 = a.y + a.height / 2, x2 = b.x, y2 = b.y + b.height / 2;
    const mx = (x1 + x2) / 2;
    return s('g', { class: 'edge on-' + e.on },
      s('path', { d: 'M' + x1 + ',' + y1 + ' C' + mx + ',' + y1 + ' ' + mx + ',' + y2 + ' ' + x2 + ',' + y2, 'marker-end': 'url(#arrow)' }),
      e.on !== 'member' ? s('text', { x: mx, y: (y1 + y2) / 2 - 4, 'text-anchor': 'middle', class: 'edge-label' }, e.on) : null);
  });
  const nodes = g.nodes.map((n) => {
    const label = n.kind === 'group' ? n.count + ' × ' + n.label : n.label;
    const sub = n.kind === 'batch' ? 'batch · ' + n.state : (n.role && n.role !== 'member' && n.role !== 'this' ? n.role + ' · ' : '') + n.state;
    const box = s('g', { class: 'node st-' + n.state + (n.id === focus ? ' focus' : '') + ' kind-' + n.kind, 'data-id': n.id },
      s('title', null, label + ' (' + n.state + ')' + (n.kind === 'group' ? '' : ' ' + n.id)),
      s('rect', { x: n.x, y: n.y, width: n.width, height: n.height, rx: n.kind === 'batch' ? 12 : 4 }),
      s('text', { x: n.x + 8, y: n.y + 16, class: 'node-label' }, clip(label, 24)),
      s('text', { x: n.x + 8, y: n.y + 31, class: 'node-sub' }, clip(sub, 28)));
    if (n.kind === 'group' || n.id === focus) return box;
    const a = s('a', { href: (n.kind === 'batch' ? '#/batches/' : '#/jobs/') + enc(n.id) }, box);
    return a;
  });
  return h('div', { class: 'graph' },
    s('svg', { width: g.width, height: g.height, viewBox: '0 0 ' + g.width + ' ' + g.height, class: 'dag', role: 'img', 'aria-label': 'dependency graph' },
      s('defs', null, s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
        s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }))),
      edges, nodes),
    g.truncated ? h('p', { class: 'muted' }, 'Cut short: the graph is larger than drawn here.') : null);
}
const clip = (text, n) => (text.length > n ? text.slice(0, n - 1) + '…' : text);
`;
