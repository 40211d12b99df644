import type { INestApplication } from '@nestjs/common';
import { Registry } from 'prom-client';
import { Job, JobQueue, PermanentJobError, type JobHandler } from 'nestjs-durable-jobs';
import { JOBS_METRICS_REGISTRY, JobsMetrics } from 'nestjs-durable-jobs/metrics';
import { dropSchemas, uniqueSchema } from '../support/database.js';
import { startJobsApp } from '../support/jobs-app.js';
import { waitFor } from '../support/wait.js';

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
const registry = new Registry();
const apps: INestApplication[] = [];

async function boot() {
  const app = await startJobsApp(
    schema,
    { worker: { pollInterval: 100, queues: ['work', 'other'] }, queues: { 'declared-only': { concurrency: 1 } } },
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
async function sample(name: string, labels: Record<string, string> = {}) {
  for (const metric of await registry.getMetricsAsJSON()) {
    for (const v of metric.values as Array<{ metricName?: string; labels: Record<string, unknown>; value: number }>) {
      if ((v.metricName ?? metric.name) !== name) continue;
      if (Object.entries(labels).every(([key, value]) => v.labels[key] === value)) return v.value;
    }
  }
  return undefined;
}

afterAll(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
  await dropSchemas(schema);
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
