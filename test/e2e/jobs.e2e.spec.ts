import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { JobQueue, JobsError, RetentionService } from 'nestjs-durable-jobs';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import { FlakySync } from '../../sample/jobs/flaky-sync.job.js';
import { SendReceipt } from '../../sample/jobs/send-receipt.job.js';
import { SlowReport } from '../../sample/jobs/slow-report.job.js';
import { Mailer } from '../../sample/orders/mailer.service.js';
import { Order } from '../../sample/orders/order.entity.js';
import { dropSchemas, sql, uniqueSchema } from '../support/database.js';
import { DoomedProbe, ProbeRecorder, ScopedProbe, TimeoutProbe, probeProviders } from '../support/probe.jobs.js';
import { startSampleApp } from '../support/sample-app.js';
import { sleep, waitFor } from '../support/wait.js';
import { JobWorker } from '../../lib/worker/job-worker.service.js';

const schema = uniqueSchema('jobs');
const clock = new ManualClock(new Date('2026-11-01T10:00:00Z'));
let app: INestApplication;
let jobs: JobQueue;

const stateOf = async (id: string) => (await jobs.get(id))?.state;
/** The job's onFailure hook ran and its record says so (it runs once the failed outcome is written). */
const hookDone = (id: string) =>
  waitFor(`the onFailure hook of ${id} to be done`, async () => {
    const [row] = await sql<{ failure_hook: string | null }>(
      `SELECT failure_hook FROM "${schema}_jobs".job WHERE id = $1`,
      [id],
    );
    return row?.failure_hook === 'done';
  });
const until = (id: string, state: string) =>
  waitFor(`job ${id} to be ${state}`, async () => (await stateOf(id)) === state);

beforeAll(async () => {
  app = await startSampleApp({
    schema,
    clock,
    // Heartbeats come every third of the lease: every second, so a test that waits for one
    // waits a second. The ManualClock keeps so short a lease from running out on its own.
    worker: { concurrency: 5, pollInterval: 200, lease: 3_000 },
    providers: probeProviders(),
  });
  jobs = app.get(JobQueue);
});

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema, `${schema}_jobs`);
});

describe('sample app over HTTP', () => {
  it('POST /orders runs the receipt job; GET /jobs/:id shows it succeeded with one execution', async () => {
    const created = await request(app.getHttpServer())
      .post('/orders')
      .send({ email: 'ada@example.com', totalCents: 1200 })
      .expect(201);
    const { orderId, jobId } = created.body as { orderId: number; jobId: string };
    await until(jobId, 'succeeded');
    const res = await request(app.getHttpServer()).get(`/jobs/${jobId}`).expect(200);
    expect(res.body).toMatchObject({
      id: jobId,
      name: 'send-receipt',
      queue: 'emails',
      state: 'succeeded',
      attempt: 1,
      result: { sentTo: 'ada@example.com' },
    });
    expect(res.body.executions).toHaveLength(1);
    expect(res.body.executions[0]).toMatchObject({ attempt: 1, state: 'succeeded' });
    expect(app.get(Mailer).sent).toContainEqual({ orderId, email: 'ada@example.com' });
  });

  it('GET /jobs/:id of an unknown job is 404; of something that is no job id, a 400 naming the fix', async () => {
    await request(app.getHttpServer()).get('/jobs/00000000-0000-7000-8000-000000000000').expect(404);
    const bad = await request(app.getHttpServer()).get('/jobs/not-a-uuid').expect(400);
    expect(bad.body.message).toMatch(
      /get\(\): the string "not-a-uuid" is not a job id .*Potential fix: pass the id enqueue\(\) returned/,
    );
    await request(app.getHttpServer()).delete('/jobs/not-a-uuid').expect(400);
  });
});

describe('imports over HTTP', () => {
  it('POST /imports dispatches a batch; GET /batches/:id shows it with progress', async () => {
    const res = await request(app.getHttpServer())
      .post('/imports')
      .send({ name: 'october', files: ['a.csv', 'b.csv', 'c.csv'], userId: 7 })
      .expect(201);
    const { batchId } = res.body as { batchId: string };
    await waitFor('the import to succeed', async () => {
      const status = await request(app.getHttpServer()).get(`/batches/${batchId}`).expect(200);
      return status.body.state === 'succeeded';
    });
    const status = await request(app.getHttpServer()).get(`/batches/${batchId}`).expect(200);
    expect(status.body).toMatchObject({ name: 'october', total: 3, succeeded: 3, progress: 1 });
    await request(app.getHttpServer()).get('/batches/00000000-0000-7000-8000-000000000000').expect(404);
    await request(app.getHttpServer()).post('/imports').send({ files: 'a.csv' }).expect(400);
  });
});

