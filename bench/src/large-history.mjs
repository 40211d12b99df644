// How the job table behaves with a large finished history kept: the claim on an
// empty table against the claim with N finished rows, the table's and indexes'
// sizes, retention's speed and what it does to claims running beside it, and
// dead rows and (auto)vacuum. Prints a report and a PASS/FAIL line for the
// target: the claim at N kept within 15% of the empty table.
//
//   npm run bench:history                     # 10M rows: about 15 min on 2 cores
//   npm run bench:history -- --rows=1000000   # a quicker look
//   npm run bench:history -- --help
//
// It works in the bench database (see common.mjs) in two schemas of its own: bench_history (the
// history) and bench_history_empty (the same tables, empty), dropped at the start and at the end
// (--keep leaves bench_history). The two are measured in turns, run by run, so the machine's drift
// (other work on it, the fill's writes still being flushed) weighs on both alike.
const fs = await import('node:fs');
const { DATABASE_URL, checkpoint, ensureDatabase, ms, now, sleep, withPg } = await import('./common.mjs');
const { drain, startWorkers } = await import('./children.mjs');
const { DAY, autovacuumSettings, fillStatement, relationSizes, tableStats } = await import('./history-fill.mjs');
const probe = await import('./history-probe.mjs');
const { printReport } = await import('./history-report.mjs');
const { oursAdapter } = await import('./adapters/ours-app.mjs');

const SCHEMA = 'bench_history';
const EMPTY = 'bench_history_empty';
const args = Object.fromEntries(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k, v ?? 'true'];
  }),
);
if (args.help) {
  console.log(`large-history: the job table with a large finished history kept
  --rows=N        finished jobs kept (default 10000000)
  --drain=N       jobs per drain (default 20000)
  --runs=N        drains per figure, the median is reported (default 5)
  --claims=N      single claims of 10 timed per latency figure (default 400)
  --pauses=a,b    retention.pause values compared under load, ms (default 0,20,100)
  --chunk=N       retention.chunk for the passes (default: the library's)
  --days=N        days of history each pass deletes (default 1; a longer pass spans more drains)
  --procs=N       worker processes per drain, concurrency 10 each (default 1)
  --payload=N     pad each drained job's payload with N bytes (default 0: { i: n } only)
  --keep          leave the schema ${SCHEMA} in place at the end
  DATABASE_URL / BENCH_DB as for npm run bench (the schemas live in database "bench")`);
  process.exit(0);
}
const ROWS = Number(args.rows ?? 10_000_000);
const DRAIN = Number(args.drain ?? 20_000);
const RUNS = Number(args.runs ?? 5);
const CLAIMS = Number(args.claims ?? 400);
const PAUSES = String(args.pauses ?? '0,20,100')
  .split(',')
  .map(Number);
const CHUNK = args.chunk === undefined ? undefined : Number(args.chunk);
const DAYS = Number(args.days ?? 1);
const PROCS = Number(args.procs ?? 1);
// Bytes of padding in each drained job's payload: 0 leaves it { i }, far smaller than a history row.
const PAD = Number(args.payload ?? 0);
const SPAN = 30 * DAY;
const DIST = new URL('../../dist/lib/index.js', import.meta.url).href;
const lib = await import(DIST);
const { claimStatements } = await import(
  new URL('../../dist/lib/storage/jobs/claim/claim-statements.js', import.meta.url).href
);
// The worker's sessions' planner settings: the probe's claims run as the worker's do.
const { WORKER_PLANNER_SETTINGS } = await import(
  new URL('../../dist/lib/storage/jobs/worker-pool.js', import.meta.url).href
);
const WORKER_SESSION_OPTIONS = WORKER_PLANNER_SETTINGS.map(([name, value]) => `-c ${name}=${value}`).join(' ');

const log = (line = '') => console.log(line);
const step = (line) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
const fmt = (n, d = 0) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }) : String(n);
const q = (text, values) => withPg((c) => c.query(text, values));

