import { Injectable, type INestApplication } from '@nestjs/common';
import {
  BatchBuilder,
  Job,
  JobQueue,
  JobQueues,
  JobsError,
  type JobContext,
  type JobHandler,
  type JobsModuleOptions,
} from 'nestjs-durable-jobs';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import { DataSource } from 'typeorm';
import { JobRescuer } from '../../../lib/worker/job-rescuer.service.js';
import { dropSchemas, jobsConnection, sql, uniqueSchema } from '../../support/database.js';
import { FC_RUN_TABLE, flowProviders, Work } from '../../support/flow.jobs.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { sleep, waitFor } from '../../support/wait.js';

/** Per-job flow control: fair groups, unique jobs, serial keys, deadlines, snooze. */
const schemas: string[] = [];
const apps: INestApplication[] = [];

@Injectable()
class Hooks {
  readonly failures: string[] = [];
  readonly gates = new Map<string, () => void>();
}

/** Snoozes its first attempt; fails or waits on a gate when told. */
@Job('fc-moody', { maxAttempts: 2, backoff: { type: 'fixed', delay: 60_000 } })
class Moody implements JobHandler<{ snooze?: number; fail?: boolean; hold?: boolean }> {
  constructor(private readonly hooks: Hooks) {}
  async run(p: { snooze?: number; fail?: boolean; hold?: boolean }, ctx: JobContext): Promise<number> {
    if (p.snooze && ctx.attempt === 1) ctx.snooze(p.snooze, 'the partner said 429');
    if (p.hold) await new Promise<void>((resolve) => this.hooks.gates.set(ctx.jobId, resolve));
    if (p.fail) throw new Error('broken');
    return ctx.attempt;
  }
  onFailure(_: unknown, error: Error, ctx: JobContext): void {
    this.hooks.failures.push(`${ctx.jobId}:${error.name}`);
  }
}

async function boot(schema: string, options: Partial<JobsModuleOptions> = {}): Promise<INestApplication> {
  const app = await startJobsApp(
    schema,
    { worker: { concurrency: 10, pollInterval: 100 }, ...options },
    { providers: [...flowProviders(schema), Hooks, Moody] },
  );
  apps.push(app);
  await sql(FC_RUN_TABLE(schema));
  return app;
}

const count = async (query: string, values: unknown[] = []) => (await sql<{ n: number }>(query, values))[0]!.n;

// Each test's instances close with it: a file's worth of them open at once (three instances of
// ~16 connections per test) would reach PostgreSQL's default max_connections of 100.
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
});

afterAll(async () => {
  await dropSchemas(...schemas);
});

describe('groups', () => {
  it("serve a tenant that arrives behind another's backlog at once, and share a queue evenly", async () => {
    const schema = uniqueSchema('fcgroup');
    schemas.push(schema);
    const [a, b] = [await boot(schema), await boot(schema)];
    const jobs = a!.get(JobQueue);
    await jobs.enqueueMany(
      Array.from({ length: 5_000 }, (_, i) => ({
        job: Work,
        payload: { ms: 2, tag: 'A', seq: i },
        options: { queue: 'tenants', group: 'A' },
      })),
    );
    await waitFor(
      'tenant A to be under way',
      async () => (await count(`SELECT count(*)::int AS n FROM "${schema}".fc_run`)) >= 100,
    );
    const [{ mark }] = (await sql<{ mark: number }>(`SELECT max(id)::int AS mark FROM "${schema}".fc_run`)) as [
      { mark: number },
    ];
    await b!.get(JobQueue).enqueueMany(
      Array.from({ length: 20 }, (_, i) => ({
        job: Work,
        payload: { tag: 'B', seq: i },
        options: { queue: 'tenants', group: 'B' },
      })),
    );
    await waitFor(
      "tenant B's 20 jobs to run",
      async () =>
        (await count(`SELECT count(*)::int AS n FROM "${schema}".fc_run WHERE tag = 'B' AND ended_at IS NOT NULL`)) ===
        20,
      30_000,
    );
    // Runs of A that started after B arrived and before B's last started.
    const aMeanwhile = await count(
      `SELECT count(*)::int AS n FROM "${schema}".fc_run
        WHERE tag = 'A' AND id > $1 AND id < (SELECT max(id) FROM "${schema}".fc_run WHERE tag = 'B')`,
      [mark],
    );
    expect(aMeanwhile).toBeLessThan(200);
    await a!.get(JobQueues).pause('tenants');

    // Three backlogged tenants in another queue: within ±20% of an equal share of 3,000 runs.
    await jobs.enqueueMany(
      ['X', 'Y', 'Z'].flatMap((tag) =>
        Array.from({ length: 1_500 }, (_, i) => ({
          job: Work,
          payload: { tag, seq: i },
          options: { queue: 'shares', group: tag },
        })),
      ),
    );
    await waitFor(
      '3,000 runs',
      async () => (await count(`SELECT count(*)::int AS n FROM "${schema}".fc_run WHERE queue = 'shares'`)) >= 3_000,
      60_000,
    );
    await a!.get(JobQueues).pause('shares');
    const shares = await sql<{ tag: string; n: number }>(
      `SELECT tag, count(*)::int AS n FROM (SELECT tag FROM "${schema}".fc_run WHERE queue = 'shares' ORDER BY id LIMIT 3000) r
        GROUP BY tag ORDER BY tag`,
    );
    expect(shares.map((s) => s.tag)).toEqual(['X', 'Y', 'Z']);
    for (const { n } of shares) {
      expect(n).toBeGreaterThanOrEqual(800);
      expect(n).toBeLessThanOrEqual(1_200);
    }
  });
});

