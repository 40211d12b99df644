// The benchmark orchestrator: runs every selected scenario for every selected
// library, interleaving libraries run by run so machine drift hits all alike,
// then prints a table and writes the raw figures as JSON.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ALL, canonical, load } from './adapters/index.mjs';
import { DATABASE_URL, REDIS_URL, ensureDatabase, sql } from './common.mjs';
import { aggregate, BASE_COUNTERPART, table } from './report.mjs';
import { buildScenarios } from './scenarios.mjs';

const BENCH = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
const ROOT = path.resolve(BENCH, '..');

const { values: flags } = parseArgs({
  options: {
    libs: { type: 'string' },
    scenarios: { type: 'string' },
    runs: { type: 'string' },
    scale: { type: 'string' },
    out: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});

const LABELS = {
  ours: ['nestjs-durable-jobs', `${ROOT}/package.json`],
  'ours-sync': ['nestjs-durable-jobs', `${ROOT}/package.json`, ' (synchronous commit)'],
  'ours-forget': ['nestjs-durable-jobs', `${ROOT}/package.json`, ' (sync commit, forgetting successes)'],
  graphile: ['graphile-worker', `${BENCH}/node_modules/graphile-worker/package.json`],
  pgboss: ['pg-boss', `${BENCH}/node_modules/pg-boss/package.json`],
  bullmq: ['BullMQ', `${BENCH}/node_modules/bullmq/package.json`, ' (Redis)'],
  base: [
    'nestjs-durable-jobs',
    `${process.env.BENCH_BASE_DIR}/package.json`,
    ` base ${process.env.BENCH_BASE ?? ''}${BASE_COUNTERPART === 'ours-forget' ? ' (sync commit, forgetting successes)' : ''}`,
  ],
};

function version(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8')).version;
  } catch {
    return '?';
  }
}

const scale = Number(flags.scale ?? process.env.BENCH_SCALE ?? 1);
const runs = Number(flags.runs ?? process.env.BENCH_RUNS ?? 3);
const libs = (flags.libs ?? process.env.BENCH_LIBS ?? ALL.join(',')).split(',').filter(Boolean).map(canonical);
const scenarios = buildScenarios(scale);
const wanted = (flags.scenarios ?? process.env.BENCH_SCENARIOS ?? '').split(',').filter(Boolean);

if (flags.help) {
  console.log(`usage: bash bench/run.sh [--libs=${ALL.join(',')}] [--scenarios=${scenarios.map((s) => s.id).join(',')}]
                         [--runs=3] [--scale=1] [--out=file.json]
(or BENCH_LIBS, BENCH_SCENARIOS, BENCH_RUNS, BENCH_SCALE; DATABASE_URL, REDIS_URL)`);
  process.exit(0);
}
for (const w of wanted) {
  if (!scenarios.some((s) => s.id === w)) throw new Error(`unknown scenario "${w}"`);
}
if (!(scale > 0) || !(runs >= 1)) throw new Error('scale must be > 0 and runs >= 1');
const selected = wanted.length ? scenarios.filter((s) => wanted.includes(s.id)) : scenarios;
// What a scenario needs beyond the server (PgBouncer) is checked before the first run, not after ten minutes.
for (const s of selected) {
  try {
    s.check?.();
  } catch (e) {
    console.error(`bench: scenario ${s.id}: ${e.message}`);
    process.exit(2);
  }
}

const labels = Object.fromEntries(
  libs.map((l) => [l, `${LABELS[l][0]} ${version(LABELS[l][1])}${LABELS[l][2] ?? ''}`]),
);
const log = (...a) => console.error(...a);

await ensureDatabase();
const pgVersion = (await sql('SHOW server_version')).rows[0].server_version;

// One adapter object per library, created in this process: it is the
// producer side and owns resets; workers run in child processes.
const adapters = {};
const results = {};
const started = new Date();
// Other work on the machine moves the figures; the load average says how much.
const loadAtStart = os.loadavg()[0];
const t0 = Date.now();
log(`bench: node ${process.version}, libraries ${libs.join(', ')}, ${runs} run(s), scale ${scale}`);

