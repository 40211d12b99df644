// Medians, ranges and the printed table.

export function summarize(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return null;
  const mid = v.length >> 1;
  const median = v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  return { median, min: v[0], max: v[v.length - 1], n: v.length };
}

// Rows of the table: which scenario and field feed them, and which way is better.
function rowsFor(titles) {
  const t = (id, fallback) => titles[id] ?? fallback;
  return [
    { scenario: 'bulk', field: 'jobsPerSec', title: t('bulk'), unit: 'rate', better: 'higher' },
    // Bound by the commit on PostgreSQL; Redis without persistence is another game.
    { scenario: 'single', field: 'jobsPerSec', title: t('single'), unit: 'rate', better: 'higher', versus: 'postgres' },
    { scenario: 'drain10', field: 'jobsPerSec', title: t('drain10'), unit: 'rate', better: 'higher' },
    {
      scenario: 'drain10-pgbouncer',
      field: 'jobsPerSec',
      title: t('drain10-pgbouncer'),
      unit: 'rate',
      better: 'higher',
    },
    {
      scenario: 'drain10-pgbouncer',
      field: 'exactlyOnce',
      title: 'through PgBouncer: each job ran exactly once',
      unit: 'check',
    },
    { derived: 'pgbouncerRatio', title: 'drain through PgBouncer ÷ direct, concurrency 10', unit: 'pct' },
    { scenario: 'drain10-waiting', field: 'jobsPerSec', title: t('drain10-waiting'), unit: 'rate', better: 'higher' },
    {
      scenario: 'drain10-waiting',
      field: 'exactlyOnce',
      title: 'beside parked jobs: each drained job ran exactly once, every parked job still parked',
      unit: 'check',
    },
    { derived: 'waitingRatio', title: 'drain beside parked signal waits ÷ plain drain, concurrency 10', unit: 'pct' },
    { scenario: 'drain50', field: 'jobsPerSec', title: t('drain50'), unit: 'rate', better: 'higher' },
    { scenario: 'drain2x10', field: 'jobsPerSec', title: t('drain2x10'), unit: 'rate', better: 'higher' },
    { scenario: 'drain2x10', field: 'exactlyOnce', title: 'each job ran exactly once (2 processes)', unit: 'check' },
    { scenario: 'drain4x5', field: 'jobsPerSec', title: t('drain4x5'), unit: 'rate', better: 'higher' },
    { scenario: 'drain4x5', field: 'exactlyOnce', title: 'each job ran exactly once (4 processes)', unit: 'check' },
    { scenario: 'latency', field: 'p50', title: 'enqueue→start p50 (ms)', unit: 'ms', better: 'lower' },
    { scenario: 'latency', field: 'p95', title: 'enqueue→start p95 (ms)', unit: 'ms', better: 'lower' },
    { scenario: 'latency', field: 'p99', title: 'enqueue→start p99 (ms)', unit: 'ms', better: 'lower' },
    ...['p50', 'p95'].map((field) => ({
      scenario: 'latency-pgbouncer',
      field,
      title: `enqueue→start ${field} through PgBouncer, ours LISTENing on directConnection, the peers polling (ms)`,
      unit: 'ms',
      better: 'lower',
    })),
    // Ours alone (the peers poll through the pooler either way), set against the peers' figures above.
    ...['p50', 'p95'].map((field) => ({
      scenario: 'latency-pgbouncer-poll',
      field,
      title: `enqueue→start ${field} through PgBouncer, ours polling too (ms)`,
      unit: 'ms',
      better: 'lower',
      peersFrom: 'latency-pgbouncer',
    })),
    ...['p50', 'p95'].map((field) => ({
      scenario: 'signal',
      field,
      title: `signal() → the waiting job resumes ${field} (ms)`,
      unit: 'ms',
      better: 'lower',
    })),
    { scenario: 'signal', field: 'exactlyOnce', title: 'signals: each parked job resumed exactly once', unit: 'check' },
    ...['p50', 'p95'].map((field) => ({
      scenario: 'waitfor',
      field,
      title: `waitFor: job ends → waiter resolves ${field} (ms)`,
      unit: 'ms',
      better: 'lower',
    })),
    { scenario: 'waitfor', field: 'exactlyOnce', title: 'waitFor: each job ran exactly once', unit: 'check' },
    { scenario: 'invoke', field: 'parentsPerSec', title: t('invoke'), unit: 'rate', better: 'higher' },
    {
      scenario: 'invoke',
      field: 'plainJobsPerSec',
      title: 'the same worker draining twice as many plain no-op jobs (jobs/s)',
      unit: 'rate',
    },
    {
      scenario: 'invoke',
      field: 'plainOverInvoke',
      title: 'invoke: plain drain time ÷ invoke drain time, same executions minus the replays (per run)',
      unit: 'pct-range',
    },
    {
      scenario: 'invoke',
      field: 'exactlyOnce',
      title: 'invoke: each parent resumed once with its child\'s result, each child ran once (and the plain drain)',
      unit: 'check',
    },
    ...['p50', 'p95'].map((field) => ({
      scenario: 'invoke-latency',
      field,
      title: `ctx.invoke round trip: parent enqueued → its code after invoke() returned ${field} (ms)`,
      unit: 'ms',
      better: 'lower',
    })),
    {
      scenario: 'invoke-latency',
      field: 'childP50',
      title: 'of which: parent enqueued → child handler start p50 (ms)',
      unit: 'ms',
    },
    {
      scenario: 'invoke-latency',
      field: 'exactlyOnce',
      title: 'invoke round trip: each parent resumed once, each child ran once',
      unit: 'check',
    },
    { scenario: 'drain10', field: 'rssMb', title: 'worker peak RSS, concurrency 10 (MB)', unit: 'mb', better: 'lower' },
    { scenario: 'drain50', field: 'rssMb', title: 'worker peak RSS, concurrency 50 (MB)', unit: 'mb', better: 'lower' },
    { scenario: 'claim0', field: 'jobsPerSec', title: t('claim0'), unit: 'rate', better: 'higher' },
    { scenario: 'claim1m', field: 'jobsPerSec', title: t('claim1m'), unit: 'rate', better: 'higher' },
    { derived: 'claimRatio', title: 'claim with finished rows kept ÷ empty table', unit: 'pct', better: 'higher' },
    { scenario: 'batch10k', field: 'dispatchSeconds', title: `${t('batch10k')}: dispatch (s)`, unit: 'ms' },
    { scenario: 'batch10k', field: 'jobsPerSec', title: `${t('batch10k')}: completion (jobs/s)`, unit: 'rate' },
    {
      scenario: 'batch10k',
      field: 'exactlyOnce',
      title: `${t('batch10k')}: each member and the callback ran exactly once`,
      unit: 'check',
    },
    { derived: 'batchRatio', title: 'batch completion ÷ plain drain at concurrency 10', unit: 'pct' },
    { scenario: 'limit', field: 'jobsPerSec', title: t('limit'), unit: 'rate', better: 'higher' },
    { derived: 'limitRatio', title: 'limited queue ÷ plain drain 2 × 10', unit: 'pct' },
    { scenario: 'limit', field: 'mostRunning', title: 'most running at once (limit 10)', unit: 'n' },
    { scenario: 'limit', field: 'exactlyOnce', title: 'limited queue: each job ran exactly once', unit: 'check' },
    ...flowMsRows(t, 'limit10ms', 'limit 10', 10),
    { scenario: 'serial', field: 'jobsPerSec', title: t('serial'), unit: 'rate', better: 'higher' },
    { derived: 'serialRatio', title: '100 serial keys ÷ plain drain 2 × 10', unit: 'pct' },
    { scenario: 'serial', field: 'mostPerKey', title: 'most running at once of one serial key (limit 1)', unit: 'n' },
    { scenario: 'serial', field: 'exactlyOnce', title: 'serial keys: each job ran exactly once', unit: 'check' },
    ...flowMsRows(t, 'serial10ms', 'one per serial key', 20),
    { scenario: 'groups', field: 'jobsPerSec', title: t('groups'), unit: 'rate' },
    { derived: 'groupsRatio', title: '100 groups ÷ plain drain 2 × 10', unit: 'pct' },
    ...flowMsRows(t, 'groups10ms', 'groups', 20),
    { scenario: 'unique', field: 'jobsPerSec', title: t('unique'), unit: 'rate' },
    { derived: 'uniqueRatio', title: 'unique-key enqueue ÷ plain bulk enqueue', unit: 'pct' },
    // Against the PostgreSQL peers, as `single`: Redis without persistence commits nothing to disk.
    {
      scenario: 'uniqueone',
      field: 'jobsPerSec',
      title: t('uniqueone'),
      unit: 'rate',
      better: 'higher',
      versus: 'postgres',
    },
    { derived: 'uniqueOneRatio', title: 'single unique-key enqueue ÷ plain single enqueue', unit: 'pct' },
    { scenario: 'steps3', field: 'jobsPerSec', title: t('steps3'), unit: 'rate' },
    { derived: 'stepsRatio', title: '3 durable steps per job ÷ plain drain at concurrency 10', unit: 'pct' },
    { scenario: 'txdrain', field: 'jobsPerSec', title: t('txdrain'), unit: 'rate' },
    { derived: 'txRatio', title: 'ctx.transaction per job ÷ plain drain at concurrency 10', unit: 'pct' },
    { scenario: 'encbulk', field: 'jobsPerSec', title: t('encbulk'), unit: 'rate' },
    { derived: 'encBulkRatio', title: 'encrypted bulk enqueue ÷ plain bulk enqueue', unit: 'pct' },
    { scenario: 'encdrain', field: 'jobsPerSec', title: t('encdrain'), unit: 'rate' },
    { derived: 'encDrainRatio', title: 'encrypted drain ÷ plain drain at concurrency 10', unit: 'pct' },
  ];
}