/** One schema the drains and probes run on: its producer app, its claim statement. */
async function target(schema) {
  const { create } = await oursAdapter({ name: 'ours', label: schema, dist: DIST, schema });
  return {
    schema,
    adapter: create(),
    claimSql: claimStatements(schema).claim,
    // Jobs of the drains' queue still to finish: what the drain waits for, by the partial indexes.
    drainQueue: {
      async pendingCount() {
        const { rows } = await q(
          `SELECT (SELECT count(*) FROM ${schema}.job WHERE state = 'queued' AND queue = 'default')
                + (SELECT count(*) FROM ${schema}.job WHERE lease_expires_at IS NOT NULL AND queue = 'default') AS n`,
        );
        return Number(rows[0].n);
      },
    },
  };
}

await ensureDatabase();
const kept = await target(SCHEMA);
const bare = await target(EMPTY);
step(`schemas ${SCHEMA} and ${EMPTY}: drop, then the library's migrations (JobsModule start)`);
await kept.adapter.reset();
await bare.adapter.reset();

// The lowest UUIDv7 of a time: rows made since are a key range, found without a scan of the history.
const idFloor = (t) => {
  const h = Math.floor(t).toString(16).padStart(12, '0');
  return `${h.slice(0, 8)}-${h.slice(8)}-7000-8000-000000000000`;
};

// The drained and probed jobs leave again, so each run sees the same table: N finished rows and
// nothing else. Without `vacuum`, their dead rows stay, as retention's do until a VACUUM.
async function forgetSince(schema, since, { vacuum = true } = {}) {
  await q(`DELETE FROM ${schema}.job WHERE id >= $1`, [idFloor(since - 1000)]);
  if (vacuum) await q(`VACUUM ${schema}.job`);
}

/** One drain by --procs worker processes (the real JobWorker, as npm run bench runs it): jobs per second. */
async function timedDrain(on, { vacuum = true, settle = true } = {}) {
  const since = Date.now();
  if (PAD > 0) await on.adapter.enqueueBulkPayload(DRAIN, { pad: 'x'.repeat(PAD) });
  else await on.adapter.enqueueBulk(DRAIN);
  if (settle) {
    await q(`ANALYZE ${on.schema}.job`);
    await checkpoint();
  }
  // The worker process's adapter (adapters/ours.mjs) takes its schema from the environment it is forked with.
  process.env.BENCH_OURS_SCHEMA = on.schema;
  const children = await startWorkers({ lib: 'ours', count: PROCS, concurrency: 10, size: DRAIN });
  const { seconds } = await drain({ adapter: on.drainQueue, children, total: DRAIN, timeoutMs: 120_000 + DRAIN * 20 });
  await forgetSince(on.schema, since, { vacuum });
  return DRAIN / seconds;
}

// A bulk fill leaves gigabytes for the kernel to write back after its checkpoint: wait until the
// kernel's dirty and writeback pages are under 64 MB (Linux; elsewhere it only checkpoints).
async function settleIo() {
  await checkpoint();
  const t0 = now();
  const pending = () => {
    try {
      const m = fs.readFileSync('/proc/meminfo', 'utf8');
      const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(m)?.[1] ?? 0);
      return (kb('Dirty') + kb('Writeback')) / 1024;
    } catch {
      return 0;
    }
  };
  while (pending() > 64 && ms(t0, now()) < 180_000) await sleep(500);
  await sleep(2_000);
  return ms(t0, now()) / 1000;
}

/** Drains on the empty and the kept table in turns (the order alternating), after a warm-up each. */
async function drainsInTurns() {
  for (const on of [bare, kept]) step(`${on.schema} warm-up drain: ${fmt(await timedDrain(on))} jobs/s (not counted)`);
  const out = new Map([
    [bare, []],
    [kept, []],
  ]);
  for (let r = 0; r < RUNS; r++) {
    for (const on of r % 2 ? [kept, bare] : [bare, kept]) {
      out.get(on).push(await timedDrain(on));
      step(`${on.schema} drain ${r + 1}/${RUNS}: ${fmt(out.get(on).at(-1))} jobs/s`);
    }
  }
  const summary = (runs) => ({ runs, median: probe.median(runs) });
  return { empty: summary(out.get(bare)), kept: summary(out.get(kept)) };
}

