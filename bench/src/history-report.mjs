// The large-history script's report: the figures it measured, printed as Markdown tables.
import os from 'node:os';

const fmt = (n, d = 0) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }) : String(n);
const mb = (b) => `${fmt(b / 1048576, 1)} MB`;

/** Prints the report with `log`; returns whether the claim at N kept is within 15% of the empty table. */
export function printReport(m, log) {
  const {
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
  } = m;
  const { settleSeconds, empty, atN, drainDead, sizes, sizesAfter, alone, loaded, av, vacuumAfterSeconds } = m;
  const { statsEmpty, statsFilled, statsAfterRetention, statsVacuumed } = m;
  let pass;
  const ratio = (a, b) => a / b;
  const drainRatio = ratio(atN.drain.median, empty.drain.median);
  const p50Ratio = ratio(atN.claim.p50, empty.claim.p50);
  const p99Ratio = ratio(atN.claim.p99, empty.claim.p99);
  log('');
  log(`# Large history: ${fmt(ROWS)} finished jobs kept`);
  log(
    `server: PostgreSQL ${av.server.server_version}, shared_buffers ${av.server.shared_buffers} x 8 kB; machine: ${os.cpus().length} cores; ${DATABASE_URL.replace(/\/\/[^@]*@/, '//')} schema ${SCHEMA}`,
  );
  log(
    `history: ${counts.map((r) => `${r.state} ${fmt(r.n)}`).join(', ')}; job_execution ${fmt(executions)} rows; over 30 days`,
  );
  log(
    `fill: ${fmt(fillSeconds, 1)} s (${fmt(ROWS / fillSeconds)} rows/s); VACUUM (ANALYZE) after it: ${fmt(vacuumSeconds, 1)} s`,
  );
  log('');
  log(
    `## Claim: empty table against ${fmt(ROWS)} kept (drain of ${fmt(DRAIN)}${PAD ? ` with ${PAD} bytes of payload padding` : ''}, ${PROCS === 1 ? '1 worker process' : `${PROCS} worker processes`}, concurrency 10; median of ${RUNS})`,
  );
  log('| figure | empty | kept | kept / empty |');
  log('| --- | --- | --- | --- |');
  log(
    `| drain (jobs/s) | ${fmt(empty.drain.median)} (${empty.drain.runs.map((x) => fmt(x)).join(', ')}) | ${fmt(atN.drain.median)} (${atN.drain.runs.map((x) => fmt(x)).join(', ')}) | ${fmt(drainRatio, 3)} |`,
  );
  log(`| claim of 10, p50 (ms) | ${fmt(empty.claim.p50, 2)} | ${fmt(atN.claim.p50, 2)} | ${fmt(p50Ratio, 3)} |`);
  log(`| claim of 10, p99 (ms) | ${fmt(empty.claim.p99, 2)} | ${fmt(atN.claim.p99, 2)} | ${fmt(p99Ratio, 3)} |`);
  log(
    `| drain after retention, before VACUUM (jobs/s) | | ${fmt(drainDead)} | ${fmt(drainDead / empty.drain.median, 3)} |`,
  );
  pass = drainRatio >= 0.85 && p50Ratio <= 1.15;
  log(
    `${pass ? 'PASS' : 'FAIL'}: at ${fmt(ROWS)} kept the drain is ${fmt((drainRatio - 1) * 100, 1)}% and the claim's p50 ${fmt((p50Ratio - 1) * 100, 1)}% against the empty table (target: within 15%)`,
  );
  log('');
  log('## Sizes at N kept');
  log('| relation | kind | size | after retention and VACUUM |');
  log('| --- | --- | --- | --- |');
  for (const r of sizes) {
    const a = sizesAfter.find((x) => x.name === r.name);
    log(
      `| ${r.name} | ${r.kind === 'r' ? `table (total with indexes and TOAST: ${mb(r.total)})` : `index of ${r.table}`} | ${mb(r.bytes)} | ${a ? mb(a.bytes) : ''} |`,
    );
  }
  log(`per kept job: ${fmt(sizes.find((r) => r.name === 'job').total / ROWS)} bytes of job (table and indexes)`);
  log('');
  log(
    `## Retention (${DAYS === 1 ? 'one day' : `${DAYS} days`} of history per pass, succeeded jobs only; failed and cancelled ones between them stay)`,
  );
  log(
    `alone: ${fmt(alone.deleted)} rows in ${fmt(alone.seconds, 1)} s = ${fmt(alone.rowsPerSec)} rows/s (pause ${PAUSES[0]} ms); ` +
      `the machine busy ${fmt(alone.cpuSeconds, 1)} CPU-s (${fmt((alone.cpuSeconds / alone.deleted) * 1e6, 1)} µs a row, ` +
      `${fmt((alone.cpuSeconds / alone.seconds) * 100)}% of one core while it ran)`,
  );
  log(
    '| retention beside the drains | drain during the pass (jobs/s, median) | the same drains without it | ratio | claim of 10 p50 / p99 (ms), during / without | pass (s) | rows/s |',
  );
  log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const l of loaded) {
    const r = l.retention;
    const w = l.without;
    log(
      `| ${l.label} | ${fmt(l.drainJobsPerSec)} (${l.drains}) | ${fmt(w.drainJobsPerSec)} | ${fmt(l.drainJobsPerSec / w.drainJobsPerSec, 2)}× | ${fmt(l.claims.p50, 2)} / ${fmt(l.claims.p99, 2)} against ${fmt(w.claims.p50, 2)} / ${fmt(w.claims.p99, 2)} | ${fmt(r.seconds, 1)} | ${fmt(r.rowsPerSec)} |`,
    );
  }
  log('');
  log('## Dead rows and vacuum');
  log(
    `server: autovacuum ${av.server.autovacuum}, naptime ${av.server.autovacuum_naptime} s, vacuum_scale_factor ${av.server.autovacuum_vacuum_scale_factor}, threshold ${av.server.autovacuum_vacuum_threshold}, insert_scale_factor ${av.server.autovacuum_vacuum_insert_scale_factor}, analyze_scale_factor ${av.server.autovacuum_analyze_scale_factor}, cost_limit ${av.server.autovacuum_vacuum_cost_limit}, cost_delay ${av.server.autovacuum_vacuum_cost_delay} ms; job reloptions: ${JSON.stringify(av.tables.job)}`,
  );
  log('| moment | job live | job dead | autovacuum runs | autoanalyze runs |');
  log('| --- | --- | --- | --- | --- |');
  for (const [moment, s] of [
    ['empty', statsEmpty],
    ['after the fill', statsFilled],
    ['after retention', statsAfterRetention],
    ['after VACUUM', statsVacuumed],
  ]) {
    const j = s.find((x) => x.name === 'job') ?? {};
    log(`| ${moment} | ${fmt(j.live)} | ${fmt(j.dead)} | ${j.autovacuum_count ?? ''} | ${j.autoanalyze_count ?? ''} |`);
  }
  const autovacuumRan = statsVacuumed.some((s) => Number(s.autovacuum_count) > 0);
  log(
    `autovacuum ${autovacuumRan ? 'ran on the job tables during the run' : 'did not run on the job tables during the run'}; VACUUM of job and job_execution after retention: ${fmt(vacuumAfterSeconds, 1)} s`,
  );
  log(
    `the fill's writes settled (checkpoint, kernel writeback under 64 MB) in ${fmt(settleSeconds, 1)} s before the measurements`,
  );
  return pass;
}