for (const lib of libs) {
  try {
    adapters[lib] = (await load(lib)).create();
  } catch (e) {
    log(`bench: cannot load ${lib}: ${e.stack ?? e}`);
  }
}

// What the scenarios' own setup reported (the PgBouncer version), for the footer and the JSON.
const environment = {};

for (const scenario of selected) {
  results[scenario.id] = {};
  // A scenario only some libraries have (batches): the others get no cell. One that cannot apply to a
  // library (a PostgreSQL pooler for BullMQ) shows "n/a".
  // Ours forgetting its successes runs the plain drains only: the rows it is compared on.
  const takes = (lib) =>
    !adapters[lib] ||
    ((!adapters[lib].drainsOnly || scenario.plainDrain) && (!scenario.supports || scenario.supports(adapters[lib])));
  const notApplicable = (lib) => adapters[lib] && scenario.notApplicable?.(adapters[lib]);
  for (const lib of libs.filter((l) => takes(l) && notApplicable(l))) {
    results[scenario.id][lib] = { runs: [], errors: [], notApplicable: true };
  }
  const running = libs.filter((l) => takes(l) && !notApplicable(l));
  // Set up once for all its runs (a PgBouncer): a failure fails the scenario for every library.
  if (running.length && scenario.setup) {
    try {
      Object.assign(environment, await scenario.setup());
    } catch (e) {
      for (const lib of running) results[scenario.id][lib] = { runs: [], errors: [`setup: ${e?.message ?? e}`] };
      log(`  ${scenario.id}: setup FAILED ${e?.stack ?? e}`);
      continue;
    }
  }
  try {
    await runScenario(scenario, running);
  } finally {
    await scenario.teardown?.().catch((e) => log(`  ${scenario.id}: teardown: ${e?.message ?? e}`));
  }
}

async function runScenario(scenario, running) {
  for (let r = 0; r < runs; r++) {
    // Rotate who goes first so no library always runs on the coolest machine.
    const order = libs.map((_, k) => libs[(k + r) % libs.length]).filter((l) => running.includes(l));
    for (const lib of order) {
      const adapter = adapters[lib];
      const entry = (results[scenario.id][lib] ??= { runs: [], errors: [] });
      if (!adapter) {
        entry.errors.push('library failed to load');
        continue;
      }
      try {
        // Every run starts from a checkpointed server: the dirty buffers and WAL an earlier run left
        // (a million-row prefill) are not flushed during this one's timing.
        await sql('CHECKPOINT').catch(() => {});
        await adapter.reset();
        await adapter.open();
        const m = await scenario.run(adapter, lib);
        entry.runs.push(m);
        log(`  ${scenario.id} ${r + 1}/${runs} ${lib}: ${describe(m)}`);
      } catch (e) {
        entry.errors.push(String(e?.message ?? e));
        log(`  ${scenario.id} ${r + 1}/${runs} ${lib}: FAILED ${e?.stack ?? e}`);
      } finally {
        await adapter.cleanup().catch((e) => log(`  cleanup ${lib}: ${e?.message ?? e}`));
        await vacuumCatalogs();
      }
    }
  }
}

for (const a of Object.values(adapters)) await a.close().catch(() => {});

// Every run drops and recreates a library's schema. Where autovacuum is off
// (this project's CI machine), the system catalogs then fill with dead rows
// over a long bench and every later run pays for them: vacuum them after
// each run so the first and the last run see the same catalogs.
async function vacuumCatalogs() {
  for (const t of ['pg_class', 'pg_attribute', 'pg_depend', 'pg_type', 'pg_index', 'pg_attrdef', 'pg_constraint', 'pg_proc', 'pg_trigger']) {
    await sql(`VACUUM pg_catalog.${t}`).catch(() => {});
  }
}

function describe(m) {
  return Object.entries(m)
    .filter(([, v]) => typeof v === 'number')
    .map(([k, v]) => `${k}=${v >= 100 ? Math.round(v) : v.toFixed(2)}`)
    .join(' ') + (m.exactlyOnce && !m.exactlyOnce.ok ? ` exactly-once FAILED ${JSON.stringify(m.exactlyOnce)}` : '');
}

