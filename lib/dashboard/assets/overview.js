// @ts-check
/**
 * The overview: totals by state, throughput per queue over the last hour
 * (an inline SVG bar chart per queue), jobs by queue and state, workers.
 * Throughput reads every job of the window, so it is fetched every 30 s,
 * not at every refresh.
 */
import { api, STATES } from './api.js';
import { h, s, table, td, time } from './dom.js';
import { enc, num } from './format.js';

const THROUGHPUT_MS = 30000;
/** @type {{ at: number, data: any }} */
let throughputCache = { at: 0, data: null };

async function loadThroughput() {
  if (throughputCache.data && Date.now() - throughputCache.at < THROUGHPUT_MS) return throughputCache.data;
  const data = await api('/throughput?minutes=60');
  throughputCache = { at: Date.now(), data };
  return data;
}

/** @returns {import('./router.js').View} */
export const overview = () => ({
  title: 'Overview',
  nav: 'overview',
  load: () =>
    Promise.all([
      api('/stats'),
      api('/queues'),
      api('/workers'),
      loadThroughput(),
      api('/encryption'),
      api('/unhandled'),
    ]),
  render: ([stats, queues, workers, throughput, encryption, unhandled]) =>
    h(
      'div',
      null,
      missingKeys(encryption),
      unhandledJobs(unhandled),
      h(
        'section',
        { class: 'cards' },
        STATES.map((state) =>
          h(
            'a',
            { class: 'card st-' + state, href: '#/jobs?state=' + state },
            h('span', { class: 'card-n' }, num(stats.total[state])),
            h('span', { class: 'card-label' }, state),
          ),
        ),
      ),
      h('p', { class: 'muted small' }, 'Finished states count jobs created since ', time(stats.since), '.'),
      h('h2', null, 'Throughput, last hour'),
      throughputCharts(throughput),
      h('h2', null, 'Queues'),
      queueCounts(stats, queues),
      h('h2', null, 'Workers'),
      workersTable(workers),
    ),
});

/**
 * Says which encryption keys this instance lacks for jobs its worker met (it hands those back).
 * @param {{ missingKeys: string[] }} encryption
 */
function missingKeys(encryption) {
  if (!encryption.missingKeys.length) return null;
  return h(
    'div',
    { class: 'error-box', 'data-missing-keys': encryption.missingKeys.join(',') },
    h('strong', null, 'Missing encryption key: '),
    encryption.missingKeys.map((k) => "'" + k + "'").join(', '),
    '. This instance hands jobs sealed with it back for an instance that holds it; add the key to its encryption.keys.',
  );
}

/**
 * Due jobs whose name no live worker handles in their queue: claims pass over them, so they wait
 * until a worker that registers the name is deployed (or they are cancelled).
 * @param {{ name: string, queue: string, due: number, oldestDueAt: string }[]} unhandled
 */
function unhandledJobs(unhandled) {
  if (!unhandled.length) return null;
  return h(
    'section',
    { class: 'error-box unhandled', 'data-unhandled': String(unhandled.length) },
    h('h2', null, 'Jobs no live worker handles'),
    h(
      'p',
      { class: 'small' },
      'No running worker registers these job names for their queue, so they wait. ',
      'Deploy a worker whose app has the @Job and serves the queue, or cancel them.',
    ),
    table(
      ['job name', 'queue', { attrs: { class: 'n' }, text: 'due' }, 'waiting since'],
      unhandled.map((u) =>
        h(
          'tr',
          { 'data-unhandled-name': u.name },
          td(h('a', { href: '#/jobs?state=queued&name=' + enc(u.name) + '&queue=' + enc(u.queue) }, u.name), 'mono'),
          td(h('a', { href: '#/jobs?queue=' + enc(u.queue) }, u.queue)),
          td(num(u.due), 'n'),
          td(time(u.oldestDueAt, true)),
        ),
      ),
      '',
    ),
  );
}

/**
 * @param {any} stats
 * @param {any[]} queues
 */
function queueCounts(stats, queues) {
  const paused = new Set(queues.filter((q) => q.paused).map((q) => q.name));
  // Sorted by name, so rows keep their place from one refresh to the next.
  /** @type {string[]} */
  const names = [...new Set([...Object.keys(stats.queues), ...queues.map((q) => q.name)])].sort();
  const empty = { waiting: 0, queued: 0, scheduled: 0, active: 0, succeeded: 0, failed: 0, cancelled: 0, skipped: 0 };
  return table(
    ['queue', ...STATES.map((st) => ({ attrs: { class: 'n' }, text: st }))],
    names.map((name) => {
      const c = stats.queues[name] || empty;
      return h(
        'tr',
        { 'data-queue': name },
        td([
          h('a', { href: '#/jobs?queue=' + enc(name) }, name),
          paused.has(name) ? h('span', { class: 'badge paused' }, 'paused') : null,
        ]),
        STATES.map((st) =>
          td(
            c[st] ? h('a', { href: '#/jobs?queue=' + enc(name) + '&state=' + st }, num(c[st])) : '0',
            'n' + (st === 'failed' && c[st] ? ' st-failed' : ''),
          ),
        ),
      );
    }),
    'No queue has jobs yet.',
  );
}

