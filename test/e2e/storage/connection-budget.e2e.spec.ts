import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  Job,
  JobQueue,
  JobsModule,
  JobsMonitor,
  type JobContext,
  type JobHandler,
  type JobsModuleOptions,
} from 'nestjs-durable-jobs';
import pg from 'pg';
import { databaseUrl, dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startPgBouncer, type PgBouncer } from '../../support/pgbouncer.js';
import { sleep, waitFor } from '../../support/wait.js';

/**
 * What `maxConnections` promises: an instance never opens more than its
 * budget, and a renewal never waits for a connection behind claims, steps
 * or enqueues, so a running job keeps its lease however busy the rest is.
 */

@Injectable()
@Job('budget-work', { maxAttempts: 1 })
class BudgetWork implements JobHandler<{ steps: number; stepMs: number }> {
  async run({ steps, stepMs }: { steps: number; stepMs: number }, ctx: JobContext) {
    for (let i = 0; i < steps; i++) {
      await ctx.step(`s${i}`, async () => {
        await sleep(stepMs);
        return i;
      });
    }
    return ctx.transaction(async (manager) => {
      await manager.query('SELECT 1');
      return { steps };
    });
  }
}

const apps: INestApplication[] = [];
const schemas: string[] = [];
const databases: string[] = [];
let bouncer: PgBouncer | undefined;

afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});
afterAll(async () => {
  await bouncer?.stop();
  await dropSchemas(...schemas);
  for (const name of databases) await sql(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
});

/**
 * A database of the test's own, and its URL: the sessions counted on it are this instance's only,
 * whatever else (another test run, a tool) holds library sessions on the same server.
 */
async function ownDatabase(prefix: string): Promise<{ name: string; url: string }> {
  const name = uniqueSchema(prefix);
  await sql(`CREATE DATABASE "${name}"`);
  databases.push(name);
  const url = new URL(databaseUrl());
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

async function start(schema: string, options: JobsModuleOptions): Promise<INestApplication> {
  @Module({ providers: [BudgetWork] })
  class Own {}
  const ref = await Test.createTestingModule({
    imports: [JobsModule.forRoot({ schema, unregisteredJobs: 'ignore', ...options }), Own],
  }).compile();
  const app = ref.createNestApplication({ logger: process.env.TEST_LOGS ? undefined : false });
  await app.init();
  apps.push(app);
  return app;
}

/** Executions by state, and jobs by state, of a schema. */
async function outcomes(schema: string) {
  const executions = await sql<{ state: string; n: number }>(
    `SELECT state, count(*)::int AS n FROM "${schema}".job_execution GROUP BY state`,
  );
  const jobs = await sql<{ state: string; n: number }>(
    `SELECT state, count(*)::int AS n FROM "${schema}".job GROUP BY state`,
  );
  const [{ attempts }] = (await sql<{ attempts: number }>(
    `SELECT coalesce(max(attempt), 0)::int AS attempts FROM "${schema}".job`,
  )) as [{ attempts: number }];
  const byState = (rows: Array<{ state: string; n: number }>) => Object.fromEntries(rows.map((r) => [r.state, r.n]));
  return { executions: byState(executions), jobs: byState(jobs), attempts };
}

/** Sessions of the library's pools on `database` now (each carries "nestjs-durable-jobs" in its name). */
async function librarySessions(database: string): Promise<number> {
  const [row] = await sql<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = $1 AND application_name LIKE 'nestjs-durable-jobs%'`,
    [database],
  );
  return row!.n;
}

it('an instance never holds more connections than maxConnections, and reports them', async () => {
  const schema = uniqueSchema('budget_count');
  const database = await ownDatabase('budget_db');
  const app = await start(schema, {
    connection: database.url,
    maxConnections: 7,
    worker: { concurrency: 12, lease: 5_000 },
  });
  const jobs = app.get(JobQueue);
  let most = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      most = Math.max(most, await librarySessions(database.name));
      await sleep(20);
    }
  })();
  // Enqueues, steps, ctx.transaction() and claims all at once, from more handlers than connections.
  await Promise.all(
    Array.from({ length: 4 }, () =>
      jobs.enqueueMany(Array.from({ length: 10 }, () => ({ job: BudgetWork, payload: { steps: 3, stepMs: 5 } }))),
    ),
  );
  await waitFor(
    'every job to succeed',
    async () => (await app.get(JobsMonitor).counts({ fromPrimary: true })).total.succeeded === 40,
    60_000,
  );
  sampling = false;
  await sampler;
  expect(most).toBeGreaterThan(0);
  expect(most).toBeLessThanOrEqual(7);
  const [worker] = await app.get(JobsMonitor).workers();
  expect(worker!.connections!.max).toBe(7);
  expect(worker!.connections!.open).toBeGreaterThan(0);
  expect(worker!.connections!.open).toBeLessThanOrEqual(7);
});

it('keeps every lease while every other connection of the budget waits', async () => {
  const schema = uniqueSchema('budget_renew');
  schemas.push(schema);
  // The least budget: 1 LISTEN, 1 for renewals, 2 for claims, outcomes and steps, 1 for the module's pool.
  const lease = 1_500;
  const app = await start(schema, {
    connection: databaseUrl(),
    maxConnections: 5,
    worker: { concurrency: 4, lease },
  });
  await app
    .get(JobQueue)
    .enqueueMany(Array.from({ length: 4 }, () => ({ job: BudgetWork, payload: { steps: 40, stepMs: 10 } })));
  await waitFor('all four jobs to be running their steps', async () => {
    const [row] = await sql<{ n: number }>(`SELECT count(DISTINCT job_id)::int AS n FROM "${schema}".job_step`);
    return row!.n === 4;
  });
  // Every step record now waits on the lock, holding the worker's connections and queueing the rest.
  const holder = new pg.Client({ connectionString: databaseUrl() });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query(`LOCK TABLE "${schema}".job_step IN ACCESS EXCLUSIVE MODE`);
    await sleep(lease * 3);
    const [waiting] = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = '"${schema}".job_step'::regclass`,
    );
    expect(waiting!.n).toBeGreaterThanOrEqual(2);
    await holder.query('COMMIT');
  } finally {
    await holder.end();
  }
  const ended = async () => {
    const { jobs } = await outcomes(schema);
    return (jobs.succeeded ?? 0) + (jobs.failed ?? 0) === 4 && jobs;
  };
  expect(await waitFor('every job to end', ended, 30_000)).toEqual({ succeeded: 4 });
  // No attempt was interrupted (a success keeps no execution row of its own) and none ran twice.
  const { executions, attempts } = await outcomes(schema);
  expect(executions.interrupted).toBeUndefined();
  expect(attempts).toBe(1);
});