// A flow-control scenario with 10 ms handlers: its rate, how busy it kept its slots, the largest
// share of the jobs one of the two processes ran, the most running at once (all, and per key).
function flowMsRows(t, scenario, what, slots) {
  return [
    { scenario, field: 'jobsPerSec', title: t(scenario), unit: 'rate', better: 'higher' },
    {
      scenario,
      field: 'utilisation',
      title: `${what}, 10 ms jobs: slot utilisation (jobs/s × 0.010 ÷ ${slots})`,
      unit: 'pct',
      better: 'higher',
    },
    {
      scenario,
      field: 'maxShare',
      title: `${what}, 10 ms jobs: largest share of the jobs in one process`,
      unit: 'pct',
    },
    { scenario, field: 'mostRunning', title: `${what}, 10 ms jobs: most running at once`, unit: 'n' },
    ...(scenario === 'limit10ms'
      ? []
      : [{ scenario, field: 'mostPerKey', title: `${what}, 10 ms jobs: most running at once of one key`, unit: 'n' }]),
    { scenario, field: 'exactlyOnce', title: `${what}, 10 ms jobs: each job ran exactly once`, unit: 'check' },
  ];
}

function fmt(x, unit) {
  if (x == null || !Number.isFinite(x)) return '–';
  if (unit === 'ms') return x.toFixed(1);
  if (unit === 'mb') return Math.round(x).toString();
  if (unit === 'pct' || unit === 'pct-range') return `${Math.round(x * 100)}%`;
  if (x >= 1000) {
    const p = 10 ** (Math.floor(Math.log10(x)) - 2); // three significant figures
    return (Math.round(x / p) * p).toLocaleString('en-US');
  }
  return Math.round(x).toString();
}

