import type { INestApplication, Provider } from '@nestjs/common';
import request from 'supertest';
import {
  Job,
  JobQueue,
  JOB_LIST_STATES,
  JobsError,
  JobsMonitor,
  type JobHandler,
  type JobsModuleOptions,
  type StateCounts,
} from 'nestjs-durable-jobs';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startSampleApp } from '../../support/sample-app.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

@Job('quick', { queue: 'q1' })
class Quick implements JobHandler<{ i: number }> {
  run() {}
}

@Job('boom', { queue: 'q2', maxAttempts: 1 })
class Boom implements JobHandler<null> {
  run(): never {
    throw new Error('boom');
  }
}

/** Runs until the test lets it go: an active job for as long as the test needs one. */
const hold = { released: false, waiters: [] as Array<() => void> };
@Job('held', { queue: 'q2' })
class Held implements JobHandler<null> {
  async run() {
    if (!hold.released) await new Promise<void>((resolve) => hold.waiters.push(resolve));
  }
}

@Job('after-held', { queue: 'q1' })
class AfterHeld implements JobHandler<null> {
  run() {}
}

@Job('elsewhere', { queue: 'q3' })
class Elsewhere implements JobHandler<null> {
  run() {}
}

const schema = uniqueSchema('monitor');
const apps: INestApplication[] = [];
const HOUR = 3_600_000;

async function boot(
  options: Partial<JobsModuleOptions>,
  providers: Provider[] = [Quick, Boom, Held, AfterHeld, Elsewhere],
) {
  // The sample's @Job classes are loaded too (for the last test); this app runs only its own.
  const app = await startJobsApp(schema, options, { providers });
  apps.push(app);
  return app;
}

const counts = (c: Partial<StateCounts>): StateCounts => ({
  waiting: 0,
  queued: 0,
  scheduled: 0,
  active: 0,
  succeeded: 0,
  failed: 0,
  cancelled: 0,
  skipped: 0,
  ...c,
});

let api: INestApplication;
let monitor: JobsMonitor;
let jobs: JobQueue;
const ids: Record<string, string[]> = {};