/** Single claims of 10 with the worker's claim statement, on both tables in turns: 4 rounds each. */
async function claimsInTurns() {
  const samples = new Map([
    [bare, []],
    [kept, []],
  ]);
  for (let r = 0; r < 4; r++) {
    for (const on of r % 2 ? [kept, bare] : [bare, kept]) {
      const since = Date.now();
      const n = Math.ceil(CLAIMS / 4);
      await withPg((c) => probe.queueProbeJobs(c, on.schema, n * 10 + 1000));
      await q(`ANALYZE ${on.schema}.job`);
      const got = await probe.probeClaims({
        schema: on.schema,
        claimSql: on.claimSql,
        sessionOptions: WORKER_SESSION_OPTIONS,
        count: n,
        everyMs: 2,
      });
      samples.get(on).push(...got);
      await forgetSince(on.schema, since);
    }
  }
  const e = probe.latencySummary(samples.get(bare));
  const k = probe.latencySummary(samples.get(kept));
  step(
    `claim of 10: empty p50 ${fmt(e.p50, 2)} / p99 ${fmt(e.p99, 2)} ms, kept p50 ${fmt(k.p50, 2)} / p99 ${fmt(k.p99, 2)} ms`,
  );
  return { empty: e, kept: k };
}

// ---- 2. the history: N finished jobs over 30 days, written in chunks
const endMs = Date.now() - 60_000;
const statsEmpty = await withPg((c) => tableStats(c, SCHEMA));
let t = now();
const FILL_CHUNK = 500_000;
for (let from = 1; from <= ROWS; from += FILL_CHUNK) {
  const to = Math.min(ROWS, from + FILL_CHUNK - 1);
  await q(fillStatement(SCHEMA), [from, to, endMs, SPAN, ROWS]);
  if (to % 2_000_000 === 0 || to === ROWS) step(`filled ${fmt(to)} of ${fmt(ROWS)}`);
}
const fillSeconds = ms(t, now()) / 1000;
const statsFilled = await withPg((c) => tableStats(c, SCHEMA));
t = now();
// What autovacuum would do after a bulk insert (here it is off: see the report): set the
// visibility map and take statistics.
await q(`VACUUM (ANALYZE) ${SCHEMA}.job`);
await q(`VACUUM (ANALYZE) ${SCHEMA}.job_execution`);
const vacuumSeconds = ms(t, now()) / 1000;
const settleSeconds = await settleIo();
step(`the fill's writes settled in ${fmt(settleSeconds, 1)} s`);
const sizes = await withPg((c) => relationSizes(c, SCHEMA));
const counts = (await q(`SELECT state, count(*)::int AS n FROM ${SCHEMA}.job GROUP BY state ORDER BY state`)).rows;
const executions = Number((await q(`SELECT count(*) AS n FROM ${SCHEMA}.job_execution`)).rows[0].n);

// ---- 3. the claim: the empty table and N kept, in turns
const drainFigures = await drainsInTurns();
const claimFigures = await claimsInTurns();
const empty = { drain: drainFigures.empty, claim: claimFigures.empty };
const atN = { drain: drainFigures.kept, claim: claimFigures.kept };
await bare.adapter.cleanup();

// ---- 4. retention: --days of history (a day is 1/30 of N) per pass, through the library's RetentionService.
// Succeeded jobs pass their retention; failed and cancelled ones stay (retention.failed outlasts the
// history), as with the defaults (7 days against 30): the kept rows lie between the deleted ones.
let day = 0;
const keepFailed = () => Date.now() - (endMs - SPAN) + DAY;
// The day's rows, counted on the primary key (their ids are of their time), before and after the pass.
const sliceCount = async () => {
  const lo = idFloor(endMs - SPAN + day * DAY - 10_000);
  const hi = idFloor(endMs - SPAN + (day + DAYS) * DAY);
  const { rows } = await q(`SELECT count(*) AS n FROM ${SCHEMA}.job WHERE id >= $1 AND id < $2`, [lo, hi]);
  return Number(rows[0].n);
};
async function retentionDay(pause) {
  const cutoff = endMs - SPAN + (day + DAYS) * DAY;
  const retention = { succeeded: Date.now() - cutoff, failed: keepFailed(), workers: false, interval: 3_600_000 };
  if (pause !== undefined) retention.pause = pause;
  if (CHUNK !== undefined) retention.chunk = CHUNK;
  const result = await probe.retentionPass({ lib, schema: SCHEMA, retention, countSql: sliceCount });
  day += DAYS;
  return result;
}