function cell(s, unit) {
  if (s?.notApplicable) return 'n/a';
  if (!s) return '–';
  if (s.n === 1 || unit === 'pct') return fmt(s.median, unit);
  return `${fmt(s.median, unit)} (${fmt(s.min, unit)}–${fmt(s.max, unit)})`;
}

// One scenario's median throughput over another's, per library.
function ratioValues(over, under, libs) {
  const values = {};
  for (const lib of libs) {
    if (over[lib]?.notApplicable) {
      values[lib] = { notApplicable: true };
      continue;
    }
    const a = summarize((under[lib]?.runs ?? []).map((r) => r.jobsPerSec));
    const b = summarize((over[lib]?.runs ?? []).map((r) => r.jobsPerSec));
    values[lib] = a && b ? { median: b.median / a.median, min: NaN, max: NaN, n: 1 } : null;
  }
  return values;
}

/** Each derived row: one scenario's median throughput over another's. */
const DERIVED = {
  batchRatio: ['batch10k', 'drain10'],
  claimRatio: ['claim1m', 'claim0'],
  limitRatio: ['limit', 'drain2x10'],
  groupsRatio: ['groups', 'drain2x10'],
  serialRatio: ['serial', 'drain2x10'],
  uniqueRatio: ['unique', 'bulk'],
  uniqueOneRatio: ['uniqueone', 'single'],
  stepsRatio: ['steps3', 'drain10'],
  txRatio: ['txdrain', 'drain10'],
  encBulkRatio: ['encbulk', 'bulk'],
  encDrainRatio: ['encdrain', 'drain10'],
  pgbouncerRatio: ['drain10-pgbouncer', 'drain10'],
  waitingRatio: ['drain10-waiting', 'drain10'],
};