describe('JobsMonitor', () => {
  beforeAll(async () => {
    // The worker serves q1 and q2 only, so q3's job stays queued; the API instance runs no jobs.
    await boot({ worker: { concurrency: 4, pollInterval: 100, queues: ['q1', 'q2'] } });
    api = await boot({ worker: { enabled: false } });
    monitor = api.get(JobsMonitor);
    jobs = api.get(JobQueue);
    const add = async (key: string, job: Parameters<JobQueue['enqueue']>[0], options = {}) =>
      (ids[key] ??= []).push((await jobs.enqueue(job, null as never, options)).id);
    for (let i = 0; i < 3; i++) await add('quick', Quick);
    await add('boom', Boom);
    await add('held', Held);
    await add('after-held', AfterHeld, { after: ids.held![0] });
    await add('later', Quick, { delay: HOUR });
    await add('later', Quick, { delay: HOUR });
    await add('cancelled', Quick, { delay: HOUR });
    await jobs.cancel(ids.cancelled![0]!);
    await add('elsewhere', Elsewhere);
    await waitFor('the quick jobs to succeed, boom to fail and held to run', async () => {
      const states = await Promise.all(
        [...ids.quick!, ...ids.boom!, ...ids.held!].map(async (id) => (await jobs.get(id))?.state),
      );
      return states.join() === 'succeeded,succeeded,succeeded,failed,active';
    });
  });

  // Closed before the sample app starts: the suite's test files share the server's connections.
  afterAll(async () => {
    hold.released = true;
    for (const release of hold.waiters.splice(0)) release();
    for (const app of apps.splice(0)) await app.close().catch(() => undefined);
    await dropSchemas(schema);
  });

  it('counts jobs by queue and state: live states exact, finished ones since a time', async () => {
    const result = await monitor.counts();
    expect(result.queues).toEqual({
      q1: counts({ succeeded: 3, waiting: 1, scheduled: 2, cancelled: 1 }),
      q2: counts({ failed: 1, active: 1 }),
      q3: counts({ queued: 1 }),
    });
    expect(result.total).toEqual(
      counts({ succeeded: 3, failed: 1, waiting: 1, scheduled: 2, cancelled: 1, active: 1, queued: 1 }),
    );
    // Jobs created before "since" drop out of the finished counts, never out of the live ones.
    const later = await monitor.counts({ since: new Date(Date.now() + 60_000) });
    expect(later.total).toEqual(counts({ waiting: 1, scheduled: 2, active: 1, queued: 1 }));
    await expect(monitor.counts({ since: new Date('nope') })).rejects.toThrow(
      /JobsMonitor.counts\(\): "since" must be a valid Date.*Potential fix/,
    );
  });

  it('lists workers: the running one alive with its queues and load; stopped and silent ones not alive', async () => {
    // It serves a queue of its own, so it takes none of the jobs the other tests count.
    const third = await boot({ worker: { concurrency: 1, pollInterval: 100, queues: ['q9'] } });
    const thirdId = (await sql<{ id: string }>(`SELECT id FROM "${schema}".worker WHERE concurrency = 1`))[0]!.id;
    await third.close();
    apps.splice(apps.indexOf(third), 1);
    // A process that died without a word: its row says running, its heartbeat is an hour old.
    await sql(
      `INSERT INTO "${schema}".worker (id, host, pid, queues, concurrency, started_at, last_heartbeat)
       VALUES ('silent', 'gone-host', 1, '{}', 2, now() - interval '2 hours', now() - interval '1 hour')`,
    );
    const list = await monitor.workers();
    const byId = Object.fromEntries(list.map((w) => [w.id, w]));
    expect(list).toHaveLength(3); // the API instance runs no worker and has no row
    const running = list.find((w) => w.concurrency === 4)!;
    expect(running).toMatchObject({ alive: true, queues: ['q1', 'q2'], stoppedAt: null, pid: process.pid });
    expect(byId[thirdId]).toMatchObject({ alive: false, active: 0 });
    expect(byId[thirdId]!.stoppedAt).toBeInstanceOf(Date);
    expect(byId.silent).toMatchObject({ alive: false, stoppedAt: null });
    // Workers stopped longer ago than asked are left out.
    await sql(`UPDATE "${schema}".worker SET stopped_at = now() - interval '2 hours' WHERE id = $1`, [thirdId]);
    expect((await monitor.workers()).map((w) => w.id)).not.toContain(thirdId);
    expect((await monitor.workers({ stoppedWithin: 3 * HOUR })).map((w) => w.id)).toContain(thirdId);
  });

  it('lists jobs newest first by state, queue and name, a page at a time, without payloads', async () => {
    const succeeded = await monitor.jobs({ state: 'succeeded' });
    expect(succeeded.jobs.map((j) => j.id)).toEqual([...ids.quick!].reverse());
    expect(succeeded.next).toBeNull();
    expect(succeeded.jobs[0]).not.toHaveProperty('payload');

    const first = await monitor.jobs({ state: 'succeeded', limit: 2 });
    expect(first.jobs.map((j) => j.id)).toEqual([ids.quick![2], ids.quick![1]]);
    const second = await monitor.jobs({ state: 'succeeded', limit: 2, before: first.next! });
    expect(second).toEqual({ jobs: [expect.objectContaining({ id: ids.quick![0] })], next: null });

    const [failed] = (await monitor.jobs({ state: ['failed'], queue: 'q2' })).jobs;
    expect(failed).toMatchObject({ id: ids.boom![0], name: 'boom', attempt: 1, maxAttempts: 1 });
    expect(failed!.lastError).toMatchObject({ message: 'boom' });
    expect((await monitor.jobs({ state: ['waiting', 'active'] })).jobs.map((j) => j.name).sort()).toEqual([
      'after-held',
      'held',
    ]);
    expect((await monitor.jobs({ name: 'elsewhere' })).jobs).toEqual([
      expect.objectContaining({ state: 'queued', queue: 'q3', workerId: null }),
    ]);
    expect((await monitor.jobs({ queue: 'q1' })).jobs).toHaveLength(7);
  });

  it('lists each state as counts() reports it: queued is due now, scheduled is queued for later', async () => {
    const { total } = await monitor.counts();
    for (const state of JOB_LIST_STATES) {
      const listed = (await monitor.jobs({ state, limit: 500 })).jobs;
      expect({ state, listed: listed.length }).toEqual({ state, listed: total[state] });
    }
    const now = Date.now();
    const scheduled = (await monitor.jobs({ state: 'scheduled' })).jobs;
    expect(scheduled).toHaveLength(2);
    for (const job of scheduled) {
      expect(job.state).toBe('queued');
      expect(job.runAt.getTime()).toBeGreaterThan(now);
    }
    const due = (await monitor.jobs({ state: 'queued' })).jobs;
    expect(due.map((j) => j.name)).toEqual(['elsewhere']);
    const both = await monitor.jobs({ state: ['queued', 'scheduled'] });
    expect(both.jobs.map((j) => j.id).sort()).toEqual([...due, ...scheduled].map((j) => j.id).sort());
  });

  it('rejects bad filters at the call site, naming the field and the fix', async () => {
    const bad: Array<[Parameters<JobsMonitor['jobs']>[0], RegExp]> = [
      [{ state: 'done' as never }, /unknown state "done".*Potential fix: one of waiting, queued, scheduled, active/],
      [{ limit: 0 }, /"limit" must be an integer from 1 to 500, got 0/],
      [{ limit: 501 }, /"limit" must be an integer from 1 to 500, got 501/],
      [{ before: 'x' }, /"before" must be a job id \(a UUID\), got the string "x"/],
      [{ queue: '' }, /"queue" must be a non-empty string/],
    ];
    for (const [filter, message] of bad) {
      const error = await monitor.jobs(filter).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(JobsError);
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).toMatch(/Potential fix/);
    }
    await expect(monitor.workers({ stoppedWithin: -1 })).rejects.toThrow(/"stoppedWithin" must be a duration/);
  });
});

