import { AsyncLocalStorage } from 'node:async_hooks';
import { Inject, Injectable, Scope, type INestApplication } from '@nestjs/common';
import { REQUEST } from '@nestjs/core';
import {
  Job,
  JobQueue,
  JobsError,
  JobTimeoutError,
  PermanentJobError,
  type JobCallHandler,
  type JobContext,
  type JobHandler,
  type JobInterceptor,
  type JobInterceptorContext,
} from 'nestjs-durable-jobs';
import { isUuid } from '../../../lib/model/uuid.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';

// JobQueue.runInline(): a registered handler run now in the caller's process, as one attempt with
// no retry, no queue and no row; its result or its error goes back to the caller as it is.

const tenants = new AsyncLocalStorage<{ tenant: string }>();

/** What the handlers saw, for the assertions. */
@Injectable()
class Seen {
  readonly contexts: JobContext[] = [];
  readonly payloads: unknown[] = [];
  runs = 0;
  failures = 0;
  readonly calls: string[] = [];
}

/** Opens the tenant's context from the payload around the handler, as an app's interceptor would. */
@Injectable()
class TenantScope implements JobInterceptor {
  constructor(private readonly seen: Seen) {}
  intercept(ctx: JobInterceptorContext, next: JobCallHandler): Promise<unknown> {
    this.seen.calls.push(`scope>${ctx.name}#${ctx.attempt}`);
    const { tenant } = ctx.payload as { tenant?: string };
    return tenants.run({ tenant: tenant ?? 'none' }, next);
  }
}

@Job('ri-quote', { queue: 'quotes', maxAttempts: 5, interceptors: [TenantScope] })
class Quote implements JobHandler<
  { tenant: string; items: Array<{ cents: number }> },
  { total: number; tenant: string }
> {
  constructor(private readonly seen: Seen) {}
  async run(payload: { tenant: string; items: Array<{ cents: number }> }, ctx: JobContext) {
    this.seen.runs++;
    this.seen.contexts.push(ctx);
    this.seen.payloads.push(payload);
    payload.items.push({ cents: 1_000_000 }); // the caller's object must not see this
    await ctx.progress(0.5, 'half way');
    await new Promise((resolve) => setTimeout(resolve, 1));
    return { total: payload.items.reduce((sum, i) => sum + i.cents, 0), tenant: tenants.getStore()!.tenant };
  }
}

type Failure = 'error' | 'permanent' | 'string';

@Job('ri-fails', { maxAttempts: 5 })
class Fails implements JobHandler<{ how: Failure }> {
  constructor(private readonly seen: Seen) {}
  run({ how }: { how: Failure }): void {
    this.seen.runs++;
    if (how === 'permanent') throw new PermanentJobError('no such customer');
    if (how === 'string') throw 'a bare string';
    throw new Error('the partner API said 500');
  }
  onFailure(): void {
    this.seen.failures++;
  }
}

type Call = 'step' | 'sleep' | 'sleepUntil' | 'transaction' | 'continueWith' | 'addToBatch' | 'snooze' | 'progress';

/** Makes the one call of ctx the payload names, and says what came of it. */
@Job('ri-calls')
class Calls implements JobHandler<{ call: Call }> {
  async run({ call }: { call: Call }, ctx: JobContext): Promise<string> {
    if (call === 'step') await ctx.step('charge', () => 1);
    if (call === 'sleep') await ctx.sleep('cool-off', 1_000);
    if (call === 'sleepUntil') await ctx.sleepUntil('cool-off', new Date(Date.now() + 1_000));
    if (call === 'transaction') await ctx.transaction(async () => 1);
    if (call === 'continueWith') ctx.continueWith('ri-quote', { tenant: 't', items: [] });
    if (call === 'addToBatch') await ctx.addToBatch('ri-quote', { tenant: 't', items: [] });
    if (call === 'snooze') ctx.snooze(1_000, 'not now');
    if (call === 'progress') await ctx.progress(2);
    return `${call} returned`;
  }
}

/** Waits for its signal: only the job type's timeout ends it. */
@Job('ri-slow', { timeout: 50 })
class Slow implements JobHandler<object> {
  constructor(private readonly seen: Seen) {}
  async run(_: object, ctx: JobContext): Promise<string> {
    this.seen.contexts.push(ctx);
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
    return 'aborted';
  }
}

/** Request-scoped: built per run, in the run's DI sub-tree, where REQUEST is { job, payload }. */
@Injectable({ scope: Scope.REQUEST })
class RunBag {
  constructor(@Inject(REQUEST) readonly request: { job: JobContext; payload: unknown }) {}
}