// Alone: nothing else runs.
const alone = await retentionDay(PAUSES[0]);
step(`retention alone (pause ${PAUSES[0]} ms): ${fmt(alone.deleted)} rows in ${fmt(alone.seconds, 1)} s`);

// Under load: drains one after another and the claim probe beside them, while a pass runs; then as
// many drains again without retention, from the same start. Each drain leaves its jobs' dead rows
// (autovacuum may be off), so later drains of a phase run slower than earlier ones: a phase's
// drains are compared with the same number of drains from a vacuumed table, not with the first
// phase's. Only drains that ended while the pass ran count (the first one at least).
async function underLoad(label, pass, count = RUNS) {
  const since = Date.now();
  await withPg((c) => probe.queueProbeJobs(c, SCHEMA, 100_000));
  await q(`ANALYZE ${SCHEMA}.job`);
  await checkpoint();
  let running = true;
  const retention = pass ? pass().finally(() => (running = false)) : null;
  const probing = probe.probeClaims({
    schema: SCHEMA,
    claimSql: kept.claimSql,
    sessionOptions: WORKER_SESSION_OPTIONS,
    everyMs: 10,
    until: () => !running,
  });
  const drained = [];
  while (pass ? running || drained.length === 0 : drained.length < count) {
    drained.push({ jobsPerSec: await timedDrain(kept, { vacuum: false, settle: false }), during: running });
  }
  running = false;
  const claims = probe.latencySummary(await probing);
  const r = retention ? await retention : null;
  // The phase's dead rows go, so the next phase starts where this one did.
  await forgetSince(SCHEMA, since, { vacuum: true });
  const counted = drained.filter((d, k) => d.during || k === 0 || !pass).map((d) => d.jobsPerSec);
  const out = { label, drainJobsPerSec: probe.median(counted), drains: counted.length, claims, retention: r };
  step(
    `${label}: drain ${fmt(out.drainJobsPerSec)} jobs/s (median of ${counted.length}), claim p50 ${fmt(claims.p50, 2)} / p99 ${fmt(claims.p99, 2)} ms` +
      (r ? `, retention ${fmt(r.deleted)} rows in ${fmt(r.seconds, 1)} s` : ''),
  );
  return out;
}
const loaded = [];
for (const pause of PAUSES) {
  const during = await underLoad(`retention, pause ${pause} ms`, () => retentionDay(pause));
  during.without = await underLoad(`the same ${during.drains} drains without retention`, null, during.drains);
  loaded.push(during);
}
// Retention's dead rows, for the next section: one more day, alone, left unvacuumed.
await retentionDay(PAUSES[0]);

// ---- 5. dead rows and vacuum
const statsAfterRetention = await withPg((c) => tableStats(c, SCHEMA));
const drainDead = await timedDrain(kept, { vacuum: false });
t = now();
await q(`VACUUM ${SCHEMA}.job`);
await q(`VACUUM ${SCHEMA}.job_execution`);
const vacuumAfterSeconds = ms(t, now()) / 1000;
const statsVacuumed = await withPg((c) => tableStats(c, SCHEMA));
const sizesAfter = await withPg((c) => relationSizes(c, SCHEMA));
const av = await withPg((c) => autovacuumSettings(c, SCHEMA));

const pass = printReport(
  {
    ROWS,
    DRAIN,
    RUNS,
    PAD,
    PAUSES,
    DAYS,
    PROCS,
    SCHEMA,
    DATABASE_URL,
    counts,
    executions,
    fillSeconds,
    vacuumSeconds,
    settleSeconds,
    empty,
    atN,
    drainDead,
    sizes,
    sizesAfter,
    alone,
    loaded,
    av,
    vacuumAfterSeconds,
    statsEmpty,
    statsFilled,
    statsAfterRetention,
    statsVacuumed,
  },
  log,
);

if (!args.keep) await kept.adapter.cleanup();
else await kept.adapter.close();
await bare.adapter.close();
process.exit(pass ? 0 : 1);
