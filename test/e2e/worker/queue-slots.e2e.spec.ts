import { Inject, Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  Job,
  JobQueue,
  JOBS_DATA_SOURCE,
  JobsError,
  type JobContext,
  type JobHandler,
  type JobsModuleOptions,
  type WorkerOptions,
} from 'nestjs-durable-jobs';
import type { DataSource } from 'typeorm';
import { JobsTester, JobsTestingModule } from 'nestjs-durable-jobs/testing';
import { JobWorker } from '../../../lib/worker/job-worker.service.js';
import { jobsConnection, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { sampler, succeededCount } from '../../support/samplers.js';
import { waitFor } from '../../support/wait.js';
import { appFixture } from '../../support/app-fixture.js';

/**
 * worker.queues' object form: a queue capped per instance
 * (`{ video: { concurrency: 2 } }`) runs no more than its cap at once on each
 * instance, holds no more than that claimed either, and leaves the other
 * slots to the other queues. Runs are recorded by the handler itself, with
 * the database's clock and the instance that ran them, so overlaps are
 * counted per instance from one timeline.
 */
const QS_SCHEMA = 'QS_SCHEMA';
const QS_INSTANCE = 'QS_INSTANCE';

@Injectable()
class SlotRuns {
  constructor(
    @Inject(JOBS_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(QS_SCHEMA) private readonly schema: string,
    @Inject(QS_INSTANCE) private readonly instance: string,
  ) {}

  async run(ctx: JobContext, ms: number): Promise<void> {
    const [row] = (await this.dataSource.query(
      `INSERT INTO "${this.schema}".qs_run (job_id, queue, instance) VALUES ($1, $2, $3) RETURNING id`,
      [ctx.jobId, ctx.queue, this.instance],
    )) as Array<{ id: number }>;
    await new Promise((r) => setTimeout(r, ms));
    await this.dataSource.query(`UPDATE "${this.schema}".qs_run SET ended_at = clock_timestamp() WHERE id = $1`, [
      row!.id,
    ]);
  }
}

@Job('qs-work', { maxAttempts: 1 })
class SlotWork implements JobHandler<{ ms: number }> {
  constructor(private readonly runs: SlotRuns) {}
  run(p: { ms: number }, ctx: JobContext): Promise<void> {
    return this.runs.run(ctx, p.ms);
  }
}

const RUN_TABLE = (schema: string) => `CREATE TABLE IF NOT EXISTS "${schema}".qs_run (
  id bigserial PRIMARY KEY, job_id uuid NOT NULL, queue text NOT NULL, instance text NOT NULL,
  started_at timestamptz NOT NULL DEFAULT clock_timestamp(), ended_at timestamptz)`;

const { apps, schemas } = appFixture({ closeApps: 'each' });

function newSchema(): string {
  const schema = uniqueSchema('qslots');
  schemas.push(schema);
  return schema;
}

/** An instance named `instance` on `schema` running SlotWork with `worker` options. */
async function boot(
  schema: string,
  instance: string,
  worker: WorkerOptions,
  options: Partial<JobsModuleOptions> = {},
): Promise<{ app: INestApplication; workerId: string }> {
  const app = await startJobsApp(
    schema,
    { worker, ...options },
    {
      providers: [
        SlotRuns,
        SlotWork,
        { provide: QS_SCHEMA, useValue: schema },
        { provide: QS_INSTANCE, useValue: instance },
      ],
    },
  );
  apps.push(app);
  await sql(RUN_TABLE(schema));
  return { app, workerId: app.get(JobWorker).id };
}

async function enqueue(app: INestApplication, queue: string, n: number, ms: number): Promise<void> {
  await app
    .get(JobQueue)
    .enqueueMany(Array.from({ length: n }, () => ({ job: SlotWork, payload: { ms }, options: { queue } })));
}

/**
 * The most runs of `queue` under way at once (on `instance`, or anywhere), and the most
 * runs of `beside` under way at an instant when `queue` had `full` running there.
 */
async function overlap(
  schema: string,
  queue: string,
  instance: string | null,
  beside = '',
  full = 0,
): Promise<{ most: number; besideFull: number }> {
  const [row] = await sql<{ most: number; besideFull: number }>(
    `WITH r AS (SELECT * FROM "${schema}".qs_run WHERE $2::text IS NULL OR instance = $2),
          at AS (SELECT t.started_at AS t,
                   (SELECT count(*) FROM r WHERE r.queue = $1 AND r.started_at <= t.started_at
                      AND (r.ended_at IS NULL OR r.ended_at > t.started_at)) AS n,
                   (SELECT count(*) FROM r WHERE r.queue = $3 AND r.started_at <= t.started_at
                      AND (r.ended_at IS NULL OR r.ended_at > t.started_at)) AS b
                 FROM r t)
     SELECT coalesce(max(n), 0)::int AS most, coalesce(max(b) FILTER (WHERE n >= $4), 0)::int AS "besideFull" FROM at`,
    [queue, instance, beside, full],
  );
  return row!;
}

/** Runs of `queue` per instance. */
async function runsBy(schema: string, queue: string): Promise<Record<string, number>> {
  const rows = await sql<{ instance: string; n: number }>(
    `SELECT instance, count(*)::int AS n FROM "${schema}".qs_run WHERE queue = $1 GROUP BY instance`,
    [queue],
  );
  return Object.fromEntries(rows.map((r) => [r.instance, r.n]));
}

/**
 * Jobs of `queue` the worker holds and has not finished: claimed to it (ahead included) and
 * not yet recorded as ended by their handler. A handler records its end before the worker
 * learns of it, so a claim that refills the slot always sees it recorded.
 */
function heldSampler(schema: string, queue: string, workerId: string) {
  return sampler(
    `SELECT count(*)::int AS n FROM "${schema}".job j
      WHERE j.state = 'active' AND j.queue = $1 AND j.worker_id = $2
        AND NOT EXISTS (SELECT 1 FROM "${schema}".qs_run r WHERE r.job_id = j.id AND r.ended_at IS NOT NULL)`,
    [queue, workerId],
  );
}

const allSucceeded = (schema: string, n: number) => () =>
  waitFor(`${n} jobs succeeded`, async () => (await succeededCount(schema)) === n, 30_000);

describe('a queue capped per instance (worker.queues: { video: { concurrency: 2 } })', () => {
  it('runs at most 2 video jobs at once, reaches 2, and leaves the other slots to mail meanwhile', async () => {
    const schema = newSchema();
    // A long poll: a freed video slot must be claimed again without it.
    const worker = { concurrency: 10, pollInterval: 10_000, queues: { video: { concurrency: 2 }, mail: {} } };
    const { app, workerId } = await boot(schema, 'a', worker);
    const held = heldSampler(schema, 'video', workerId);
    await enqueue(app, 'video', 20, 150);
    await enqueue(app, 'mail', 20, 150);
    await allSucceeded(schema, 40)();
    expect(await held.stop()).toBeLessThanOrEqual(2);

    const video = await overlap(schema, 'video', 'a', 'mail', 2);
    expect(video.most).toBe(2);
    // While 2 video jobs ran, mail had more than 2 of the other 8 slots.
    expect(video.besideFull).toBeGreaterThan(2);
    expect((await overlap(schema, 'mail', 'a')).most).toBeGreaterThan(2);
  });

  it('is per instance: two instances capped at 2 run up to 4 at once, never more than 2 each', async () => {
    const schema = newSchema();
    const worker = { concurrency: 10, pollInterval: 100, queues: { video: { concurrency: 2 } } };
    const a = await boot(schema, 'a', worker);
    const b = await boot(schema, 'b', worker);
    const heldA = heldSampler(schema, 'video', a.workerId);
    const heldB = heldSampler(schema, 'video', b.workerId);
    await enqueue(a.app, 'video', 20, 250);
    await allSucceeded(schema, 20)();
    expect(await heldA.stop()).toBeLessThanOrEqual(2);
    expect(await heldB.stop()).toBeLessThanOrEqual(2);

    expect((await overlap(schema, 'video', 'a')).most).toBe(2);
    expect((await overlap(schema, 'video', 'b')).most).toBe(2);
    const everywhere = (await overlap(schema, 'video', null)).most;
    expect(everywhere).toBeGreaterThan(2);
    expect(everywhere).toBeLessThanOrEqual(4);
  });

  it('with prefetch: 50, holds no video job beyond the cap, so the other instance gets its share', async () => {
    const schema = newSchema();
    // mail first: its jobs fill the buffer, and video's claims wait behind them there.
    const worker = {
      concurrency: 10,
      prefetch: 50,
      pollInterval: 100,
      queues: { mail: {}, video: { concurrency: 2 } },
    };
    const a = await boot(schema, 'a', worker);
    const b = await boot(schema, 'b', worker);
    const heldA = heldSampler(schema, 'video', a.workerId);
    const heldB = heldSampler(schema, 'video', b.workerId);
    await enqueue(a.app, 'video', 20, 100);
    await enqueue(a.app, 'mail', 200, 20);
    await allSucceeded(schema, 220)();
    expect(await heldA.stop()).toBeLessThanOrEqual(2);
    expect(await heldB.stop()).toBeLessThanOrEqual(2);

    expect((await overlap(schema, 'video', 'a')).most).toBeLessThanOrEqual(2);
    expect((await overlap(schema, 'video', 'b')).most).toBeLessThanOrEqual(2);
    const ran = await runsBy(schema, 'video');
    expect(ran.a).toBeGreaterThan(0);
    expect(ran.b).toBeGreaterThan(0);
  });

  it('beside a global limit: each instance keeps to its cap, and the queue to its limit of 3', async () => {
    const schema = newSchema();
    const worker = { concurrency: 10, pollInterval: 100, queues: { video: { concurrency: 2 } } };
    const options = { queues: { video: { concurrency: 3 } } };
    const a = await boot(schema, 'a', worker, options);
    const b = await boot(schema, 'b', worker, options);
    const heldA = heldSampler(schema, 'video', a.workerId);
    const heldB = heldSampler(schema, 'video', b.workerId);
    await enqueue(a.app, 'video', 24, 100);
    await allSucceeded(schema, 24)();
    expect(await heldA.stop()).toBeLessThanOrEqual(2);
    expect(await heldB.stop()).toBeLessThanOrEqual(2);

    // Which instance wins two of the queue's three slots is the claims' timing: each keeps to 2,
    // one of them reaches it, and together they keep to 3.
    const mostA = (await overlap(schema, 'video', 'a')).most;
    const mostB = (await overlap(schema, 'video', 'b')).most;
    expect(mostA).toBeLessThanOrEqual(2);
    expect(mostB).toBeLessThanOrEqual(2);
    expect(Math.max(mostA, mostB)).toBe(2);
    expect((await overlap(schema, 'video', null)).most).toBeLessThanOrEqual(3);
  });

  it('refuses a bad cap at boot, naming worker.queues.<name>.concurrency and the fix', async () => {
    const schema = newSchema();
    const bad = async (worker: unknown) => {
      const started = boot(schema, 'x', worker as WorkerOptions);
      await expect(started).rejects.toThrow(JobsError);
      return started.catch((e: Error) => e.message);
    };
    expect(await bad({ concurrency: 4, queues: { video: { concurrency: 8 } } })).toContain(
      '"worker.queues.video.concurrency" is 8, more than the 4 jobs this instance runs at once ("worker.concurrency")',
    );
    expect(await bad({ queues: { video: { concurrency: 0 } } })).toContain(
      '"worker.queues.video.concurrency" must be an integer >= 1, got 0. Potential fix: worker.queues.video.concurrency: 2.',
    );
    expect(await bad({ queues: 'video' })).toContain('"worker.queues" must be an array of queue names');
    expect(await bad({ queues: { video: { concurency: 2 } } })).toContain(
      'unknown option "worker.queues.video.concurency". Did you mean "worker.queues.video.concurrency"?',
    );
  });

  it("the testing kit's drain runs a capped queue's jobs, one at a time as always", async () => {
    @Module({
      providers: [
        SlotRuns,
        SlotWork,
        { provide: QS_INSTANCE, useValue: 'kit' },
        { provide: QS_SCHEMA, inject: [JobsTester], useFactory: (tester: JobsTester) => tester.schema },
      ],
    })
    class Own {}
    const worker = { concurrency: 4, queues: { video: { concurrency: 1 }, mail: {} } };
    const ref = await Test.createTestingModule({
      imports: [JobsTestingModule.forRoot({ ...jobsConnection(), unregisteredJobs: 'ignore', worker }), Own],
    }).compile();
    const kit = { app: ref.createNestApplication({ logger: false }), tester: ref.get(JobsTester) };
    apps.push(kit.app);
    await kit.app.init();
    const schema = kit.tester.schema;
    await sql(RUN_TABLE(schema));
    await enqueue(kit.app, 'video', 3, 1);
    await enqueue(kit.app, 'mail', 2, 1);
    const reports = await kit.tester.drain();
    expect(reports.map((r) => r.outcome)).toEqual(Array(5).fill('succeeded'));
    expect((await overlap(schema, 'video', 'kit')).most).toBe(1);
  });
});
