import { Injectable, type INestApplication } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import {
  Job,
  JobQueue,
  type JobCallHandler,
  type JobContext,
  type JobHandler,
  type JobInterceptor,
  type JobInterceptorContext,
} from 'nestjs-durable-jobs';
import { JobRegistry } from '../../../lib/discovery/job-registry.js';
import {
  Clock,
  JOB_ROW_BUILDER,
  JOB_WRITE_RULES,
  JobEvents,
  JobTracing,
  type AttemptOutcome,
  type ClaimedJob,
  type JobEvent,
  type SpanIds,
  type TraceCarrier,
} from '../../../lib/model/index.js';
import { ENQUEUE_STORAGE } from '../../../lib/storage/jobs/enqueue/enqueue-storage.interface.js';
import { SIGNAL_STORAGE } from '../../../lib/storage/jobs/signals/signal-storage.interface.js';
import { STEP_STORAGE } from '../../../lib/storage/jobs/step-storage.interface.js';
import { WORKFLOW_STORAGE } from '../../../lib/storage/workflows/workflow-storage.interface.js';
import { AttemptRunner } from '../../../lib/worker/attempt-runner.service.js';
import { WORKER_OPTIONS } from '../../../lib/worker/worker-options.js';
import { dropSchemas, uniqueSchema } from '../../support/database.js';
import { workerStorage, type WorkerStorage } from '../../support/job-storage.js';
import { startJobsApp } from '../../support/jobs-app.js';

/**
 * AttemptRunner on the smallest real app: JobsModule on a schema of its own with its worker
 * disabled, a few handlers and interceptors of this file's. The runner is built with its own
 * constructor from the app's collaborators (registry, module ref, clock, storages, options), with
 * a JobEvents and a JobTracing of this file's, so each test reads what it was told. Its jobs are
 * enqueued and claimed through the real statements; the runner only runs them (the worker's
 * outcome write is not its part).
 */
const schema = uniqueSchema('attempt_runner');
const WORKER = 'runner-worker';
const LEASE = 30_000;
let app: INestApplication;
let storage: WorkerStorage;

@Injectable()
class Calls {
  readonly log: string[] = [];
  /** The context each ar-context attempt saw, as read inside its handler. */
  readonly contexts: Array<Omit<JobContext, 'logger' | 'signal'> & { aborted: boolean }> = [];
}

/** The module's interceptor: outside every job's own. */
@Injectable()
class ModuleWide implements JobInterceptor {
  constructor(private readonly calls: Calls) {}
  async intercept(ctx: JobInterceptorContext, next: JobCallHandler): Promise<unknown> {
    this.calls.log.push(`module>${ctx.name}`);
    try {
      return await next();
    } finally {
      this.calls.log.push(`module<${ctx.name}`);
    }
  }
}

/** The job's first interceptor: it sees the payload and wraps the result. */
@Injectable()
class First implements JobInterceptor {
  constructor(private readonly calls: Calls) {}
  async intercept(ctx: JobInterceptorContext, next: JobCallHandler): Promise<unknown> {
    this.calls.log.push(`first>${JSON.stringify(ctx.payload)}`);
    const result = await next();
    this.calls.log.push('first<');
    return { wrapped: result };
  }
}

/** The job's second interceptor: inside the first. */
@Injectable()
class Second implements JobInterceptor {
  constructor(private readonly calls: Calls) {}
  async intercept(_ctx: JobInterceptorContext, next: JobCallHandler): Promise<unknown> {
    this.calls.log.push('second>');
    const result = await next();
    this.calls.log.push('second<');
    return result;
  }
}

@Job('ar-context', { interceptors: [First, Second], maxAttempts: 2 })
class ContextJob implements JobHandler<{ n: number }> {
  constructor(private readonly calls: Calls) {}
  run(payload: { n: number }, ctx: JobContext): { doubled: number } {
    this.calls.log.push('handler');
    const { logger: _logger, signal, ...seen } = ctx;
    this.calls.contexts.push({ ...seen, aborted: signal.aborted });
    return { doubled: payload.n * 2 };
  }
}

/** Waits until its signal aborts, then reports what it aborted with. */
@Job('ar-waits', { timeout: 150, maxAttempts: 2 })
class WaitingJob implements JobHandler {
  constructor(private readonly calls: Calls) {}
  run(_payload: unknown, ctx: JobContext): Promise<void> {
    return new Promise((_, reject) => {
      ctx.signal.addEventListener('abort', () => {
        this.calls.log.push(`aborted:${(ctx.signal.reason as Error).name}`);
        reject(ctx.signal.reason as Error);
      });
    });
  }
}

@Job('ar-fails', { maxAttempts: 1 })
class FailingJob implements JobHandler {
  run(): never {
    throw new TypeError('the handler broke');
  }
}

