// Not part of the bench: what one hot-path statement of this library costs
// PostgreSQL, per job, with nothing else running. It fills the queue through
// the library, then claims and finishes it in batches on one connection,
// reading that backend's CPU time (/proc/<pid>/schedstat, nanoseconds) around
// each statement. Linux only.
//
//   node bench/src/statement-cost.mjs [finish] [batch] [n] [kept]
//
// finish: how the claimed rows are finished
//   succeed   the library's own statement (the row keeps its history)
//   delete    the same rows deleted instead, for comparison: what a queue
//             that forgets finished jobs pays (the rows that refer to them go
//             through the trigger of job_deleted; before schema 7, through
//             cascading foreign keys, and commit 1b2a4f8 of this file measured
//             both ways side by side)
//   forget    the library's forgetting success write (keep.succeeded: false): the
//             rows locked, deleted, their throughput counted in job_forgotten
//   history   the layout of a small hot table and a history partitioned by day:
//             each row moves, in one statement, from job to job_history (made
//             here: the job table's columns, one partition for today, its id
//             indexed); the job_deleted trigger is off, as executions and
//             steps would stay with the history
//
// NO_LEASE_INDEX=1 drops the lease index (job_lease_expiry_idx) first: what the claim's one
// extra index entry costs it, and what a rescue's search for expired leases costs without it
// (timed after the run, over the kept rows, 5 times: the median).
//
// Beside the CPU, the WAL each statement kind writes (pg_current_wal_insert_lsn
// read around it), per job.
// kept: finished jobs written into the table first (as the claim1m scenario)
import fs from 'node:fs';
import pg from 'pg';
import { DATABASE_URL, checkpoint } from './common.mjs';
import { load } from './adapters/index.mjs';

const { outcomeStatements } = await import('../../dist/lib/storage/jobs/outcomes/outcome-statements.js');
const { claimStatements } = await import('../../dist/lib/storage/jobs/claim/claim-statements.js');

const [finish = 'succeed', size = '500', total = '40000', kept = '0'] = process.argv.slice(2);
const batch = Number(size);
const n = Number(total);
const SCHEMA = 'bench_jobs';
const S = outcomeStatements(SCHEMA);
// The library's statements take named parameters (a Statement: its text, and its values from one object).
const claim = claimStatements(SCHEMA).claim;
// The succeed statement's parameters: ids, worker, now, the NOTIFY channel of batch settlement,
// attempts, results, traces (null: no traced attempt); the delete takes the same, in the same order.
const finishText = {
  succeed: S.succeed.text,
  forget: S.forget.text,
  history: null,
  delete: `DELETE FROM ${SCHEMA}.job j
    WHERE j.id = ANY($1::uuid[]) AND j.worker_id = $2 AND j.state = 'active'
      AND j.attempt = ($5::jsonb ->> (j.id::text))::int
      AND $3::timestamptz IS NOT NULL AND $4::text IS NOT NULL AND $6::jsonb IS NOT NULL
      AND $7::jsonb IS NULL
    RETURNING j.id`,
}[finish];
if (finishText === undefined) throw new Error(`unknown finish "${finish}" (succeed, delete, forget, history)`);

const ours = (await load('ours')).create();
await ours.reset();
if (Number(kept) > 0) await ours.prefillFinished(Number(kept));
await ours.enqueueBulk(n);
await ours.analyze();
await ours.close();
await checkpoint();