describe('unique jobs', () => {
  it('let one job in for 50 concurrent enqueues of a key on two instances, and each caller gets its id', async () => {
    const schema = uniqueSchema('fcuniq');
    schemas.push(schema);
    const [a, b] = [
      await boot(schema, { worker: { enabled: false } }),
      await boot(schema, { worker: { enabled: false } }),
    ];
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        (i % 2 ? a! : b!).get(JobQueue).enqueue(Work, { seq: i }, { unique: { key: 'report:2026-11' } }),
      ),
    );
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(await count(`SELECT count(*)::int AS n FROM "${schema}".job`)).toBe(1);

    // The same in one enqueueMany: duplicates inside a call resolve to the first.
    const many = await a!
      .get(JobQueue)
      .enqueueMany(
        ['x', 'y', 'x', 'report:2026-11'].map((key) => ({ job: Work, payload: {}, options: { unique: { key } } })),
      );
    expect(many.map((r) => r.created)).toEqual([true, true, false, false]);
    expect(many[2]!.id).toBe(many[0]!.id);
    expect(many[3]!.id).toBe(results[0]!.id);

    // A call of several chunks (2,000 jobs each): keys that repeat across chunks and inside one,
    // and keys held before the call ('x', and 'report:2026-11' once), each answered with its one
    // holder; another way of holding a key ("while") is a key of its own.
    const before = new Map([
      ['x/default', many[0]!.id],
      ['report:2026-11/default', results[0]!.id],
    ]);
    const keys = Array.from({ length: 5_000 }, (_, i) =>
      i === 4_999
        ? { key: 'report:2026-11' }
        : i % 1_000 === 500
          ? { key: 'x' }
          : i % 7 === 0
            ? { key: `k${i % 1_000}`, while: 'queued' as const }
            : { key: `k${i % 1_000}` },
    );
    const big = await a!
      .get(JobQueue)
      .enqueueMany(keys.map((unique, seq) => ({ job: Work, payload: { seq }, options: { unique } })));
    const holders = new Map(before);
    let created = 0;
    keys.forEach((unique, i) => {
      const way = `${unique.key}/${'while' in unique ? unique.while : 'default'}`;
      const first = !holders.has(way);
      if (first) holders.set(way, big[i]!.id);
      expect(big[i]).toEqual({ id: holders.get(way), created: first });
      if (first) created++;
    });
    expect(created).toBe(holders.size - before.size);
    expect(await count(`SELECT count(*)::int AS n FROM "${schema}".job`)).toBe(3 + created);
  });

  it("in the caller's transaction: the key it took answers later enqueues in it, and a rollback frees the key", async () => {
    const schema = uniqueSchema('fcuniqtx');
    schemas.push(schema);
    const app = await boot(schema, { worker: { enabled: false } });
    const jobs = app.get(JobQueue);
    // The caller's own data source: any TypeORM transaction on this database (through the pooler, if any).
    const ds = await new DataSource({ type: 'postgres', url: jobsConnection().connection }).initialize();
    const key = { unique: { key: 'invoice-9' } };
    let inside: Array<{ id: string; created: boolean }> = [];
    await expect(
      ds.transaction(async (manager) => {
        inside = [await jobs.enqueue(Work, {}, { ...key, manager }), await jobs.enqueue(Work, {}, { ...key, manager })];
        // Written in the transaction only: nothing is visible outside it yet.
        expect(await count(`SELECT count(*)::int AS n FROM "${schema}".job`)).toBe(0);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(inside).toEqual([
      { id: inside[0]!.id, created: true },
      { id: inside[0]!.id, created: false },
    ]);
    expect(await count(`SELECT count(*)::int AS n FROM "${schema}".job`)).toBe(0);

    // The key is free again; once held outside, an enqueue in a transaction is answered with that holder.
    const held = await jobs.enqueue(Work, {}, key);
    expect(held.created).toBe(true);
    const again = await ds.transaction((manager) => jobs.enqueue(Work, {}, { ...key, manager }));
    expect(again).toEqual({ id: held.id, created: false });
    // Another way of holding the same key is a key of its own.
    const queuedOnly = await jobs.enqueue(Work, {}, { unique: { key: 'invoice-9', while: 'queued' } });
    expect(queuedOnly.created).toBe(true);
    expect(await jobs.enqueue(Work, {}, { unique: { key: 'invoice-9', while: 'queued' } })).toEqual({
      id: queuedOnly.id,
      created: false,
    });
    expect(await count(`SELECT count(*)::int AS n FROM "${schema}".job`)).toBe(2);
    await ds.destroy();
  });

  it('per window with "for": a new job once the window passed', async () => {
    const schema = uniqueSchema('fcwin');
    schemas.push(schema);
    const app = await boot(schema, { worker: { enabled: false } });
    const jobs = app.get(JobQueue);
    // Windows are aligned to the clock (every 400 ms from the epoch): start early in one, so that the
    // second enqueue falls in the same window (CI once saw the pair 4 ms apart straddle a boundary).
    const offset = Date.now() % 400;
    if (offset > 100) await sleep(401 - offset);
    const first = await jobs.enqueue(Work, {}, { unique: { key: 'digest', for: 400 } });
    expect((await jobs.enqueue(Work, {}, { unique: { key: 'digest', for: 400 } })).id).toBe(first.id);
    await sleep(450);
    const later = await jobs.enqueue(Work, {}, { unique: { key: 'digest', for: 400 } });
    expect(later).toMatchObject({ created: true });
    expect(later.id).not.toBe(first.id);
  });

  it("with while: 'queued', let a second job in once the first runs; with replace, update the waiting one", async () => {
    const schema = uniqueSchema('fcwhile');
    schemas.push(schema);
    const app = await boot(schema);
    const jobs = app.get(JobQueue);
    const first = await jobs.enqueue(Moody, { hold: true }, { unique: { key: 'sync', while: 'queued' } });
    await waitFor('the first to run', () => app.get(Hooks).gates.has(first.id));
    const second = await jobs.enqueue(Moody, {}, { unique: { key: 'sync', while: 'queued' }, delay: 60_000 });
    expect(second.created).toBe(true);
    // A third while the second waits: refused, and with replace it takes the new payload and time.
    expect((await jobs.enqueue(Moody, {}, { unique: { key: 'sync', while: 'queued' } })).id).toBe(second.id);
    const runAt = new Date(Date.now() + 120_000);
    const replaced = await jobs.enqueue(
      Moody,
      { fail: true },
      { unique: { key: 'sync', while: 'queued', replace: true }, runAt },
    );
    expect(replaced).toEqual({ id: second.id, created: false });
    expect(await jobs.get(second.id)).toMatchObject({ payload: { fail: true }, runAt });
    app.get(Hooks).gates.get(first.id)!();
  });

  it('refuse a batch or flow member whose key is held, writing nothing of it', async () => {
    const schema = uniqueSchema('fcubatch');
    schemas.push(schema);
    const app = await boot(schema, { worker: { enabled: false } });
    await app.get(JobQueue).enqueue(Work, {}, { unique: { key: 'held' } });
    const batch = app
      .get(BatchBuilder)
      .create('dup')
      .add(Work, {})
      .add(Work, {}, { unique: { key: 'held' } });
    await expect(batch.dispatch()).rejects.toThrow(
      /unique key \(held\) is already held .*nothing of it.*Potential fix/,
    );
    const flow = app
      .get(JobQueue)
      .flow()
      .add('a', Work, {})
      .add('b', Work, {}, { after: ['a'], unique: { key: 'held' } });
    await expect(flow.dispatch()).rejects.toBeInstanceOf(JobsError);
    expect(await count(`SELECT count(*)::int AS n FROM "${schema}".job`)).toBe(1);
    expect(await count(`SELECT count(*)::int AS n FROM "${schema}".job_batch`)).toBe(0);
  });
});

describe('serial keys', () => {
  it('run one job per key at a time across three instances, each key in enqueue order', async () => {
    const schema = uniqueSchema('fcserial');
    schemas.push(schema);
    const instances = [await boot(schema), await boot(schema), await boot(schema)];
    let overlaps = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        overlaps += await count(
          `SELECT count(*)::int AS n FROM (SELECT serial_key FROM "${schema}".job WHERE state = 'active' AND serial_key IS NOT NULL
             GROUP BY serial_key HAVING count(*) > 1) k`,
        );
        await sleep(10);
      }
    })();
    await instances[0]!.get(JobQueue).enqueueMany(
      Array.from({ length: 300 }, (_, i) => ({
        job: Work,
        payload: { ms: 5, tag: `key-${i % 5}`, seq: i },
        options: { queue: 'serial', serialKey: `key-${i % 5}` },
      })),
    );
    await waitFor(
      'the 300 jobs to run',
      async () => (await count(`SELECT count(*)::int AS n FROM "${schema}".job WHERE state = 'succeeded'`)) === 300,
      60_000,
    );
    sampling = false;
    await sampler;
    expect(overlaps).toBe(0);
    const order = await sql<{ tag: string; seqs: number[] }>(
      `SELECT tag, array_agg(seq ORDER BY id) AS seqs FROM "${schema}".fc_run GROUP BY tag ORDER BY tag`,
    );
    expect(order).toHaveLength(5);
    for (const { seqs } of order) {
      expect(seqs).toHaveLength(60);
      expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    }
    // Overlap on the database clock too: a key's next run starts after its last one ended.
    expect(
      await count(
        `SELECT count(*)::int AS n FROM "${schema}".fc_run r JOIN "${schema}".fc_run s
            ON s.tag = r.tag AND s.id <> r.id AND s.started_at < r.ended_at AND r.started_at < s.ended_at`,
      ),
    ).toBe(0);
  });
});

