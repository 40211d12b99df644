import type { INestApplication } from '@nestjs/common';
import { MeterProvider, MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics';
import { Registry } from 'prom-client';
import type { DataSource } from 'typeorm';
import {
  BatchBuilder,
  Job,
  JOBS_DATA_SOURCE,
  JobQueue,
  JobsError,
  PermanentJobError,
  type JobHandler,
} from 'nestjs-durable-jobs';
import { JOBS_METER, JOBS_METRICS_REGISTRY, JobsMetrics, JobsOtelMetrics } from 'nestjs-durable-jobs/metrics';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import { loadOtelApi } from '../../../lib/monitoring/otel-job-metrics.js';
import { dropSchemas, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

@Job('tally', { queue: 'work' })
class Tally implements JobHandler<null> {
  run() {}
}

const tries = new Map<string, number>();
@Job('second-time', { queue: 'work', maxAttempts: 2, backoff: { type: 'fixed', delay: 0 } })
class SecondTime implements JobHandler<{ key: string }> {
  run({ key }: { key: string }) {
    const n = (tries.get(key) ?? 0) + 1;
    tries.set(key, n);
    if (n === 1) throw new Error('first try fails');
  }
}

@Job('hopeless', { queue: 'other' })
class Hopeless implements JobHandler<null> {
  run(): never {
    throw new PermanentJobError('never works');
  }
}

@Job('unserved', { queue: 'nobody' })
class Unserved implements JobHandler<null> {
  run() {}
}

const schema = uniqueSchema('metrics');
const heldSchema = uniqueSchema('metrics_held');
const otelSchema = uniqueSchema('metrics_otel');
const registry = new Registry();
const apps: INestApplication[] = [];

async function boot() {
  const app = await startJobsApp(
    schema,
    {
      worker: { pollInterval: 100, queues: ['work', 'other'] },
      // Limited queues take the controlled claim (and the claims riding on success writes).
      queues: { 'declared-only': { concurrency: 1 }, work: { concurrency: 2 }, other: { concurrency: 1 } },
    },
    {
      providers: [
        Tally,
        SecondTime,
        Hopeless,
        Unserved,
        JobsMetrics,
        { provide: JOBS_METRICS_REGISTRY, useValue: registry },
      ],
    },
  );
  apps.push(app);
  return app;
}

/** One sample's value from the registry, by its name (`…_count` for a histogram's count) and labels. */
async function sample(name: string, labels: Record<string, string> = {}, from = registry) {
  for (const metric of await from.getMetricsAsJSON()) {
    for (const v of metric.values as Array<{ metricName?: string; labels: Record<string, unknown>; value: number }>) {
      if ((v.metricName ?? metric.name) !== name) continue;
      if (Object.entries(labels).every(([key, value]) => v.labels[key] === value)) return v.value;
    }
  }
  return undefined;
}

afterAll(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
  await dropSchemas(schema, heldSchema, otelSchema);
});

describe('JobsMetrics (prom-client)', () => {
  it("counts this instance's attempts by outcome and times them; reads live jobs and alive workers when scraped", async () => {
    const app = await boot();
    // Before any job exists, the queues the code names already have their series, at 0.
    for (const queue of ['work', 'other', 'nobody', 'declared-only']) {
      for (const state of ['waiting', 'queued', 'scheduled', 'active']) {
        expect([queue, state, await sample('durable_jobs_jobs', { queue, state })]).toEqual([queue, state, 0]);
      }
    }
    const jobs = app.get(JobQueue);
    const ids = [
      ...(await Promise.all([1, 2, 3].map(() => jobs.enqueue(Tally, null)))),
      await jobs.enqueue(SecondTime, { key: 'a' }),
      await jobs.enqueue(Hopeless, null),
    ].map((j) => j.id);
    await jobs.enqueue(Tally, null, { delay: 3_600_000 });
    await jobs.enqueue(Unserved, null);
    await waitFor('the five jobs to finish', async () => {
      const states = await Promise.all(ids.map(async (id) => (await jobs.get(id))?.state));
      return states.every((s) => s === 'succeeded' || s === 'failed');
    });

    const attempts = (job: string, outcome: string) =>
      sample('durable_jobs_attempts_total', { queue: job === 'hopeless' ? 'other' : 'work', job, outcome });
    expect(await attempts('tally', 'succeeded')).toBe(3);
    expect(await attempts('second-time', 'retry')).toBe(1);
    expect(await attempts('second-time', 'succeeded')).toBe(1);
    expect(await attempts('hopeless', 'failed')).toBe(1);
    expect(await sample('durable_jobs_attempt_duration_seconds_count', { queue: 'work', job: 'tally' })).toBe(3);
    expect(await sample('durable_jobs_jobs', { queue: 'work', state: 'scheduled' })).toBe(1);
    expect(await sample('durable_jobs_jobs', { queue: 'nobody', state: 'queued' })).toBe(1);
    expect(await sample('durable_jobs_jobs', { queue: 'work', state: 'active' })).toBe(0);
    // Nothing is live in "other" any more (its one job failed): its series stay, at 0.
    for (const state of ['waiting', 'queued', 'scheduled', 'active']) {
      expect([state, await sample('durable_jobs_jobs', { queue: 'other', state })]).toEqual([state, 0]);
    }
    expect(await sample('durable_jobs_workers_alive')).toBe(1);
    // Every job this instance wrote is counted once, by queue and name, whether it ran or not.
    const enqueued = (queue: string, job: string) => sample('durable_jobs_enqueued_total', { queue, job });
    expect(await enqueued('work', 'tally')).toBe(4);
    expect(await enqueued('work', 'second-time')).toBe(1);
    expect(await enqueued('other', 'hopeless')).toBe(1);
    expect(await enqueued('nobody', 'unserved')).toBe(1);
    // Each attempt started is a wait observed, the retry's from its backoff's end: 3 + 2 in "work".
    expect(await sample('durable_jobs_queue_wait_seconds_count', { queue: 'work' })).toBe(5);
    expect(await sample('durable_jobs_queue_wait_seconds_count', { queue: 'other' })).toBe(1);
    // "nobody" has a due job no worker serves: its lag is how long that job has been due.
    expect(await sample('durable_jobs_queue_lag_seconds', { queue: 'nobody' })).toBeGreaterThan(0);
    // Nothing is due in the other queues: their lag is 0, not absent.
    for (const queue of ['work', 'other', 'declared-only']) {
      expect([queue, await sample('durable_jobs_queue_lag_seconds', { queue })]).toEqual([queue, 0]);
    }
    const text = await registry.metrics();
    expect(text).toContain('durable_jobs_attempts_total{queue="work",job="tally",outcome="succeeded"} 3');
  });

  it('leaves the registry with its app, so the next app in the process registers them afresh', async () => {
    await apps.splice(0)[0]!.close();
    expect(registry.getSingleMetric('durable_jobs_attempts_total')).toBeUndefined();
    const app = await boot();
    await app.get(JobQueue).enqueue(Tally, null);
    await waitFor(
      'the new app to count its attempt',
      async () => (await sample('durable_jobs_attempts_total', { job: 'tally' })) === 1,
    );
  });
});

describe('JobsMetrics: a queue held back (no worker), on a ManualClock', () => {
  const clock = new ManualClock(Date.parse('2026-03-02T09:00:00Z'));
  const held = new Registry();
  let app: INestApplication;
  const lag = (queue: string) => sample('durable_jobs_queue_lag_seconds', { queue }, held);
  const enqueued = (queue: string, job: string) => sample('durable_jobs_enqueued_total', { queue, job }, held);

  beforeAll(async () => {
    app = await startJobsApp(
      heldSchema,
      { clock, worker: { enabled: false } },
      { providers: [Tally, SecondTime, JobsMetrics, { provide: JOBS_METRICS_REGISTRY, useValue: held }] },
    );
    apps.push(app);
  });

  it("reports the oldest due job's age per queue, growing as it waits, and 0 once nothing is due", async () => {
    const jobs = app.get(JobQueue);
    expect(await lag('work')).toBe(0);
    const first = await jobs.enqueue(Tally, null);
    clock.advance(30_000);
    const second = await jobs.enqueue(Tally, null);
    // A job not due yet is no backlog.
    const later = await jobs.enqueue(Tally, null, { delay: 3_600_000 });
    expect(await lag('work')).toBe(30);
    clock.advance(90_000);
    expect(await lag('work')).toBe(120);
    await jobs.cancel(first.id);
    expect(await lag('work')).toBe(90);
    await jobs.cancel(second.id);
    await jobs.cancel(later.id);
    expect(await lag('work')).toBe(0);
  });

  it('counts every job an enqueue, enqueueMany, flow or batch wrote, and not one a held unique key answered', async () => {
    const jobs = app.get(JobQueue);
    const before = (await enqueued('work', 'tally')) ?? 0;
    const unique = { unique: { key: 'metrics-once' } };
    await jobs.enqueue(Tally, null, unique);
    expect((await jobs.enqueue(Tally, null, unique)).created).toBe(false);
    const many = await jobs.enqueueMany([
      { job: Tally, payload: null },
      { job: Tally, payload: null, options: unique },
      { job: SecondTime, payload: { key: 'm' } },
    ]);
    expect(many.map((r) => r.created)).toEqual([true, false, true]);
    await jobs
      .flow()
      .add('a', Tally, null)
      .add('b', Tally, null, { after: ['a'] })
      .dispatch();
    await app.get(BatchBuilder).create().add(Tally, null).add(Tally, null).then(SecondTime, { key: 'b' }).dispatch();
    const { id: parent } = await jobs.enqueue(Tally, null);
    await jobs.enqueue(Tally, null, { after: parent });
    // In the caller's transaction: counted as written.
    await app.get<DataSource>(JOBS_DATA_SOURCE).transaction((manager) => jobs.enqueue(Tally, null, { manager }));
    // 1 + 1 (many) + 2 (flow) + 2 (batch members) + 2 (parent, child) + 1 (transaction)
    expect((await enqueued('work', 'tally'))! - before).toBe(9);
    expect(await enqueued('work', 'second-time')).toBe(2);
  });
});

/** A pull reader, as an exporter's would be: collect() reads the instruments now. */
class TestReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

describe('JobsOtelMetrics (OpenTelemetry)', () => {
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });

  /** The data points of one instrument, as the SDK collected them now. */
  async function points(name: string): Promise<Array<DataPoint<unknown>>> {
    const { resourceMetrics } = await reader.collect();
    const found = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
    return (found?.dataPoints ?? []) as Array<DataPoint<unknown>>;
  }
  const point = async (name: string, attributes: Record<string, string>) =>
    (await points(name)).find((p) => Object.entries(attributes).every(([k, v]) => p.attributes[k] === v))?.value;

  afterAll(() => provider.shutdown());

  it('counts enqueues and attempts, records their waits and durations, and observes jobs, lag and workers when collected', async () => {
    const app = await startJobsApp(
      otelSchema,
      { worker: { pollInterval: 100, queues: ['work', 'other'] } },
      {
        providers: [
          Tally,
          Hopeless,
          Unserved,
          JobsOtelMetrics,
          { provide: JOBS_METER, useValue: provider.getMeter('nestjs-durable-jobs') },
        ],
      },
    );
    apps.push(app);
    const jobs = app.get(JobQueue);
    const ids = [await jobs.enqueue(Tally, null), await jobs.enqueue(Tally, null), await jobs.enqueue(Hopeless, null)];
    await jobs.enqueue(Unserved, null);
    await waitFor('the three jobs to finish', async () => {
      const states = await Promise.all(ids.map(async ({ id }) => (await jobs.get(id))?.state));
      return states.every((s) => s === 'succeeded' || s === 'failed');
    });
    await waitFor('the last attempt to be counted', async () =>
      (await points('durable_jobs.attempts')).some((p) => p.attributes.outcome === 'failed'),
    );

    expect(await point('durable_jobs.enqueued', { queue: 'work', job: 'tally' })).toBe(2);
    expect(await point('durable_jobs.enqueued', { queue: 'nobody', job: 'unserved' })).toBe(1);
    expect(await point('durable_jobs.attempts', { queue: 'work', job: 'tally', outcome: 'succeeded' })).toBe(2);
    expect(await point('durable_jobs.attempts', { queue: 'other', job: 'hopeless', outcome: 'failed' })).toBe(1);
    const duration = (await point('durable_jobs.attempt.duration', { queue: 'work', job: 'tally' })) as Histogram;
    expect(duration.count).toBe(2);
    const wait = (await point('durable_jobs.queue.wait', { queue: 'work' })) as Histogram;
    expect(wait.count).toBe(2);
    expect(wait.min).toBeGreaterThanOrEqual(0);
    expect(await point('durable_jobs.jobs', { queue: 'nobody', state: 'queued' })).toBe(1);
    expect(await point('durable_jobs.jobs', { queue: 'other', state: 'queued' })).toBe(0);
    expect(await point('durable_jobs.queue.lag', { queue: 'nobody' })).toBeGreaterThan(0);
    expect(await point('durable_jobs.queue.lag', { queue: 'work' })).toBe(0);
    expect((await points('durable_jobs.workers.alive'))[0]?.value).toBe(1);
  });

  it('without @opentelemetry/api and no Meter given, fails with the package and the fix named', async () => {
    const missing = () => Promise.reject(new Error("Cannot find package '@opentelemetry/api'"));
    const error = await loadOtelApi(missing).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobsError);
    expect((error as Error).message).toMatch(
      /JobsOtelMetrics needs the package @opentelemetry\/api.*Cannot find package.*Potential fix: npm install @opentelemetry\/api/,
    );
  });
});