/** A tracing backend of the test's: every attempt in a span of its own, the order and outcomes recorded. */
class RecordingTracing extends JobTracing {
  readonly enabled = true;
  readonly spans: Array<{ jobId: string; outcome: AttemptOutcome['kind'] | null }> = [];
  private next = 0;
  /** `log`: where the span's start and end are written, beside the attempt's own calls. */
  constructor(private readonly log: string[]) {
    super();
  }
  capture(): TraceCarrier | null {
    return null;
  }
  async trace<T>(
    job: ClaimedJob,
    run: (span: SpanIds | null) => Promise<T>,
    outcomeOf: (result: T) => AttemptOutcome | null,
  ): Promise<T> {
    const n = ++this.next;
    this.log.push(`span>${job.name}`);
    const result = await run({ traceId: n.toString(16).padStart(32, '0'), spanId: n.toString(16).padStart(16, '0') });
    this.log.push(`span<${job.name}`);
    this.spans.push({ jobId: job.id, outcome: outcomeOf(result)?.kind ?? null });
    return result;
  }
}

beforeAll(async () => {
  app = await startJobsApp(
    schema,
    { worker: { enabled: false, lease: LEASE }, interceptors: [ModuleWide] },
    { providers: [Calls, ModuleWide, First, Second, ContextJob, WaitingJob, FailingJob] },
  );
  storage = workerStorage(app);
});

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema);
});

beforeEach(() => {
  const calls = app.get(Calls);
  calls.log.length = 0;
  calls.contexts.length = 0;
});

/** An AttemptRunner as the module builds it, but with the test's events and tracing. */
function runner(tracing: JobTracing = app.get(JobTracing), events = new JobEvents()): AttemptRunner {
  const r = new AttemptRunner(
    app.get(JobRegistry),
    app.get(ModuleRef),
    app.get(Clock),
    app.get(JOB_ROW_BUILDER),
    storage.outcomes,
    app.get(WORKFLOW_STORAGE),
    app.get(STEP_STORAGE),
    app.get(SIGNAL_STORAGE),
    app.get(ENQUEUE_STORAGE),
    app.get(JOB_WRITE_RULES),
    app.get(WORKER_OPTIONS),
    events,
    tracing,
  );
  r.prepare(WORKER);
  return r;
}

let queues = 0;
/** Enqueues one job of `name` in a queue of its own, and claims it for WORKER. */
async function claimedJob(name: string, payload: unknown = {}): Promise<ClaimedJob> {
  const queue = `ar-${++queues}`;
  await app.get(JobQueue).enqueue(name, payload, { queue });
  const [job] = await storage.claims.claim({
    workerId: WORKER,
    queue,
    names: [name],
    limit: 1,
    now: app.get(Clock).now(),
    leaseMs: LEASE,
  });
  return job!;
}