describe('deadlines and snooze', () => {
  it('fail a job whose deadline passed before it could start or retry, running onFailure once; a snooze spends no attempt', async () => {
    const schema = uniqueSchema('fcdead');
    schemas.push(schema);
    const clock = new ManualClock(new Date('2026-12-01T10:00:00Z'));
    const app = await boot(schema, { clock, worker: { concurrency: 5, pollInterval: 50, lease: 60_000 } });
    const jobs = app.get(JobQueue);
    const minute = 60_000;
    const late = await jobs.enqueue(
      Moody,
      {},
      { delay: 4 * minute, deadline: new Date(clock.now().getTime() + 5 * minute) },
    );
    // Fails its first attempt; the next one (60 s later) would come after its deadline.
    const retrying = await jobs.enqueue(Moody, { fail: true }, { deadline: new Date(clock.now().getTime() + 30_000) });
    const snoozing = await jobs.enqueue(Moody, { snooze: 5_000 });
    const catching = await app
      .get(BatchBuilder)
      .create('deadline')
      .add(Moody, {}, { delay: 30_000, deadline: new Date(clock.now().getTime() + minute) })
      .catch(Work, { tag: 'caught' })
      .dispatch();

    await waitFor('the retrying job to fail', async () => (await jobs.get(retrying.id))?.state === 'failed');
    expect((await jobs.get(retrying.id))!.lastError).toMatchObject({
      name: 'DeadlineExceededError',
      message: expect.stringMatching(/its next attempt would come after its deadline .*attempt 1 failed: broken/),
    });
    // Its first state is queued too: wait for the snooze's own execution row, or the clock could move
    // before the snooze is written and put its due time out of reach.
    await waitFor('the snooze to be recorded', async () => {
      const job = await jobs.get(snoozing.id);
      return job?.state === 'queued' && job.executions.some((e) => e.state === 'snoozed');
    });
    clock.advance(5_000);
    await waitFor('the snoozed job to run', async () => (await jobs.get(snoozing.id))?.state === 'succeeded');
    const snoozed = (await jobs.get(snoozing.id))!;
    expect(snoozed.executions.map((e) => [e.attempt, e.state])).toEqual([
      [1, 'snoozed'],
      [2, 'succeeded'],
    ]);
    expect(snoozed.executions[0]!.error?.message).toBe('the partner said 429');
    // The snooze gave its attempt back: two attempts were still left for failures.
    expect(snoozed).toMatchObject({ maxAttempts: 3, result: 2 });

    clock.advance(6 * minute);
    await app.get(JobRescuer).rescue();
    expect((await jobs.get(late.id))!).toMatchObject({ state: 'failed', lastError: { name: 'DeadlineExceededError' } });
    await waitFor('the batch to fail', async () => (await jobs.batchStatus(catching.id))?.state === 'failed');
    await waitFor(
      'its catch to run',
      async () => (await count(`SELECT count(*)::int AS n FROM "${schema}".fc_run WHERE tag = 'caught'`)) === 1,
    );
    await waitFor('the hooks to run', () => app.get(Hooks).failures.length === 3);
    await app.get(JobRescuer).rescue();
    expect([...app.get(Hooks).failures].sort()).toEqual(
      [
        `${late.id}:DeadlineExceededError`,
        `${retrying.id}:DeadlineExceededError`,
        expect.stringMatching(/:DeadlineExceededError$/),
      ].sort(),
    );
  });
});