describe('sample app', () => {
  it('GET /stats, /workers, /jobs, /health and /metrics show the same; a bad filter is a 400 naming the fix', async () => {
    const sampleSchema = uniqueSchema('monsample');
    const app = await startSampleApp({
      schema: sampleSchema,
      worker: { pollInterval: 100 },
      unregisteredJobs: 'ignore',
    });
    try {
      const http = app.getHttpServer();
      const { body: order } = await request(http).post('/orders').send({ email: 'ops@example.com' }).expect(201);
      await waitFor(
        'the receipt to be sent',
        async () => (await app.get(JobQueue).get(order.jobId))?.state === 'succeeded',
      );
      const stats = await request(http).get('/stats').expect(200);
      expect(stats.body.queues.emails).toMatchObject({ succeeded: 1, queued: 0, active: 0 });
      const workers = await request(http).get('/workers').expect(200);
      expect(workers.body).toEqual([expect.objectContaining({ alive: true, concurrency: 10 })]);
      const list = await request(http).get('/jobs?state=succeeded&queue=emails').expect(200);
      expect(list.body).toEqual({
        jobs: [expect.objectContaining({ id: order.jobId, name: 'send-receipt' })],
        next: null,
      });
      const health = await request(http).get('/health').expect(200);
      expect(health.body).toMatchObject({ status: 'ok', details: { jobs: { status: 'up', aliveWorkers: 1 } } });
      const metrics = await request(http).get('/metrics').expect(200);
      expect(metrics.text).toContain(
        'durable_jobs_attempts_total{queue="emails",job="send-receipt",outcome="succeeded"} 1',
      );
      expect(metrics.text).toContain('durable_jobs_workers_alive 1');
      // The sample's ListJobsQueryDto answers it before JobsMonitor is asked (jobs.e2e has the table of bad input).
      const bad = await request(http).get('/jobs?state=finished').expect(400);
      expect(bad.body.message).toEqual([
        expect.stringMatching(/^state must be one or more of waiting, queued, .*such as/),
      ]);
    } finally {
      await app.close();
      await dropSchemas(sampleSchema, `${sampleSchema}_jobs`);
    }
  });
});