describe('transactional enqueue', () => {
  it('a rolled-back transaction leaves no job; a committed one runs', async () => {
    const ds = app.get(DataSource);
    let rolledBackId = '';
    await expect(
      ds.transaction(async (manager) => {
        const order = await manager.save(manager.create(Order, { email: 'gone@example.com', totalCents: 1 }));
        rolledBackId = (await jobs.enqueue(SendReceipt, { orderId: order.id }, { manager })).id;
        throw new Error('payment declined');
      }),
    ).rejects.toThrow('payment declined');
    expect(rolledBackId).not.toBe('');
    expect(await jobs.get(rolledBackId)).toBeNull();

    const committedId = await ds.transaction(async (manager) => {
      const order = await manager.save(manager.create(Order, { email: 'kept@example.com', totalCents: 2 }));
      return (await jobs.enqueue(SendReceipt, { orderId: order.id }, { manager })).id;
    });
    await until(committedId, 'succeeded');
  });
});

describe('retries and failures', () => {
  it('the flaky job succeeds at attempt 3 after backoff delays measured on the clock', async () => {
    const { id } = await jobs.enqueue(FlakySync, { account: 'acme' });
    // A running attempt also shows as an execution (state 'active'): wait for the failed one.
    const failedAttempts = async () => (await jobs.get(id))?.executions.filter((e) => e.state === 'failed').length;
    await waitFor('attempt 1 to fail', async () => (await failedAttempts()) === 1);
    let job = (await jobs.get(id))!;
    expect(job.state).toBe('queued');
    expect(job.runAt.getTime() - clock.now().getTime()).toBe(1_000);
    // Not before the backoff has passed on the clock.
    clock.advance(999);
    await sleep(400);
    expect((await jobs.get(id))!.executions).toHaveLength(1);
    clock.advance(1);
    await waitFor('attempt 2 to fail', async () => (await failedAttempts()) === 2);
    job = (await jobs.get(id))!;
    expect(job.runAt.getTime() - clock.now().getTime()).toBe(2_000);
    clock.advance(2_000);
    await until(id, 'succeeded');
    job = (await jobs.get(id))!;
    expect(job.attempt).toBe(3);
    expect(job.executions.map((e) => [e.attempt, e.state])).toEqual([
      [1, 'failed'],
      [2, 'failed'],
      [3, 'succeeded'],
    ]);
    expect(job.executions[0]!.error?.message).toContain('attempt 1');
  });

  it('a PermanentJobError fails the job at once; onFailure runs once', async () => {
    const recorder = app.get(ProbeRecorder);
    const { id } = await jobs.enqueue(DoomedProbe, { permanent: true });
    await until(id, 'failed');
    const job = (await jobs.get(id))!;
    expect(job.attempt).toBe(1);
    expect(job.lastError).toMatchObject({ name: 'PermanentJobError', message: 'the record is gone' });
    expect(job.executions.map((e) => e.state)).toEqual(['failed']);
    await hookDone(id);
    expect(recorder.failures.get(id)).toBe(1);
    // Run by the worker that failed it, right after the outcome: with the error as thrown.
    expect(recorder.failureSeen.get(id)).toEqual({ error: 'PermanentJobError', aborted: false });
  });

  it('used-up attempts fail the job; onFailure runs exactly once', async () => {
    const recorder = app.get(ProbeRecorder);
    const { id } = await jobs.enqueue(DoomedProbe, {});
    await until(id, 'failed');
    const job = (await jobs.get(id))!;
    expect(job.attempt).toBe(3);
    expect(job.executions.map((e) => [e.attempt, e.state])).toEqual([
      [1, 'failed'],
      [2, 'failed'],
      [3, 'failed'],
    ]);
    expect(recorder.attempts.get(id)).toEqual([1, 2, 3]);
    await hookDone(id);
    expect(recorder.failures.get(id)).toBe(1);
  });

  it('a timeout fails the attempt and aborts the signal', async () => {
    const recorder = app.get(ProbeRecorder);
    const { id } = await jobs.enqueue(TimeoutProbe, {});
    await until(id, 'failed');
    const job = (await jobs.get(id))!;
    expect(job.lastError).toMatchObject({ name: 'JobTimeoutError' });
    expect(job.lastError!.message).toContain('200 ms');
    expect(recorder.aborts.get(id)).toBe('JobTimeoutError');
  });

  it('retry() requeues a failed job with fresh attempts; other states are refused', async () => {
    const { id } = await jobs.enqueue(DoomedProbe, { permanent: true });
    await until(id, 'failed');
    await jobs.retry(id);
    // retry() has queued it when it returns; "failed" with attempt 2 can only be the retried run's end.
    // (Counting executions included the attempt still running, which then read "active".)
    await waitFor('the retried job to fail again', async () => {
      const retried = await jobs.get(id);
      return retried?.state === 'failed' && retried.attempt === 2;
    });
    const job = (await jobs.get(id))!;
    expect(job.executions.map((e) => [e.attempt, e.state])).toEqual([
      [1, 'failed'],
      [2, 'failed'],
    ]);
    expect(job.maxAttempts).toBe(4);
    const queued = await jobs.enqueue(FlakySync, { account: 'x' }, { delay: 60_000 });
    await expect(jobs.retry(queued.id)).rejects.toThrow(
      /the job is "queued"; only failed, cancelled or skipped jobs can be retried/,
    );
    await expect(jobs.retry('00000000-0000-7000-8000-000000000000')).rejects.toThrow(/no such job/);
    await jobs.cancel(queued.id);
  });
});

