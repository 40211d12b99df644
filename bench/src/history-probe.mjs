// The large-history script's probes: the worker's claim statement timed alone,
// and retention passes run through the library's own RetentionService.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { DATABASE_URL, ms, now, percentile, sleep } from './common.mjs';

export const PROBE_QUEUE = 'probe';
const PROBE_JOB = 'probe-job';

/** The p-quantile of `values` in any order. */
const quantileOf = (values, p) => percentile([...values].sort((a, b) => a - b), p);

export const median = (values) => quantileOf(values, 0.5);

/** Queues `n` probe jobs, rows shaped as the library's enqueue writes them. */
export async function queueProbeJobs(c, schema, n) {
  await c.query(
    `INSERT INTO ${schema}.job (id, name, queue, payload, state, priority, run_at, attempt, max_attempts, created_at)
     SELECT (lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint), 12, '0') || '7' || substr(md5(random()::text), 1, 3)
             || '8' || substr(md5(random()::text), 1, 15))::uuid,
            $2, $3, jsonb_build_object('i', g), 'queued', 0, now() - interval '1 second', 0, 3, now()
       FROM generate_series(1, $1::int) g`,
    [n, PROBE_JOB, PROBE_QUEUE],
  );
}

/**
 * The worker's claim statement (the plain claim, prepared, on a connection
 * with the worker's session settings, `sessionOptions`, that commits as
 * the worker's do) claiming 10 probe jobs, `count` times, one
 * every `everyMs`, or until `until()` says stop; each claimed batch is marked
 * succeeded outside the timing, as the worker's outcome write would. Returns
 * the latencies in ms.
 */
export async function probeClaims({
  schema,
  claimSql,
  sessionOptions,
  count = Infinity,
  everyMs = 10,
  until = () => false,
}) {
  const c = new pg.Client({ connectionString: DATABASE_URL, options: sessionOptions });
  await c.connect();
  try {
    await c.query('SET synchronous_commit = off');
    const out = [];
    for (let k = 0; k < count && !until(); k++) {
      const t = now();
      const { rows } = await c.query({
        name: 'claim',
        // The library's claim takes named parameters: its text, and its values from one object.
        text: claimSql.text,
        values: claimSql.values({
          queue: PROBE_QUEUE,
          now: new Date(),
          names: [PROBE_JOB],
          limit: 10,
          workerId: 'probe-worker',
          leaseMs: 30_000,
        }),
      });
      out.push(ms(t, now()));
      if (rows.length) {
        await c.query(
          `UPDATE ${schema}.job SET state = 'succeeded', lease_expires_at = NULL, completed_at = now()
            WHERE id = ANY($1::uuid[])`,
          [rows.map((r) => r.id)],
        );
      }
      await sleep(everyMs);
    }
    return out;
  } finally {
    await c.end();
  }
}

export function latencySummary(samples) {
  return { n: samples.length, p50: quantileOf(samples, 0.5), p99: quantileOf(samples, 0.99) };
}

/**
 * CPU time the whole machine spent busy so far, in seconds (every process: the pass's database
 * backend, its Node process, the WAL writer and checkpointer). Kernel clock ticks at USER_HZ 100.
 */
function machineBusySeconds() {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  const [user, nice, system, , , irq, softirq] = ticks;
  return (user + nice + system + irq + softirq) / 100;
}

/**
 * One retention pass of the library's RetentionService, in an app of its own
 * (worker off, so nothing else runs), with `retention` as its options. Returns
 * the rows it deleted, the seconds it took and the machine's busy CPU-seconds
 * meanwhile.
 */
export async function retentionPass({ lib, schema, retention, countSql }) {
  const { JobsModule, RetentionService } = lib;
  class HistoryRetentionModule {}
  const AppModule = Reflect.decorate(
    [
      Module({
        imports: [
          JobsModule.forRoot({
            connection: DATABASE_URL,
            schema,
            worker: { enabled: false },
            scheduler: { enabled: false },
            unregisteredJobs: 'ignore',
            retention,
          }),
        ],
      }),
    ],
    HistoryRetentionModule,
  );
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  try {
    const before = await countSql();
    const t = now();
    const busy = machineBusySeconds();
    await app.get(RetentionService).prune();
    const cpuSeconds = machineBusySeconds() - busy;
    const seconds = ms(t, now()) / 1000;
    const deleted = before - (await countSql());
    // cpuSeconds is the pass's own only when nothing else runs (the pass alone).
    return { deleted, seconds, rowsPerSec: deleted / seconds, cpuSeconds };
  } finally {
    await app.close();
  }
}