describe('AttemptRunner', () => {
  it('gives the handler its job’s context and a live signal, and the result comes back through the interceptors', async () => {
    const job = await claimedJob('ar-context', { n: 21 });
    const r = runner();
    const result = await r.run(r.create(job));
    expect(result.outcome).toEqual({ kind: 'succeeded', result: { wrapped: { doubled: 42 } } });
    expect(app.get(Calls).contexts).toEqual([
      expect.objectContaining({
        jobId: job.id,
        name: 'ar-context',
        queue: job.queue,
        attempt: 1,
        maxAttempts: 2,
        batchId: null,
        parentIds: [],
        aborted: false,
      }),
    ]);
  });

  it('runs the module’s interceptors outside the job’s own, in the order the job lists them, around the handler', async () => {
    const job = await claimedJob('ar-context', { n: 1 });
    const r = runner();
    await r.run(r.create(job));
    expect(app.get(Calls).log).toEqual([
      'module>ar-context',
      'first>{"n":1}',
      'second>',
      'handler',
      'second<',
      'first<',
      'module<ar-context',
    ]);
  });

  it('notes the handler’s start on the job, untraced, without a span when tracing is off', async () => {
    const job = await claimedJob('ar-context', { n: 1 });
    const r = runner();
    const before = app.get(Clock).now().getTime();
    await r.run(r.create(job));
    expect(job.started).toEqual({ at: expect.any(Date), traceId: null, spanId: null });
    expect(job.started!.at.getTime()).toBeGreaterThanOrEqual(before);
  });

  it('with tracing, runs the whole attempt inside the span, interceptors included, and notes the span’s ids on the job', async () => {
    const { log } = app.get(Calls);
    const tracing = new RecordingTracing(log);
    const job = await claimedJob('ar-context', { n: 2 });
    const r = runner(tracing);
    await r.run(r.create(job));
    expect(log).toEqual([
      'span>ar-context',
      'module>ar-context',
      'first>{"n":2}',
      'second>',
      'handler',
      'second<',
      'first<',
      'module<ar-context',
      'span<ar-context',
    ]);
    expect(tracing.spans).toEqual([{ jobId: job.id, outcome: 'succeeded' }]);
    expect(job.started).toMatchObject({ traceId: '0'.repeat(31) + '1', spanId: '0'.repeat(15) + '1' });
  });

  it('tells the span a failed attempt’s outcome, and the failure is the handler’s error', async () => {
    const tracing = new RecordingTracing([]);
    const job = await claimedJob('ar-fails');
    const r = runner(tracing);
    const result = await r.run(r.create(job));
    expect(result.outcome).toMatchObject({
      kind: 'failed',
      error: { name: 'TypeError', message: 'the handler broke' },
    });
    expect(tracing.spans).toEqual([{ jobId: job.id, outcome: 'failed' }]);
  });

  it('aborts the signal when the job’s timeout passes, and the attempt fails with a JobTimeoutError to retry', async () => {
    const job = await claimedJob('ar-waits');
    const r = runner();
    const began = Date.now();
    const result = await r.run(r.create(job));
    expect(Date.now() - began).toBeGreaterThanOrEqual(140);
    expect(app.get(Calls).log).toContain('aborted:JobTimeoutError');
    expect(result.outcome).toMatchObject({ kind: 'retry', error: { name: 'JobTimeoutError' } });
  });

  it('when the attempt is stopped for a lost lease, returns no outcome and reports it as stalled to listeners', async () => {
    const events = new JobEvents();
    const heard: JobEvent[] = [];
    events.on(['stalled', 'succeeded', 'failed', 'retrying'], (e) => void heard.push(e));
    const job = await claimedJob('ar-waits');
    const r = runner(app.get(JobTracing), events);
    const run = r.create(job);
    const running = r.run(run);
    setTimeout(() => run.stop('lost-lease'), 20);
    const result = await running;
    expect(result.outcome).toBeNull();
    expect(run.signal().aborted).toBe(true);
    expect(heard).toEqual([
      expect.objectContaining({
        event: 'stalled',
        reason: 'lost-lease',
        job: expect.objectContaining({ id: job.id }),
        error: expect.objectContaining({ name: 'LeaseLostError' }),
      }),
    ]);
  });

  it('raises the job event only once the outcome is recorded, and a refused write as a stall', async () => {
    const events = new JobEvents();
    const heard: JobEvent[] = [];
    events.on(['succeeded', 'stalled'], (e) => void heard.push(e));
    const attempts: string[] = [];
    events.onAttemptEnded((e) => void attempts.push(`${e.job.id}:${e.outcome}`));
    const r = runner(app.get(JobTracing), events);

    const written = await claimedJob('ar-context', { n: 3 });
    const result = await r.run(r.create(written));
    // The attempt was timed for listeners; its end is told at once to attempt observers, not yet as a job event.
    expect(result).toMatchObject({ durationMs: expect.any(Number) });
    expect(attempts).toEqual([`${written.id}:succeeded`]);
    expect(heard).toEqual([]);
    r.recorded(written, result.outcome!, (result as { durationMs: number }).durationMs, true);
    expect(heard).toEqual([
      expect.objectContaining({ event: 'succeeded', job: expect.objectContaining({ id: written.id }) }),
    ]);
    expect(heard[0]).toMatchObject({ result: { wrapped: { doubled: 6 } } });

    const refused = await claimedJob('ar-context', { n: 4 });
    const second = await r.run(r.create(refused));
    r.recorded(refused, second.outcome!, (second as { durationMs: number }).durationMs, false);
    r.recorded(refused, second.outcome!, (second as { durationMs: number }).durationMs, null);
    expect(heard.slice(1)).toEqual([
      expect.objectContaining({
        event: 'stalled',
        reason: 'lost-lease',
        error: expect.objectContaining({ name: 'LeaseLostError' }),
      }),
      expect.objectContaining({
        event: 'stalled',
        reason: 'shutdown',
        error: expect.objectContaining({ name: 'WorkerShutdownError' }),
      }),
    ]);
  });

  it('with no listener, neither times the attempt nor raises anything', async () => {
    const events = new JobEvents();
    const job = await claimedJob('ar-context', { n: 5 });
    const r = runner(app.get(JobTracing), events);
    const result = await r.run(r.create(job));
    expect(result.outcome?.kind).toBe('succeeded');
    expect('durationMs' in result).toBe(false);
  });

  it('reports the start to start observers with the wait since the job was due', async () => {
    const events = new JobEvents();
    const starts: Array<{ id: string; waitMs: number | null }> = [];
    events.onAttemptStarted((e) => void starts.push({ id: e.job.id, waitMs: e.waitMs }));
    const job = await claimedJob('ar-context', { n: 6 });
    const r = runner(app.get(JobTracing), events);
    await r.run(r.create(job));
    expect(starts).toEqual([{ id: job.id, waitMs: job.started!.at.getTime() - job.runAt!.getTime() }]);
    expect(starts[0]!.waitMs).toBeGreaterThanOrEqual(0);
  });
});