const c = new pg.Client({ connectionString: DATABASE_URL, options: '-c synchronous_commit=off' });
await c.connect();
let text = finishText;
if (finish === 'history') text = await historyLayout(c);
const noLeaseIndex = process.env.NO_LEASE_INDEX === '1';
if (noLeaseIndex) await c.query(`DROP INDEX ${SCHEMA}.job_lease_expiry_idx`);
const { rows: [{ pid }] } = await c.query('SELECT pg_backend_pid() AS pid');
const cpuMs = () => Number(fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;

const walAt = async () => BigInt((await c.query(`SELECT pg_current_wal_insert_lsn() - '0/0' AS b`)).rows[0].b);
let claimMs = 0;
let finishMs = 0;
let claimWal = 0n;
let finishWal = 0n;
let done = 0;
for (;;) {
  let wal = await walAt();
  let t = cpuMs();
  const { rows } = await c.query({
    name: 'claim',
    text: claim.text,
    values: claim.values({
      queue: 'default',
      now: new Date(),
      names: ['noop'],
      limit: batch,
      workerId: 'statement-cost',
      leaseMs: 30_000,
    }),
  });
  claimMs += cpuMs() - t;
  claimWal += (await walAt()) - wal;
  if (rows.length === 0) break;
  const attempts = Object.fromEntries(rows.map((r) => [r.id, r.attempt]));
  const values = S.succeed.values({
    ids: rows.map((r) => r.id),
    workerId: 'statement-cost',
    now: new Date(),
    channel: 'none',
    attempts: JSON.stringify(attempts),
    results: '{}',
    traces: null,
  });
  if (finish === 'forget') values.push(`{${rows.map((r) => r.id).join(',')}}`);
  wal = await walAt();
  t = cpuMs();
  await c.query({ name: finish, text, values });
  finishMs += cpuMs() - t;
  finishWal += (await walAt()) - wal;
  done += rows.length;
}
// The rescue's search: the rows whose lease ran out (none here), as its statement looks for them.
const rescueMs = [];
for (let i = 0; i < 5; i++) {
  const t0 = performance.now();
  await c.query(
    `SELECT id FROM ${SCHEMA}.job WHERE lease_expires_at IS NOT NULL AND lease_expires_at < now() ORDER BY lease_expires_at LIMIT 100`,
  );
  rescueMs.push(performance.now() - t0);
}
const rescue = rescueMs.sort((a, b) => a - b)[2].toFixed(2);
await c.end();
await ours.cleanup();
const us = (ms) => ((ms * 1000) / done).toFixed(1);
const bytes = (b) => (Number(b) / done).toFixed(0);
console.log(
  `${done} jobs in batches of ${batch}, ${kept} finished jobs kept: backend CPU per job: claim ${us(claimMs)} us, ` +
    `${finish} ${us(finishMs)} us; WAL per job: claim ${bytes(claimWal)} B, ${finish} ${bytes(finishWal)} B; ` +
    `rescue search ${rescue} ms${noLeaseIndex ? ' (no lease index)' : ''}`,
);
process.exit(0);

/**
 * Makes the history layout's table beside the job table and returns the statement that moves the
 * claimed rows there as they succeed (the succeed statement's parameters, in its order).
 */
async function historyLayout(client) {
  const { rows } = await client.query(
    `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'job' ORDER BY ordinal_position`,
    [SCHEMA],
  );
  const columns = rows.map((r) => r.column_name);
  const set = {
    state: `'succeeded'`,
    completed_at: '$3::timestamptz',
    result: `$6::jsonb -> (d.id::text)`,
    lease_expires_at: 'NULL',
    progress: 'CASE WHEN d.progress IS NULL THEN NULL ELSE 1 END',
  };
  const day = new Date();
  day.setUTCHours(0, 0, 0, 0);
  const next = new Date(day.getTime() + 86_400_000);
  await client.query(`DROP TABLE IF EXISTS ${SCHEMA}.job_history;
    CREATE TABLE ${SCHEMA}.job_history (LIKE ${SCHEMA}.job INCLUDING DEFAULTS) PARTITION BY RANGE (completed_at);
    CREATE TABLE ${SCHEMA}.job_history_today PARTITION OF ${SCHEMA}.job_history
      FOR VALUES FROM ('${day.toISOString()}') TO ('${next.toISOString()}');
    CREATE INDEX ON ${SCHEMA}.job_history (id);
    ALTER TABLE ${SCHEMA}.job DISABLE TRIGGER job_deleted`);
  return `WITH d AS (
      DELETE FROM ${SCHEMA}.job j
       WHERE j.id = ANY($1::uuid[]) AND j.worker_id = $2 AND j.state = 'active'
         AND j.attempt = ($5::jsonb ->> (j.id::text))::int AND $4::text IS NOT NULL AND $7::jsonb IS NULL
      RETURNING j.*
    )
    INSERT INTO ${SCHEMA}.job_history (${columns.join(', ')})
    SELECT ${columns.map((col) => set[col] ?? `d.${col}`).join(', ')} FROM d
    RETURNING id`;
}