describe('handlers and DI', () => {
  it('a handler with request-scoped dependencies gets a fresh DI sub-tree per run', async () => {
    const first = await jobs.enqueue(ScopedProbe, {});
    const second = await jobs.enqueue(ScopedProbe, {});
    await until(first.id, 'succeeded');
    await until(second.id, 'succeeded');
    const a = (await jobs.get(first.id))!.result as { serial: number; sameJob: boolean };
    const b = (await jobs.get(second.id))!.result as { serial: number; sameJob: boolean };
    expect(a.sameJob).toBe(true);
    expect(b.sameJob).toBe(true);
    expect(a.serial).not.toBe(b.serial);
  });

  it('progress is stored while running and set to 1 on success', async () => {
    const { id } = await jobs.enqueue(SlowReport, { steps: 4, stepMs: 150 });
    const seen = await waitFor('progress between 0 and 1', async () => {
      const job = await jobs.get(id);
      return job && job.progress !== null && job.progress > 0 && job.progress < 1 ? job : null;
    });
    expect(seen.progressMessage).toMatch(/step \d of 4/);
    await until(id, 'succeeded');
    expect((await jobs.get(id))!.progress).toBe(1);
  });
});

describe('cancellation', () => {
  it('cancels a queued job at once', async () => {
    const { id } = await jobs.enqueue(SlowReport, { steps: 1, stepMs: 1 }, { delay: 60_000 });
    await request(app.getHttpServer()).delete(`/jobs/${id}`).expect(202);
    expect(await stateOf(id)).toBe('cancelled');
    await request(app.getHttpServer()).delete(`/jobs/${id}`).expect(400);
  });

  it('cancels a running job: its signal aborts and it ends cancelled', async () => {
    const { id } = await jobs.enqueue(SlowReport, { steps: 100, stepMs: 100 });
    await waitFor('the report to report progress', async () => ((await jobs.get(id))?.progress ?? 0) > 0);
    await jobs.cancel(id);
    await until(id, 'cancelled');
    const job = (await jobs.get(id))!;
    expect(job.progress).toBeLessThan(1);
    expect(job.executions.map((e) => e.state)).toEqual(['cancelled']);
    await expect(jobs.cancel(id)).rejects.toThrow(/already ended "cancelled"/);
    // A cancelled job can be run again.
    await jobs.retry(id);
    expect(await stateOf(id)).not.toBe('cancelled');
    await jobs.cancel(id);
  });
});