/**
 * Open of at most: "4 / 10"; a dash for a worker of a build that did not record them.
 * @param {{ open: number | null, max: number } | null} c
 */
function connectionsText(c) {
  if (!c) return '–';
  return (c.open === null ? '?' : num(c.open)) + ' / ' + num(c.max);
}

/** @param {any[]} workers */
function workersTable(workers) {
  const n = (/** @type {string} */ text) => ({ attrs: { class: 'n' }, text });
  return table(
    [
      'worker',
      'host',
      'pid',
      'queues',
      n('running'),
      n('slots'),
      n('connections'),
      'started',
      'last heartbeat',
      'alive',
    ],
    workers.map((w) =>
      h(
        'tr',
        { class: w.alive ? '' : 'dead' },
        td(w.id, 'mono'),
        td(w.host),
        td(String(w.pid), 'n'),
        td(w.queues === 'all' ? 'all' : w.queues.join(', ')),
        td(num(w.active), 'n'),
        td(num(w.concurrency), 'n'),
        td(connectionsText(w.connections), 'n connections'),
        td(time(w.startedAt)),
        td(time(w.lastHeartbeat, true)),
        td(w.alive ? 'yes' : w.stoppedAt ? 'stopped' : 'no', w.alive ? 'st-succeeded' : 'muted'),
      ),
    ),
    'No worker has reported in the last hour.',
  );
}

/**
 * One small stacked bar chart per queue: succeeded (bottom) and failed (top), one bar a minute.
 * @param {any} t
 */
function throughputCharts(t) {
  const names = Object.keys(t.queues).sort();
  if (!names.length) return h('p', { class: 'muted' }, 'No job ended in the last hour.');
  return h(
    'div',
    { class: 'charts' },
    names.map((name) => {
      /** @type {Point[]} */
      const points = t.queues[name];
      const ok = points.reduce((a, p) => a + p.succeeded, 0);
      const bad = points.reduce((a, p) => a + p.failed, 0);
      return h(
        'figure',
        { class: 'chart', 'data-queue': name },
        h(
          'figcaption',
          null,
          h('strong', null, name),
          ' ',
          h('span', { class: 'st-succeeded' }, num(ok) + ' succeeded'),
          ' · ',
          h('span', { class: bad ? 'st-failed' : 'muted' }, num(bad) + ' failed'),
        ),
        barChart(points),
      );
    }),
  );
}

/** One minute of a queue's throughput. @typedef {{ minute: string, succeeded: number, failed: number }} Point */

const hm = (/** @type {string} */ iso) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

/** @param {Point[]} points */
function barChart(points) {
  const W = 272,
    H = 72,
    TOP = 12,
    BOTTOM = 14;
  const max = Math.max(1, ...points.map((p) => p.succeeded + p.failed));
  const bw = W / Math.max(1, points.length);
  const y = (/** @type {number} */ n) => ((H - TOP - BOTTOM) * n) / max;
  const bars = points.map((p, i) => {
    const x = i * bw;
    const okH = y(p.succeeded),
      badH = y(p.failed);
    const label = hm(p.minute) + ': ' + p.succeeded + ' succeeded, ' + p.failed + ' failed';
    return s(
      'g',
      null,
      s('title', null, label),
      s('rect', { x: x + 0.5, y: H - BOTTOM - okH, width: Math.max(1, bw - 1), height: okH, class: 'bar-ok' }),
      s('rect', {
        x: x + 0.5,
        y: H - BOTTOM - okH - badH,
        width: Math.max(1, bw - 1),
        height: badH,
        class: 'bar-failed',
      }),
      s('rect', { x, y: TOP, width: bw, height: H - TOP - BOTTOM, class: 'bar-hit' }),
    );
  });
  const first = points[0],
    last = points[points.length - 1];
  return s(
    'svg',
    {
      viewBox: '0 0 ' + W + ' ' + H,
      width: W,
      height: H,
      class: 'barchart',
      role: 'img',
      'aria-label': 'jobs ended per minute',
    },
    s('line', { x1: 0, y1: H - BOTTOM, x2: W, y2: H - BOTTOM, class: 'axis' }),
    s('text', { x: 0, y: 9, class: 'tick' }, 'max ' + max + '/min'),
    first ? s('text', { x: 0, y: H - 2, class: 'tick' }, hm(first.minute)) : null,
    last ? s('text', { x: W, y: H - 2, class: 'tick', 'text-anchor': 'end' }, hm(last.minute)) : null,
    bars,
  );
}
