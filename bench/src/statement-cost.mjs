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
  delete: `DELETE FROM ${SCHEMA}.job j
    WHERE j.id = ANY($1::uuid[]) AND j.worker_id = $2 AND j.state = 'active'
      AND j.attempt = ($5::jsonb ->> (j.id::text))::int
      AND $3::timestamptz IS NOT NULL AND $4::text IS NOT NULL AND $6::jsonb IS NOT NULL
      AND $7::jsonb IS NULL
    RETURNING j.id`,
}[finish];
if (!finishText) throw new Error(`unknown finish "${finish}" (succeed, delete)`);

const ours = (await load('ours')).create();
await ours.reset();
if (Number(kept) > 0) await ours.prefillFinished(Number(kept));
await ours.enqueueBulk(n);
await ours.analyze();
await ours.close();
await checkpoint();

const c = new pg.Client({ connectionString: DATABASE_URL, options: '-c synchronous_commit=off' });
await c.connect();
const { rows: [{ pid }] } = await c.query('SELECT pg_backend_pid() AS pid');
const cpuMs = () => Number(fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;

let claimMs = 0;
let finishMs = 0;
let done = 0;
for (;;) {
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
  t = cpuMs();
  await c.query({ name: finish, text: finishText, values });
  finishMs += cpuMs() - t;
  done += rows.length;
}
await c.end();
await ours.cleanup();
const us = (ms) => ((ms * 1000) / done).toFixed(1);
console.log(`${done} jobs in batches of ${batch}, ${kept} finished jobs kept: backend CPU per job: claim ${us(claimMs)} us, ${finish} ${us(finishMs)} us`);
process.exit(0);