it('two instances behind a 20-connection session pool run steps for a minute with no attempt interrupted', async () => {
  bouncer = await startPgBouncer({ mode: 'session', upstream: databaseUrl() });
  const schema = uniqueSchema('budget_session');
  schemas.push(schema);
  // PgBouncer's default_pool_size is 20: two instances at the default budget of 10 fill it exactly.
  const options: JobsModuleOptions = {
    connection: bouncer.url,
    pooler: 'session',
    worker: { concurrency: 10, lease: 3_000 },
  };
  const [a, b] = [await start(schema, options), await start(schema, options)];
  const jobs = a.get(JobQueue);
  const reported: number[] = [];
  const until = Date.now() + 60_000;
  let enqueued = 0;
  while (Date.now() < until) {
    await jobs.enqueueMany(Array.from({ length: 10 }, () => ({ job: BudgetWork, payload: { steps: 3, stepMs: 15 } })));
    enqueued += 10;
    for (const w of await b.get(JobsMonitor).workers()) if (w.connections?.open) reported.push(w.connections.open);
    await sleep(250);
  }
  await waitFor('every job to end', async () => (await outcomes(schema)).jobs.succeeded === enqueued, 60_000);
  const { executions, jobs: byState, attempts } = await outcomes(schema);
  expect(byState).toEqual({ succeeded: enqueued });
  expect(executions.interrupted).toBeUndefined();
  expect(attempts).toBe(1);
  expect(Math.max(...reported)).toBeLessThanOrEqual(10);
}, 180_000);
