import type { INestApplication } from '@nestjs/common';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  Job,
  JobQueue,
  JobQueues,
  type JobContext,
  type JobExecution,
  type JobHandler,
  type JobInfo,
} from 'nestjs-durable-jobs';
import { JobsDashboardModule } from 'nestjs-durable-jobs/dashboard';
import request from 'supertest';
import { JobRescuer } from '../../../lib/worker/job-rescuer.service.js';
import { LeaseKeeper } from '../../../lib/worker/lease-keeper.service.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

// An SDK as an app would register it, its spans kept in memory to compare with what get() shows.
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager().enable();
trace.setGlobalTracerProvider(provider);
context.setGlobalContextManager(contextManager);
propagation.setGlobalPropagator(new W3CTraceContextPropagator());

@Job('attempt-traced', { maxAttempts: 3, backoff: { type: 'fixed', delay: 0 } })
class AttemptTraced implements JobHandler<{ failures: number; transactional?: boolean }> {
  async run({ failures, transactional }: { failures: number; transactional?: boolean }, ctx: JobContext) {
    if (ctx.attempt <= failures) throw new Error(`attempt ${ctx.attempt} fails`);
    if (transactional) return ctx.transaction(async () => 'written with the handler');
    return 'done';
  }
}

@Job('attempt-traced-limited', { queue: 'traces-limited', maxAttempts: 2, backoff: { type: 'fixed', delay: 0 } })
class LimitedTraced implements JobHandler<{ failures: number }> {
  run({ failures }: { failures: number }, ctx: JobContext) {
    if (ctx.attempt <= failures) throw new Error(`attempt ${ctx.attempt} fails`);
    return Promise.resolve('done');
  }
}

/** Jobs whose handler has begun (Held): its span is open from then on. */
const begun = new Set<string>();

/** Runs until its attempt is stopped (its signal aborts): an attempt that writes no outcome. */
@Job('attempt-held', { queue: 'traces-held', maxAttempts: 5 })
class Held implements JobHandler<Record<string, never>> {
  run(_: Record<string, never>, ctx: JobContext): Promise<never> {
    begun.add(ctx.jobId);
    return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('stopped'))));
  }
}

const schema = uniqueSchema('attempt_traces');
const apps: INestApplication[] = [];

async function boot(tracing: boolean) {
  const app = await startJobsApp(
    schema,
    { tracing, worker: { pollInterval: 100, queues: ['default', 'traces-limited'] } },
    {
      imports: [JobsDashboardModule.register({ public: true, traceUrl: 'https://tempo.example/trace/{traceId}' })],
      providers: [AttemptTraced, LimitedTraced, Held],
    },
  );
  apps.push(app);
  return app;
}

async function succeeded(jobs: JobQueue, id: string): Promise<JobInfo> {
  await waitFor(`job ${id} to succeed`, async () => (await jobs.get(id))?.state === 'succeeded');
  return (await jobs.get(id))!;
}

/** Every attempt the worker saw end was claimed, then started, then ended, in that order. */
function expectOrderedTimes(executions: readonly JobExecution[]): void {
  for (const e of executions) {
    expect(e.claimedAt).toBeInstanceOf(Date);
    expect(e.startedAt).toBeInstanceOf(Date);
    expect(e.endedAt).toBeInstanceOf(Date);
    expect(e.claimedAt!.getTime()).toBeLessThanOrEqual(e.startedAt!.getTime());
    expect(e.startedAt!.getTime()).toBeLessThanOrEqual(e.endedAt!.getTime());
  }
}

/** The attempts' spans the exporter recorded for job `id`, by attempt. */
function attemptSpans(id: string) {
  return exporter
    .getFinishedSpans()
    .filter((s) => s.attributes['messaging.message.id'] === id)
    .sort((a, b) => Number(a.attributes['job.attempt']) - Number(b.attributes['job.attempt']))
    .map((s) => ({ attempt: Number(s.attributes['job.attempt']), ...s.spanContext() }));
}

afterAll(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
  await dropSchemas(schema);
  contextManager.disable();
  await provider.shutdown();
});

describe("each attempt's trace, span and times (tracing: true)", () => {
  let jobs: JobQueue;
  beforeAll(async () => {
    const app = await boot(true);
    jobs = app.get(JobQueue);
    // A concurrency limit makes the worker write its successes with the claim that refills the slots.
    await app.get(JobQueues).setLimits('traces-limited', { concurrency: 1 });
  });

  it.each([
    ['a job that succeeds at once', AttemptTraced, { failures: 0 }, 1],
    ['a job that fails, then succeeds', AttemptTraced, { failures: 1 }, 2],
    [
      'a job that fails twice, then succeeds in ctx.transaction()',
      AttemptTraced,
      { failures: 2, transactional: true },
      3,
    ],
    ['a job of a limited queue that fails, then succeeds', LimitedTraced, { failures: 1 }, 2],
  ] as const)('%s: get() shows the ids of the spans the SDK recorded', async (_what, type, payload, attempts) => {
    const { id } = await jobs.enqueue(type as typeof AttemptTraced, payload);
    const info = await succeeded(jobs, id);
    await waitFor('its attempts to end their spans', () => attemptSpans(id).length >= attempts);
    const spans = attemptSpans(id);
    expect(spans).toHaveLength(attempts);
    expect(info.executions.map((e) => ({ attempt: e.attempt, traceId: e.traceId, spanId: e.spanId }))).toEqual(
      spans.map((s) => ({ attempt: s.attempt, traceId: s.traceId, spanId: s.spanId })),
    );
    expect(info.executions.map((e) => e.state)).toEqual([...Array<string>(attempts - 1).fill('failed'), 'succeeded']);
    expect(info.executions.at(-1)!.endedAt).toEqual(info.completedAt);
    expectOrderedTimes(info.executions);
  });

  it("the dashboard's job JSON links each attempt to its trace", async () => {
    const { id } = await jobs.enqueue(AttemptTraced, { failures: 1 });
    await succeeded(jobs, id);
    await waitFor('its attempts to end their spans', () => attemptSpans(id).length >= 2);
    const { body } = await request(apps[0]!.getHttpServer()).get(`/jobs-dashboard/api/jobs/${id}`).expect(200);
    expect(body.executions).toMatchObject(
      attemptSpans(id).map((s) => ({
        attempt: s.attempt,
        traceId: s.traceId,
        spanId: s.spanId,
        traceUrl: `https://tempo.example/trace/${s.traceId}`,
      })),
    );
  });
});