@Job('ri-scoped')
class Scoped implements JobHandler<{ n: number }> {
  constructor(private readonly bag: RunBag) {}
  run(): { jobId: string; payload: unknown } {
    return { jobId: this.bag.request.job.jobId, payload: this.bag.request.payload };
  }
}

/** Not registered in any module. */
@Job('ri-unregistered')
class Unregistered implements JobHandler<object> {
  run(): void {}
}

class NotAJob {
  run(): void {}
}

const PROVIDERS = [Seen, TenantScope, Quote, Fails, Calls, Slow, RunBag, Scoped];
const schema = uniqueSchema('inline');
const apps: INestApplication[] = [];
let app: INestApplication;
let jobs: JobQueue;
let seen: Seen;

const rows = async (): Promise<number> =>
  (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".job`))[0]!.n;

beforeAll(async () => {
  // A worker runs, as on most instances: the inline runs must not go through it.
  app = await startJobsApp(
    schema,
    { worker: { pollInterval: 50 }, externalJobs: { 'ri-elsewhere': { queue: 'billing' } }, maxPayloadBytes: 1_000 },
    { providers: PROVIDERS },
  );
  apps.push(app);
  jobs = app.get(JobQueue);
  seen = app.get(Seen);
});

beforeEach(() => {
  seen.contexts.length = 0;
  seen.payloads.length = 0;
  seen.calls.length = 0;
  seen.runs = 0;
  seen.failures = 0;
});

afterAll(async () => {
  for (const a of apps) await a.close().catch(() => undefined);
  await dropSchemas(schema);
});

describe('runInline() runs the handler now', () => {
  it('resolves with its result, inside its interceptors, on a copy of the payload, writing no row', async () => {
    const payload = { tenant: 'acme', items: [{ cents: 250 }, { cents: 100 }] };
    const result: { total: number; tenant: string } = await jobs.runInline(Quote, payload);
    expect(result).toEqual({ total: 1_000_350, tenant: 'acme' });
    // The handler got the payload's JSON round trip, as from a worker: its change stayed its own.
    expect(payload.items).toEqual([{ cents: 250 }, { cents: 100 }]);
    expect(seen.payloads[0]).not.toBe(payload);
    expect(seen.calls).toEqual(['scope>ri-quote#1']);
    expect(seen.runs).toBe(1);
    const ctx = seen.contexts[0]!;
    expect(ctx).toMatchObject({
      name: 'ri-quote',
      queue: 'quotes',
      attempt: 1,
      maxAttempts: 1,
      batchId: null,
      parentIds: [],
    });
    expect(isUuid(ctx.jobId)).toBe(true);
    expect(ctx.stepKey('charge')).toBe(`${ctx.jobId}:charge`);
    expect(ctx.signal.aborted).toBe(false);
    // No job row, no history: the id is the run's own, stored nowhere.
    expect(await jobs.get(ctx.jobId)).toBeNull();
    expect(await rows()).toBe(0);
    // By name too, each run with an id of its own.
    await expect(jobs.runInline('ri-quote', { tenant: 'b', items: [] })).resolves.toEqual({
      total: 1_000_000,
      tenant: 'b',
    });
    expect(seen.contexts[1]!.jobId).not.toBe(ctx.jobId);
  });

  it('rejects with the error the handler threw, once: no retry, no onFailure, no row', async () => {
    let thrown: unknown;
    await jobs.runInline(Fails, { how: 'error' }).catch((error: unknown) => (thrown = error));
    expect(thrown).toBeInstanceOf(Error);
    expect(thrown).not.toBeInstanceOf(JobsError);
    expect((thrown as Error).message).toBe('the partner API said 500');
    await expect(jobs.runInline(Fails, { how: 'permanent' })).rejects.toThrow(
      new PermanentJobError('no such customer'),
    );
    await expect(jobs.runInline('ri-fails', { how: 'string' })).rejects.toBe('a bare string');
    expect(seen.runs).toBe(3);
    expect(seen.failures).toBe(0);
    expect(await rows()).toBe(0);
  });

  it('gives a request-scoped handler its own sub-tree, REQUEST being { job, payload }', async () => {
    const first = await jobs.runInline(Scoped, { n: 1 });
    const second = await jobs.runInline(Scoped, { n: 2 });
    expect(first.payload).toEqual({ n: 1 });
    expect(second.payload).toEqual({ n: 2 });
    expect(isUuid(first.jobId)).toBe(true);
    expect(second.jobId).not.toBe(first.jobId);
  });

  it("aborts ctx.signal and rejects with a JobTimeoutError at the job type's timeout", async () => {
    await expect(jobs.runInline(Slow, {})).rejects.toThrow(new JobTimeoutError('ri-slow', 50));
    const { signal } = seen.contexts[0]!;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(JobTimeoutError);
  });

  it('runs on an instance without a worker too', async () => {
    const noWorker = await startJobsApp(schema, { worker: { enabled: false } }, { providers: PROVIDERS });
    apps.push(noWorker);
    const result = await noWorker.get(JobQueue).runInline(Quote, { tenant: 'solo', items: [{ cents: 1 }] });
    expect(result).toEqual({ total: 1_000_001, tenant: 'solo' });
    expect(noWorker.get(Seen).calls).toEqual(['scope>ri-quote#1']);
  });
});

describe('runInline() refuses, with a JobsError naming the call, before running anything', () => {
  it('an unknown job, a class that is no job or not registered, a job another service runs', async () => {
    await expect(jobs.runInline('ri-nope', {})).rejects.toThrow(
      /^runInline\('ri-nope'\): Unknown job "ri-nope": no @Job\('ri-nope'\) handler is registered \(known: .*\)\. Potential fix: /,
    );
    await expect(jobs.runInline(NotAJob as never, {})).rejects.toThrow(
      new JobsError(
        "runInline(NotAJob): NotAJob is not a job handler. Potential fix: decorate it with @Job('name') and register it as a provider.",
      ),
    );
    await expect(jobs.runInline(Unregistered, {})).rejects.toThrow(
      /^runInline\(Unregistered\): Job "ri-unregistered" \(Unregistered\) is not registered in this application\. Potential fix: /,
    );
    await expect(jobs.runInline('ri-elsewhere', {})).rejects.toThrow(
      new JobsError(
        `runInline('ri-elsewhere'): "ri-elsewhere" is an external job: another service runs it, and this app has no handler for it. ` +
          `Potential fix: enqueue it (JobQueue.enqueue('ri-elsewhere', payload)) for that service's workers.`,
      ),
    );
    await expect(jobs.runInline(42 as never, {})).rejects.toThrow(
      new JobsError(
        'runInline(): the job must be a @Job class or a job name, got 42. Potential fix: runInline(SendReceipt, payload).',
      ),
    );
    await expect(jobs.runInline('', {})).rejects.toThrow(
      /^runInline\(''\): the job must be a @Job class or a job name/,
    );
  });

  it('a payload enqueue would refuse: not JSON, or over maxPayloadBytes', async () => {
    const at = new Date();
    await expect(jobs.runInline(Quote, { tenant: 'a', items: [{ cents: at as never }] })).rejects.toThrow(
      /^runInline\(Quote\): Job "ri-quote": the payload is not JSON-serialisable at \$\.items\[0\]\.cents \(/,
    );
    await expect(jobs.runInline(Quote, { tenant: 'x'.repeat(2_000), items: [] })).rejects.toThrow(
      /^runInline\(Quote\): Job "ri-quote": the payload is \d+ bytes, over maxPayloadBytes \(1000\)\./,
    );
    expect(seen.runs).toBe(0);
  });
});

describe("runInline()'s context", () => {
  const refused: Array<[Call, string]> = [
    [
      'step',
      "ctx.step() in runInline('ri-calls'): a step is recorded so that a later attempt skips it, and an inline run records nothing and has no later attempt.",
    ],
    [
      'sleep',
      "ctx.sleep() in runInline('ri-calls'): a durable sleep ends the attempt and wakes the job from its row later, and an inline run has no row.",
    ],
    [
      'sleepUntil',
      "ctx.sleepUntil() in runInline('ri-calls'): a durable sleep ends the attempt and wakes the job from its row later, and an inline run has no row.",
    ],
    [
      'transaction',
      "ctx.transaction() in runInline('ri-calls'): it writes the job's success in the handler's transaction, and an inline run has no job row to write it to.",
    ],
    [
      'continueWith',
      "ctx.continueWith() in runInline('ri-calls'): a continuation is written with the job's outcome, and an inline run writes none.",
    ],
    ['addToBatch', "ctx.addToBatch() in runInline('ri-calls'): an inline run belongs to no batch."],
    [
      'snooze',
      "ctx.snooze() in runInline('ri-calls'): a snooze puts the job back in its queue for a later attempt, and an inline run has neither.",
    ],
    ['progress', "ctx.progress() in runInline('ri-calls'): progress is a fraction from 0 to 1, got 2."],
  ];

  it.each(refused)('refuses ctx.%s() with a JobsError saying why and the fix', async (call, message) => {
    const error = await jobs.runInline('ri-calls', { call }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobsError);
    expect((error as Error).message.startsWith(`${message} Potential fix: `)).toBe(true);
    expect(await rows()).toBe(0);
  });
});
