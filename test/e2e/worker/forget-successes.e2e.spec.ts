import { Injectable, type INestApplication } from '@nestjs/common';
import {
  BatchBuilder,
  Job,
  JobQueue,
  JobsAdmin,
  JobsError,
  JobsNotFoundError,
  type JobContext,
  type JobHandler,
} from 'nestjs-durable-jobs';
import { RetentionService } from '../../../lib/worker/retention.service.js';
import pg from 'pg';
import { appFixture } from '../../support/app-fixture.js';
import { databaseUrl, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

// keep: { succeeded: false } and retention.succeeded: 0: a success deletes its job in the outcome's
// write, with everything that refers to it, and whatever reads a finished job copes with its absence.

@Injectable()
class Seen {
  readonly runs = new Map<string, number>();
  readonly parents = new Map<string, readonly string[]>();
  /** Jobs whose first attempt fails, so that they leave an execution row before they succeed. */
  readonly failFirst = new Set<string>();
  /** Jobs that hold until released. */
  readonly gates = new Map<string, Promise<void>>();
  count(tag: string): number {
    const n = (this.runs.get(tag) ?? 0) + 1;
    this.runs.set(tag, n);
    return n;
  }
}

@Job('fg-forgotten', { keep: { succeeded: false }, maxAttempts: 3, backoff: { type: 'fixed', delay: 10 } })
class Forgotten implements JobHandler<{ tag: string }> {
  constructor(private readonly seen: Seen) {}
  async run({ tag }: { tag: string }, ctx: JobContext): Promise<string> {
    const n = this.seen.count(tag);
    this.seen.parents.set(tag, ctx.parentIds);
    await ctx.step('half', () => `${tag}-half`);
    await this.seen.gates.get(tag);
    if (this.seen.failFirst.has(tag) && n === 1) throw new Error(`first attempt of ${tag}`);
    return `${tag}-done`;
  }
}

@Job('fg-kept')
class Kept implements JobHandler<{ tag: string }> {
  constructor(private readonly seen: Seen) {}
  run({ tag }: { tag: string }, ctx: JobContext): void {
    this.seen.count(tag);
    this.seen.parents.set(tag, ctx.parentIds);
  }
}

@Job('fg-limited', { keep: { succeeded: false }, concurrency: 2, queue: 'fg-limited' })
class Limited implements JobHandler<{ tag: string }> {
  constructor(private readonly seen: Seen) {}
  run({ tag }: { tag: string }): void {
    this.seen.count(tag);
  }
}

@Job('fg-invoker')
class Invoker implements JobHandler<{ tag: string }> {
  async run({ tag }: { tag: string }, ctx: JobContext): Promise<unknown> {
    return ctx.invoke(Forgotten, { tag });
  }
}

const { apps, schemas } = appFixture({ closeApps: 'each' });

async function start(options: Record<string, unknown> = {}): Promise<{ app: INestApplication; schema: string }> {
  const schema = uniqueSchema('forget');
  schemas.push(schema);
  const app = await startJobsApp(
    schema,
    { worker: { pollInterval: 20 }, ...options },
    { providers: [Seen, Forgotten, Kept, Limited, Invoker] },
  );
  apps.push(app);
  return { app, schema };
}

const rowsOf = async (schema: string, table: string, column: string, ids: readonly string[]) =>
  Number(
    (
      await sql<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".${table} WHERE ${column} = ANY($1::uuid[])`, [
        ids,
      ])
    )[0]!.n,
  );