const titles = Object.fromEntries(scenarios.map((s) => [s.id, s.title]));
const rows = aggregate(results, libs, titles);
const minutes = ((Date.now() - t0) / 60_000).toFixed(1);
const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB`;

console.log();
const storage = Object.fromEntries(Object.entries(adapters).map(([l, a]) => [l, a.storage]));
console.log(table(rows, libs, labels, storage));
console.log();
if (libs.some((l) => !['ours', 'ours-sync', 'ours-forget', 'base'].includes(l))) {
  console.log('ours vs best peer: above 1× ours leads (throughput: ours ÷ best peer; latency and RSS: best peer ÷ ours)');
  if (libs.includes('ours-sync')) {
    console.log('ours (sync commit): claims and outcomes wait for the WAL flush, as the peers\' do: the comparison at equal durability');
  }
  if (libs.includes('ours-forget')) {
    console.log('ours (forgetting): sync commit, and each success deletes its job (retention.succeeded: 0), as graphile-worker keeps no successes');
  }
}
if (libs.includes('base') && libs.includes(BASE_COUNTERPART)) {
  console.log(`ours vs base: this checkout against ${process.env.BENCH_BASE}, the same way (above 1× this checkout is better)`);
}
// The PgBouncer rows: what each library does through the pooler.
const poolerNotes = environment.pgbouncer ? Object.fromEntries(libs.map((l) => [l, poolerNote(adapters[l])])) : null;
if (poolerNotes) {
  console.log(
    `through PgBouncer: ${environment.pgbouncer}, transaction mode, its defaults (default_pool_size 20), started by the bench; ` +
      'the workers connect through it, the pre-fill and the checks go direct',
  );
  for (const lib of libs) console.log(`  ${labels[lib]}: ${poolerNotes[lib]}`);
  if (results['latency-pgbouncer-poll']) {
    console.log(
      "  ours polling: its rows are set against the peers' figures in the rows above, where the peers poll too",
    );
  }
}
const loadNote = `load avg ${loadAtStart.toFixed(1)} at start, ${os.loadavg()[0].toFixed(1)} at end`;
const pgbouncerNote = environment.pgbouncer ? ` · ${environment.pgbouncer}` : '';
console.log(`Node ${process.version} · PostgreSQL ${pgVersion}${pgbouncerNote} · ${machine} · ${runs} run(s), median (min–max) · scale ${scale} · ${minutes} min · ${loadNote}`);
const failures = Object.entries(results).flatMap(([s, byLib]) =>
  Object.entries(byLib).flatMap(([l, e]) => e.errors.map((err) => `${s}/${l}: ${err}`)),
);
if (failures.length) console.log(`\nFailures:\n${failures.map((f) => `  - ${f}`).join('\n')}`);

const out = flags.out ?? `${BENCH}/results/${started.toISOString().replace(/[:.]/g, '-')}.json`;
mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
writeFileSync(
  out,
  JSON.stringify(
    {
      startedAt: started.toISOString(),
      minutes: Number(minutes),
      node: process.version,
      postgres: pgVersion,
      pgbouncer: environment.pgbouncer ?? null,
      poolerNotes,
      machine,
      loadAverage: { start: loadAtStart, end: os.loadavg()[0] },
      database: DATABASE_URL.replace(/\/\/[^@]*@/, '//'),
      redis: REDIS_URL.replace(/\/\/[^@]*@/, '//'),
      runs,
      scale,
      libraries: labels,
      settings: Object.fromEntries(await Promise.all(libs.map(async (l) => [l, await settingsOf(l)]))),
      table: rows.map((r) => ({ title: r.title, field: r.field, values: r.values })),
      results,
    },
    null,
    2,
  ),
);
console.log(`\nJSON: ${out}`);

function poolerNote(adapter) {
  if (!adapter) return 'failed to load';
  if (adapter.storage !== 'postgres') return 'n/a (Redis: no PostgreSQL pooler in its path)';
  return adapter.pooler ? adapter.pooler.note : 'not run (this build has no pooler options)';
}

async function settingsOf(lib) {
  try {
    const m = await load(lib);
    return { concurrency10: m.settings?.(10), concurrency50: m.settings?.(50) };
  } catch {
    return null;
  }
}
