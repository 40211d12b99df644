import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  Job,
  JobQueue,
  JobsError,
  JobsModule,
  JobsMonitor,
  type JobContext,
  type JobHandler,
  type JobsModuleOptions,
} from 'nestjs-durable-jobs';
import { databaseUrl, dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startPgBouncer, type PgBouncer } from '../../support/pgbouncer.js';
import { sleep, waitFor } from '../../support/wait.js';

/**
 * The module behind a real PgBouncer (Debian's 1.18: no prepared statements
 * across server connections in transaction mode) at its defaults:
 * default_pool_size 20, nothing in ignore_startup_parameters.
 */

/** A job with durable steps and its success written with the handler's own transaction. */
@Injectable()
@Job('pooled-work', { maxAttempts: 1 })
class PooledWork implements JobHandler<{ n: number; steps?: number; stepMs?: number }> {
  async run({ n, steps = 2, stepMs = 0 }: { n: number; steps?: number; stepMs?: number }, ctx: JobContext) {
    let sum = 0;
    for (let i = 0; i < steps; i++) {
      sum += await ctx.step(`s${i}`, async () => {
        if (stepMs) await sleep(stepMs);
        return n + i;
      });
    }
    return ctx.transaction(async (manager) => {
      await manager.query('SELECT 1');
      return { sum };
    });
  }
}

const bouncers: PgBouncer[] = [];
const apps: INestApplication[] = [];
const schemas: string[] = [];

afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});
afterAll(async () => {
  for (const b of bouncers) await b.stop();
  await dropSchemas(...schemas);
});

async function bouncer(mode: 'transaction' | 'session'): Promise<PgBouncer> {
  const b = await startPgBouncer({ mode, upstream: databaseUrl() });
  bouncers.push(b);
  return b;
}

function newSchema(prefix: string): string {
  const s = uniqueSchema(prefix);
  schemas.push(s);
  return s;
}

async function start(options: JobsModuleOptions): Promise<INestApplication> {
  @Module({ providers: [PooledWork] })
  class Own {}
  const ref = await Test.createTestingModule({
    imports: [JobsModule.forRoot({ unregisteredJobs: 'ignore', ...options }), Own],
  }).compile();
  const app = ref.createNestApplication({ logger: process.env.TEST_LOGS ? undefined : false });
  try {
    await app.init();
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
  apps.push(app);
  return app;
}

async function finished(schema: string, ids: string[]) {
  return sql<{ state: string; n: number }>(
    `SELECT state, count(*)::int AS n FROM "${schema}".job WHERE id = ANY($1::uuid[]) GROUP BY state`,
    [ids],
  );
}

async function schemaExists(schema: string): Promise<boolean> {
  const [row] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = $1`, [schema]);
  return row!.n > 0;
}

describe('behind PgBouncer in transaction mode', () => {
  it('runs steps and ctx.transaction() to success, woken by NOTIFY on directConnection', async () => {
    const b = await bouncer('transaction');
    const schema = newSchema('pool_tx');
    // A poll far beyond the wait below: only a notification can start the job in time.
    const app = await start({
      connection: b.url,
      pooler: 'transaction',
      directConnection: databaseUrl(),
      schema,
      worker: { pollInterval: 120_000 },
    });
    const jobs = app.get(JobQueue);
    await sleep(300);
    const ids = await Promise.all([1, 2, 3].map(async (n) => (await jobs.enqueue(PooledWork, { n })).id));
    await waitFor('the jobs to succeed, woken by notifications', async () => {
      const rows = await finished(schema, ids);
      return rows.length === 1 && rows[0]!.state === 'succeeded' && rows[0]!.n === 3;
    });
    expect((await jobs.get(ids[0]!))!.result).toEqual({ sum: 3 });
    const listening = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'nestjs-durable-jobs listener'
          AND backend_type = 'client backend' AND query ILIKE 'LISTEN%'`,
    );
    expect(listening[0]!.n).toBeGreaterThanOrEqual(1);
  });

  it('without directConnection, polls instead of listening, and still runs every job', async () => {
    const b = await bouncer('transaction');
    const schema = newSchema('pool_poll');
    const app = await start({ connection: b.url, pooler: 'transaction', schema, worker: { pollInterval: 200 } });
    const ids = await Promise.all([1, 2].map(async (n) => (await app.get(JobQueue).enqueue(PooledWork, { n })).id));
    await waitFor('the jobs to succeed by polling', async () => {
      const rows = await finished(schema, ids);
      return rows.length === 1 && rows[0]!.state === 'succeeded' && rows[0]!.n === 2;
    });
    const [workers] = await app.get(JobsMonitor).workers();
    // No LISTEN connection is counted: the budget's 10 go to the pool and the worker.
    expect(workers!.connections).toEqual({ open: expect.any(Number), max: 10 });
    expect(workers!.connections!.open).toBeLessThanOrEqual(10);
  });

  it('refuses to start through an undeclared transaction pooler, naming the option, and writes nothing', async () => {
    const b = await bouncer('transaction');
    for (const pooler of [undefined, 'session'] as const) {
      const schema = newSchema('pool_refused');
      const started = start({ connection: b.url, pooler, schema });
      await expect(started).rejects.toThrow(JobsError);
      await expect(started).rejects.toThrow(/goes through a transaction pooler.*Potential fix: pooler: 'transaction'/);
      expect(await schemaExists(schema)).toBe(false);
    }
  });

  it('refuses a directConnection that goes through the pooler', async () => {
    const b = await bouncer('transaction');
    const schema = newSchema('pool_direct');
    await expect(start({ connection: b.url, pooler: 'transaction', directConnection: b.url, schema })).rejects.toThrow(
      /"directConnection" is the same URL as "connection"/,
    );
    const other = new URL(b.url);
    other.searchParams.set('application_name', 'other');
    await expect(
      start({ connection: b.url, pooler: 'transaction', directConnection: other.href, schema }),
    ).rejects.toThrow(/"directConnection" goes through a transaction pooler/);
    expect(await schemaExists(schema)).toBe(false);
  });
});

describe('behind PgBouncer in session mode', () => {
  it('starts with no option at all, sending no startup parameter PgBouncer refuses, and listens', async () => {
    const b = await bouncer('session');
    const schema = newSchema('pool_session');
    const app = await start({ connection: b.url, schema, worker: { pollInterval: 120_000 } });
    await sleep(300);
    const { id } = await app.get(JobQueue).enqueue(PooledWork, { n: 5 });
    await waitFor('the job to succeed, woken by a notification', async () => {
      const rows = await finished(schema, [id]);
      return rows[0]?.state === 'succeeded';
    });
  });
});

describe('options that cannot work', () => {
  it('an unknown pooler value is a JobsError naming the two modes', async () => {
    const schema = newSchema('pool_bad');
    await expect(start({ connection: databaseUrl(), pooler: 'statement' as never, schema })).rejects.toThrow(
      /"pooler" must be 'transaction' or 'session'.*got the string "statement"/,
    );
    expect(await schemaExists(schema)).toBe(false);
  });

  it('a budget too small for what an instance needs is a JobsError naming maxConnections, before connecting', async () => {
    const schema = newSchema('pool_budget');
    await expect(start({ connection: databaseUrl(), maxConnections: 3, schema })).rejects.toThrow(
      /"maxConnections" is 3, but this instance needs at least 5.*Potential fix: maxConnections: 5 or more/,
    );
    expect(await schemaExists(schema)).toBe(false);
  });
});