describe('forgotten successes (keep: { succeeded: false })', () => {
  it('deletes the job with its executions and steps as it succeeds, and keeps the jobs of types that keep theirs', async () => {
    const { app, schema } = await start();
    const jobs = app.get(JobQueue);
    const seen = app.get(Seen);
    seen.failFirst.add('f1');
    const forgotten = await jobs.enqueue(Forgotten, { tag: 'f1' });
    const kept = await jobs.enqueue(Kept, { tag: 'k1' });
    await waitFor(
      'both to end',
      async () => (await jobs.get(kept.id))?.state === 'succeeded' && seen.runs.get('f1') === 2,
    );
    await waitFor('the forgotten job to go', async () => (await jobs.get(forgotten.id)) === null);
    expect(seen.runs.get('f1')).toBe(2);
    for (const [table, column] of [
      ['job', 'id'],
      ['job_execution', 'job_id'],
      ['job_step', 'job_id'],
    ] as const) {
      expect(await rowsOf(schema, table, column, [forgotten.id])).toBe(0);
    }
    expect((await jobs.get(kept.id))?.state).toBe('succeeded');
  });

  it("counts forgotten successes in the dashboard's throughput, per queue and minute", async () => {
    const { app } = await start();
    const jobs = app.get(JobQueue);
    const ids = await Promise.all([1, 2, 3, 4, 5].map((i) => jobs.enqueue(Forgotten, { tag: `t${i}` })));
    await jobs.enqueue(Kept, { tag: 'tk' });
    await waitFor('all to end', async () => {
      const left = await Promise.all(ids.map((r) => jobs.get(r.id)));
      return left.every((j) => j === null);
    });
    await waitFor('the kept one to end', async () => {
      const t = await app.get(JobsAdmin).throughput({ minutes: 5 });
      return (t.queues['default'] ?? []).reduce((n, p) => n + p.succeeded, 0) === 6;
    });
  });

  it('settles a batch of forgotten members with the right counts, and runs its callback', async () => {
    const { app, schema } = await start();
    const jobs = app.get(JobQueue);
    const seen = app.get(Seen);
    const batch = await app
      .get(BatchBuilder)
      .create('forgotten-members')
      .add(Forgotten, { tag: 'b1' })
      .add(Forgotten, { tag: 'b2' })
      .add(Forgotten, { tag: 'b3' })
      .then(Kept, { tag: 'b-then' })
      .dispatch();
    await waitFor('the callback to run', async () => seen.runs.get('b-then') === 1);
    const status = await jobs.batchStatus(batch.id);
    expect(status).toMatchObject({ state: 'succeeded', total: 3, pending: 0, succeeded: 3, failed: 0 });
    expect(
      Number(
        (await sql<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".job WHERE batch_id = $1`, [batch.id]))[0]!.n,
      ),
    ).toBe(0);
  });

  it('keeps a parent that others wait on until they end, then retention takes it; the child sees its parent', async () => {
    const { app, schema } = await start({ retention: { succeeded: 0, interval: 3_600_000 } });
    const jobs = app.get(JobQueue);
    const seen = app.get(Seen);
    let open!: () => void;
    seen.gates.set('c1', new Promise<void>((resolve) => (open = resolve)));
    const parent = await jobs.enqueue(Kept, { tag: 'p1' });
    const child = await jobs.enqueue(Forgotten, { tag: 'c1' }, { after: parent.id });
    await waitFor('the child to start', async () => seen.runs.get('c1') === 1);
    // retention.succeeded: 0 forgets Kept too, which names no keep of its own; the parent stays for its child.
    expect((await jobs.get(parent.id))?.state).toBe('succeeded');
    expect(seen.parents.get('c1')).toEqual([parent.id]);
    await app.get(RetentionService).prune();
    expect((await jobs.get(parent.id))?.state).toBe('succeeded');
    open();
    await waitFor('the child to go', async () => (await jobs.get(child.id)) === null);
    await app.get(RetentionService).prune();
    expect(await jobs.get(parent.id)).toBeNull();
    expect(await rowsOf(schema, 'job_dependency', 'child_id', [child.id])).toBe(0);
  });

  it('keeps a job whose end waitFor() began to wait for, and a job that ended before the wait began is not found', async () => {
    const { app } = await start();
    const jobs = app.get(JobQueue);
    const seen = app.get(Seen);
    let open!: () => void;
    seen.gates.set('w1', new Promise<void>((resolve) => (open = resolve)));
    const waited = await jobs.enqueue(Forgotten, { tag: 'w1' });
    const ending = jobs.waitFor(waited.id, { timeout: 10_000 });
    await waitFor('the job to start', async () => seen.runs.get('w1') === 1);
    open();
    expect(await ending).toMatchObject({ id: waited.id, state: 'succeeded', result: 'w1-done' });

    const gone = await jobs.enqueue(Forgotten, { tag: 'w2' });
    await waitFor('it to be forgotten', async () => (await jobs.get(gone.id)) === null);
    const late = jobs.waitFor(gone.id, { timeout: 1_000 });
    await expect(late).rejects.toThrow(JobsNotFoundError);
    await expect(late).rejects.toThrow(/keep: \{ succeeded: false \}/);
  });

  it('writes a success whose waitFor() began while the write waited for the row: kept and succeeded, not left active', async () => {
    const { app, schema } = await start();
    const jobs = app.get(JobQueue);
    const seen = app.get(Seen);
    let open!: () => void;
    seen.gates.set('race', new Promise<void>((resolve) => (open = resolve)));
    const job = await jobs.enqueue(Forgotten, { tag: 'race' });
    await waitFor('the job to start', async () => seen.runs.get('race') === 1);
    // What waitFor() writes, held open in a transaction of its own: the success's write waits for its lock,
    // having read the row before the flag was set.
    const other = new pg.Client({ connectionString: databaseUrl() });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(`UPDATE "${schema}".job SET awaited = true WHERE id = $1`, [job.id]);
      open();
      await waitFor('the success write to wait for the row', async () => {
        const [row] = await sql<{ n: string }>(
          `SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'WITH forgotten AS (%' AND query LIKE $1`,
          [`%${schema}%`],
        );
        return Number(row!.n) > 0;
      });
      await other.query('COMMIT');
    } finally {
      await other.end();
    }
    await waitFor('the job to be written succeeded', async () => (await jobs.get(job.id))?.state === 'succeeded');
    expect(await jobs.get(job.id)).toMatchObject({ state: 'succeeded', result: 'race-done' });
  });

  it("gives a parent's ctx.invoke() the result of a child whose type forgets successes", async () => {
    const { app } = await start();
    const jobs = app.get(JobQueue);
    const parent = await jobs.enqueue(Invoker, { tag: 'i1' });
    expect(await jobs.waitFor(parent.id, { timeout: 10_000 })).toMatchObject({ state: 'succeeded', result: 'i1-done' });
  });

  it("frees a unique key held 'until-succeeded' as the job is forgotten", async () => {
    const { app } = await start();
    const jobs = app.get(JobQueue);
    const unique = { key: 'fg-order', while: 'until-succeeded' } as const;
    const first = await jobs.enqueue(Forgotten, { tag: 'u1' }, { unique });
    await waitFor('it to be forgotten', async () => (await jobs.get(first.id)) === null);
    const second = await jobs.enqueue(Forgotten, { tag: 'u2' }, { unique });
    expect(second.created).toBe(true);
    expect(second.id).not.toBe(first.id);
  });

  it('forgets the jobs of a limited queue, whose successes claim the next jobs in the same write', async () => {
    const { app, schema } = await start();
    const jobs = app.get(JobQueue);
    const seen = app.get(Seen);
    const tags = Array.from({ length: 60 }, (_, i) => `l${i}`);
    await jobs.enqueueMany(tags.map((tag) => ({ job: Limited, payload: { tag } })));
    await waitFor('all to run', async () => tags.every((t) => seen.runs.get(t) === 1), 20_000);
    await waitFor(
      'all to go',
      async () => Number((await sql<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".job`))[0]!.n) === 0,
    );
    expect(tags.every((t) => seen.runs.get(t) === 1)).toBe(true);
    const t = await app.get(JobsAdmin).throughput({ minutes: 5, queue: 'fg-limited' });
    expect((t.queues['fg-limited'] ?? []).reduce((n, p) => n + p.succeeded, 0)).toBe(60);
  });

  it('retention.succeeded: 0 forgets every job type that names no keep of its own', async () => {
    const { app } = await start({ retention: { succeeded: 0 } });
    const jobs = app.get(JobQueue);
    const kept = await jobs.enqueue(Kept, { tag: 'r1' });
    await waitFor('it to be forgotten', async () => (await jobs.get(kept.id)) === null);
    expect(app.get(Seen).runs.get('r1')).toBe(1);
  });
});

describe('keep and retention.succeeded: bad input', () => {
  it('refuses a keep that is not { succeeded: boolean } where the class is declared', () => {
    const declare = (keep: unknown) => () => {
      @Job('fg-bad', { keep } as never)
      class Bad implements JobHandler {
        run(): void {}
      }
      return Bad;
    };
    expect(declare({ succeeded: 'no' })).toThrow(JobsError);
    expect(declare({ succeeded: 'no' })).toThrow(/"keep.succeeded" must be true or false, got the string "no"/);
    expect(declare(false)).toThrow(/"keep" must be an object \{ succeeded \}/);
    expect(declare({ failed: false })).toThrow(/keep/);
  });

  it('refuses keep on an externalJobs entry: the service that runs the job decides', async () => {
    await expect(
      start({ externalJobs: { 'fg-elsewhere': { queue: 'q', keep: { succeeded: false } } } }),
    ).rejects.toThrow(
      /^JobsModule's "externalJobs" entry 'fg-elsewhere': "keep" is decided by the worker that runs the job/,
    );
  });

  it('refuses a negative retention.succeeded at boot, naming the field', async () => {
    await expect(start({ retention: { succeeded: -1 } })).rejects.toThrow(
      /retention\.succeeded must be an integer number of ms from 0/,
    );
  });
});