// results[scenario][lib] = { runs: [...metrics], errors: [...] }
export function aggregate(results, libs, titles) {
  const rows = [];
  for (const row of rowsFor(titles)) {
    if (row.derived) {
      const [over, under] = DERIVED[row.derived];
      if (!results[over] || !results[under]) continue;
      rows.push({ ...row, values: ratioValues(results[over], results[under], libs) });
      continue;
    }
    const byLib = results[row.scenario];
    if (!byLib || !row.title) continue;
    const values = {};
    for (const lib of libs) {
      const entry = byLib[lib];
      if (!entry) continue;
      if (entry.notApplicable) {
        values[lib] = { notApplicable: true };
        continue;
      }
      if (row.unit === 'check') {
        const checks = entry.runs.map((r) => r.exactlyOnce);
        values[lib] = checks.length ? { checks } : null;
      } else {
        values[lib] = summarize(entry.runs.map((r) => r[row.field]));
      }
    }
    rows.push({ ...row, values });
  }
  return rows;
}

function checkCell(v) {
  if (v?.notApplicable) return 'n/a';
  if (!v) return '–';
  const bad = v.checks.filter((c) => !c.ok);
  if (!bad.length) return `yes (${v.checks.length}/${v.checks.length} runs)`;
  const c = bad[0];
  return `NO in ${bad.length}/${v.checks.length} runs (missing ${c.missing}, duplicated ${c.duplicated}, stray ${c.outside})`;
}

// Ours against the best peer on each row: >1× means ours is better on a
// higher-is-better row, and also on a lower-is-better row (peer ÷ ours).
/** This library's own columns; every other library is a peer. */
const OURS = ['ours', 'ours-sync', 'ours-forget', 'base'];

// `row.peersFrom`: the peers' figures come from that scenario's row of the same field (a variant
// of ours measured alone, the peers running the same way in both).
function versusPeers(row, libs, storage, which = 'ours', rows = []) {
  const ours = row.values[which]?.median;
  const peerRow = row.peersFrom ? rows.find((r) => r.scenario === row.peersFrom && r.field === row.field) : row;
  const peers = libs
    .filter((l) => !OURS.includes(l) && (!row.versus || storage[l] === row.versus))
    .map((l) => peerRow?.values[l]?.median)
    .filter(Number.isFinite);
  if (!Number.isFinite(ours) || !peers.length || !row.better || row.unit === 'check') return '';
  const note = row.versus ? ` (vs ${row.versus === 'postgres' ? 'PostgreSQL' : row.versus} peers)` : '';
  if (row.better === 'higher') return `${(ours / Math.max(...peers)).toFixed(2)}×${note}`;
  return `${(Math.min(...peers) / ours).toFixed(2)}×${note}`;
}

/** What the A/B's base is measured against: ours as it runs, or forgetting with BENCH_BASE_FORGET=1. */
export const BASE_COUNTERPART = process.env.BENCH_BASE_FORGET === '1' ? 'ours-forget' : 'ours';

// Ours against the base build (an A/B run): >1× means this checkout is better.
function versusBase(row) {
  const ours = row.values[BASE_COUNTERPART]?.median;
  const base = row.values.base?.median;
  if (!Number.isFinite(ours) || !Number.isFinite(base) || !row.better || row.unit === 'check') return '';
  return `${(row.better === 'higher' ? ours / base : base / ours).toFixed(2)}×`;
}

const VERSUS_HEADS = {
  ours: 'ours vs best peer',
  'ours-sync': 'ours (sync commit) vs best peer',
  'ours-forget': 'ours (forgetting) vs best peer',
};

export function table(rows, libs, labels, storage = {}) {
  const hasPeers = libs.some((l) => !OURS.includes(l));
  // Ours against the best peer, at our default durability and at the peers' (synchronous commit).
  const versus = hasPeers ? ['ours', 'ours-sync', 'ours-forget'].filter((l) => libs.includes(l)) : [];
  const withBase = libs.includes(BASE_COUNTERPART) && libs.includes('base');
  const head = [
    '',
    ...libs.map((l) => labels[l]),
    ...versus.map((l) => VERSUS_HEADS[l]),
    ...(withBase ? ['ours vs base'] : []),
  ];
  const body = rows.map((row) => [
    row.title,
    ...libs.map((l) => (row.unit === 'check' ? checkCell(row.values[l]) : cell(row.values[l], row.unit))),
    ...versus.map((l) => versusPeers(row, libs, storage, l, rows)),
    ...(withBase ? [versusBase(row)] : []),
  ]);
  const widths = head.map((_, c) => Math.max(...[head, ...body].map((r) => r[c].length)));
  const line = (r) => `| ${r.map((x, c) => (c === 0 ? x.padEnd(widths[c]) : x.padStart(widths[c]))).join(' | ')} |`;
  const sep = `| ${widths.map((w, c) => (c === 0 ? '-'.repeat(w) : '-'.repeat(w - 1) + ':')).join(' | ')} |`;
  return [line(head), sep, ...body.map(line)].join('\n');
}