describe('the span of an attempt that writes no outcome (tracing: true)', () => {
  // Its own worker, serving only Held's queue. Its lease is long: renewals and rescues come when a test calls them.
  let app: INestApplication;
  let jobs: JobQueue;
  beforeAll(async () => {
    app = await startJobsApp(
      schema,
      { tracing: true, worker: { pollInterval: 100, lease: 60_000, shutdownGrace: 100, queues: ['traces-held'] } },
      { providers: [Held] },
    );
    apps.push(app);
    jobs = app.get(JobQueue);
  });

  /**
   * A Held job whose handler began. With `paused`, its queue is paused then, so the worker does not
   * claim the job again once rescued: the run it holds stays the one whose lease it loses.
   */
  async function begins(paused = false): Promise<string> {
    const { id } = await jobs.enqueue(Held, {});
    await waitFor(`job ${id}'s handler to begin`, () => begun.has(id));
    if (paused) await app.get(JobQueues).pause('traces-held');
    return id;
  }

  // From the first instance, which outlives this one (the last test closes it).
  afterEach(() => apps[0]!.get(JobQueues).resume('traces-held'));

  async function jobRow(id: string) {
    const [row] = await sql<{ trace_id: string | null }>(`SELECT trace_id FROM "${schema}".job WHERE id = $1`, [id]);
    return row!;
  }

  /** The first attempt's history row, once its span ended, with the ids the SDK recorded for it. */
  async function firstAttempt(id: string) {
    await waitFor('its first attempt to end its span', () => attemptSpans(id).some((s) => s.attempt === 1));
    const span = attemptSpans(id).find((s) => s.attempt === 1)!;
    const execution = (await jobs.get(id))!.executions.find((e) => e.attempt === 1)!;
    return { span: { traceId: span.traceId, spanId: span.spanId }, execution };
  }

  it('a crashed worker: the rescue records the span its last renewal wrote on the job row', async () => {
    const id = await begins(true);
    await app.get(LeaseKeeper).renew();
    expect((await jobRow(id)).trace_id).toMatch(/^[0-9a-f]{32}$/);
    // As if the worker had died: another worker id, the lease run out. This worker never learns the row is its own.
    await sql(
      `UPDATE "${schema}".job SET worker_id = 'crashed-worker', lease_expires_at = now() - interval '1 second' WHERE id = $1`,
      [id],
    );
    await app.get(JobRescuer).rescue();
    // This worker's renewal stops its run, which ends the span.
    await app.get(LeaseKeeper).renew();
    const { span, execution } = await firstAttempt(id);
    expect(execution).toMatchObject({ state: 'interrupted', workerId: 'crashed-worker', ...span });
    expectOrderedTimes([execution]);
  });

  it('a lost lease before any renewal: the worker adds its span to the row the rescue wrote', async () => {
    const id = await begins(true);
    expect((await jobRow(id)).trace_id).toBeNull();
    await sql(`UPDATE "${schema}".job SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
    await app.get(JobRescuer).rescue();
    const rescued = (await jobs.get(id))!.executions.find((e) => e.attempt === 1)!;
    expect([rescued.state, rescued.traceId, rescued.spanId]).toEqual(['interrupted', null, null]);
    await app.get(LeaseKeeper).renew();
    await waitFor("the worker to record the lost attempt's span", async () => {
      const e = (await jobs.get(id))!.executions.find((x) => x.attempt === 1)!;
      return e.traceId !== null;
    });
    const { span, execution } = await firstAttempt(id);
    expect(execution).toMatchObject({ state: 'interrupted', ...span });
  });

  it('a shutdown past its grace: the hand-back records the span, read from another instance', async () => {
    const id = await begins();
    await app.close();
    jobs = apps[0]!.get(JobQueue);
    const { span, execution } = await firstAttempt(id);
    expect(execution).toMatchObject({ state: 'interrupted', ...span });
    expect(execution.error?.name).toBe('WorkerShutdownError');
    expectOrderedTimes([execution]);
  });
});

describe("each attempt's times without tracing (the default)", () => {
  it('a failed-then-succeeded job shows no trace or span ids, and its claim, start and end in order', async () => {
    for (const app of apps.splice(0)) await app.close();
    const jobs = (await boot(false)).get(JobQueue);
    const { id } = await jobs.enqueue(AttemptTraced, { failures: 1 });
    const info = await succeeded(jobs, id);
    expect(info.executions.map((e) => [e.state, e.traceId, e.spanId])).toEqual([
      ['failed', null, null],
      ['succeeded', null, null],
    ]);
    expectOrderedTimes(info.executions);
    expect(attemptSpans(id)).toEqual([]);
    const { body } = await request(apps[0]!.getHttpServer()).get(`/jobs-dashboard/api/jobs/${id}`).expect(200);
    expect(body.executions.map((e: { traceUrl: unknown }) => e.traceUrl)).toEqual([null, null]);
  });
});