describe('retention', () => {
  it('prunes succeeded jobs after 7 days and failed ones after 30, measured on the clock', async () => {
    const ok = await jobs.enqueue(FlakySync, { account: 'old' }, { maxAttempts: 1 });
    const bad = await jobs.enqueue(DoomedProbe, { permanent: true });
    await until(bad.id, 'failed');
    const { id: fresh } = await jobs.enqueue(FlakySync, { account: 'fresh' }, { delay: 90 * 86_400_000 });
    await waitFor('the flaky job to fail', async () => (await stateOf(ok.id)) === 'failed');
    const good = await jobs.enqueue(SlowReport, { steps: 1, stepMs: 1 });
    await until(good.id, 'succeeded');
    const retention = app.get(RetentionService);
    clock.advance(6 * 86_400_000);
    await retention.prune();
    expect(await jobs.get(good.id)).not.toBeNull();
    clock.advance(2 * 86_400_000);
    await retention.prune();
    expect(await jobs.get(good.id)).toBeNull();
    expect(await jobs.get(bad.id)).not.toBeNull();
    // A job made long ago that has not finished is never pruned.
    expect(await stateOf(fresh)).not.toBeUndefined();
    clock.advance(23 * 86_400_000);
    await retention.prune();
    expect(await jobs.get(bad.id)).toBeNull();
    expect(await jobs.get(ok.id)).toBeNull();
    expect(await jobs.get(fresh)).not.toBeNull();
    await jobs.cancel(fresh);
  });

  it('prunes the rows of workers stopped or silent for 7 days; a live worker whose row went registers again', async () => {
    const workers = async () => (await sql<{ id: string }>(`SELECT id FROM "${schema}_jobs".worker`)).map((w) => w.id);
    const own = app.get(JobWorker).id;
    const now = clock.now().getTime();
    await sql(
      `INSERT INTO "${schema}_jobs".worker (id, host, pid, queues, concurrency, started_at, last_heartbeat, stopped_at)
       VALUES ('stopped-8d', 'h', 1, '{}', 1, $1, $1, $1), ('silent-8d', 'h', 2, '{}', 1, $1, $1, NULL),
              ('stopped-6d', 'h', 3, '{}', 1, $2, $2, $2)`,
      [new Date(now - 8 * 86_400_000), new Date(now - 6 * 86_400_000)],
    );
    await app.get(RetentionService).prune();
    const left = await workers();
    expect(left).toContain('stopped-6d');
    expect(left).not.toContain('stopped-8d');
    expect(left).not.toContain('silent-8d');
    // A live worker whose row went (a clock that jumped past its last beat): its next beat,
    // every third of the lease, brings the row back.
    await sql(`DELETE FROM "${schema}_jobs".worker WHERE id = $1`, [own]);
    await waitFor('the worker to register again', async () => (await workers()).includes(own));
  });
});

describe('errors at the call site', () => {
  const cases: Array<[string, () => Promise<unknown>, RegExp]> = [
    [
      'a function in the payload',
      () => jobs.enqueue('flaky-sync', { account: 'a', fn: () => 1 } as never),
      /flaky-sync.*not JSON-serialisable at \$\.fn \(a function\)/,
    ],
    ['a BigInt', () => jobs.enqueue(FlakySync, { account: 10n } as never), /flaky-sync.*\$\.account \(a BigInt\)/],
    [
      'a cycle',
      () => {
        const p: Record<string, unknown> = { account: 'a' };
        p.self = p;
        return jobs.enqueue('flaky-sync', p as never);
      },
      /circular reference/,
    ],
    [
      'an oversized payload',
      () => jobs.enqueue(FlakySync, { account: 'x'.repeat(300 * 1024) }),
      /flaky-sync.*over maxPayloadBytes \(262144\)/,
    ],
    ['an unknown job name', () => jobs.enqueue('no-such-job', {}), /Unknown job "no-such-job".*Potential fix/],
    [
      'a negative delay',
      () => jobs.enqueue(FlakySync, { account: 'a' }, { delay: -5 }),
      /flaky-sync.*"delay" must be a number of milliseconds >= 0/,
    ],
    [
      'an invalid date',
      () => jobs.enqueue(FlakySync, { account: 'a' }, { runAt: new Date('nope') }),
      /flaky-sync.*"runAt" must be a valid Date/,
    ],
    ['a class that is not a job', () => jobs.enqueue(Order as never, {}), /Order is not a job handler/],
  ];
  it.each(cases)('%s throws a JobsError and writes nothing', async (_label, call, message) => {
    const before = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}_jobs".job`);
    const error = await call().then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(JobsError);
    expect((error as Error).message).toMatch(message);
    const after = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}_jobs".job`);
    expect(after[0]!.n).toBe(before[0]!.n);
  });

  it('enqueueMany writes all jobs in one statement, or none when one is bad', async () => {
    const before = (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}_jobs".job`))[0]!.n;
    await expect(
      jobs.enqueueMany([
        { job: FlakySync, payload: { account: 'a' }, options: { delay: 60_000 } },
        { job: 'no-such-job', payload: {} },
      ]),
    ).rejects.toThrow(JobsError);
    expect((await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}_jobs".job`))[0]!.n).toBe(before);
    const ids = await jobs.enqueueMany([
      { job: FlakySync, payload: { account: 'a' }, options: { delay: 60_000 } },
      { job: FlakySync, payload: { account: 'b' }, options: { delay: 60_000 } },
    ]);
    expect(ids).toHaveLength(2);
    for (const { id } of ids) expect(await stateOf(id)).toBe('queued');
    for (const { id } of ids) await jobs.cancel(id);
  });
});
