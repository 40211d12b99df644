import { AsyncLocalStorage } from 'node:async_hooks';
import { Inject, Injectable, Scope, type INestApplication } from '@nestjs/common';
import { REQUEST } from '@nestjs/core';
import {
  Job,
  JobQueue,
  JobsError,
  type JobCallHandler,
  type JobContext,
  type JobHandler,
  type JobInfo,
  type JobInterceptor,
  type JobInterceptorContext,
  type JobsModuleOptions,
} from 'nestjs-durable-jobs';
import { databaseUrl, dropSchemas, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { KitLog } from '../../support/kit.jobs.js';
import { startTestingApp, type TestingApp } from '../../support/testing-app.js';
import { waitFor } from '../../support/wait.js';

// Job interceptors: providers around each attempt, the module's outside the job's own, inside the
// attempt's context (an AsyncLocalStorage an interceptor opens is the handler's), ending the
// attempt as the handler would (snooze, throw), and refused at boot or on use when misused.

const tenants = new AsyncLocalStorage<{ tenant: string }>();

@Injectable()
class Trace {
  readonly calls: string[] = [];
  readonly snoozed = new Set<string>();
  readonly failures: string[] = [];
}

/** Module-level: outermost. */
@Injectable()
class Outer implements JobInterceptor {
  constructor(private readonly trace: Trace) {}
  async intercept(ctx: JobContext, next: JobCallHandler): Promise<unknown> {
    this.trace.calls.push(`outer>${ctx.name}#${ctx.attempt}`);
    try {
      return await next();
    } finally {
      this.trace.calls.push(`outer<${ctx.name}`);
    }
  }
}

/** Opens the tenant's context from the payload, around the rest of the attempt. */
@Injectable()
class TenantScope implements JobInterceptor {
  intercept(ctx: JobInterceptorContext, next: JobCallHandler): Promise<unknown> {
    const { tenant } = ctx.payload as { tenant: string };
    return tenants.run({ tenant }, next);
  }
}

/** Inside TenantScope: what it resolves with is the job's result. */
@Injectable()
class Wrap implements JobInterceptor {
  constructor(private readonly trace: Trace) {}
  async intercept(ctx: JobContext, next: JobCallHandler): Promise<unknown> {
    this.trace.calls.push(`wrap>${tenants.getStore()?.tenant}`);
    return { wrapped: await next() };
  }
}

/** A provider of the app that reads the tenant the way app code does: from the context, not a parameter. */
@Injectable()
class Tenancy {
  current(): string | null {
    return tenants.getStore()?.tenant ?? null;
  }
}

@Job('ic-tenant', { interceptors: [TenantScope, Wrap] })
class TenantJob implements JobHandler<{ tenant: string }> {
  constructor(
    private readonly tenancy: Tenancy,
    private readonly trace: Trace,
  ) {}
  async run(): Promise<{ tenant: string | null }> {
    this.trace.calls.push(`run:${this.tenancy.current()}`);
    // Across an await and a macrotask: the context is the attempt's, not a synchronous leftover.
    await new Promise((resolve) => setTimeout(resolve, 5));
    return { tenant: this.tenancy.current() };
  }
}

type GateMode = 'snooze' | 'throw' | 'skip' | 'twice' | 'no-wait';

/** Ends the attempt in the way the payload asks. */
@Injectable()
class Gate implements JobInterceptor {
  constructor(private readonly trace: Trace) {}
  async intercept(ctx: JobInterceptorContext, next: JobCallHandler): Promise<unknown> {
    const { mode } = ctx.payload as { mode: GateMode };
    if (mode === 'snooze' && !this.trace.snoozed.has(ctx.jobId)) {
      this.trace.snoozed.add(ctx.jobId);
      ctx.snooze(10, 'the partner said 429');
    }
    if (mode === 'throw') throw new Error('the gate is closed');
    if (mode === 'skip') return 'nothing ran';
    if (mode === 'twice') {
      await next();
      return next();
    }
    if (mode === 'no-wait') {
      void next();
      return 'early';
    }
    return next();
  }
}

@Job('ic-gated', { maxAttempts: 2, backoff: { type: 'fixed', delay: 0 }, interceptors: [Gate] })
class GatedJob implements JobHandler<{ mode: GateMode | 'pass' }> {
  constructor(private readonly trace: Trace) {}
  async run(_: unknown, ctx: JobContext): Promise<string> {
    this.trace.calls.push(`gated:${ctx.jobId}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    return 'ran';
  }
  onFailure(_: unknown, error: Error, ctx: JobContext): void {
    this.trace.failures.push(`${ctx.jobId}:${error.name}`);
  }
}

/** One per attempt: what a scoped interceptor leaves there, the attempt's scoped handler finds. */
@Injectable({ scope: Scope.REQUEST })
class AttemptBag {
  note = '';
}

/** Request-scoped: built per attempt, in the attempt's DI sub-tree, where REQUEST is { job, payload }. */
@Injectable({ scope: Scope.REQUEST })
class ScopedTag implements JobInterceptor {
  constructor(
    @Inject(REQUEST) private readonly request: { job: JobContext },
    private readonly bag: AttemptBag,
  ) {}
  async intercept(ctx: JobContext, next: JobCallHandler): Promise<unknown> {
    this.bag.note = `tagged ${ctx.jobId}`;
    return { requestJob: this.request.job.jobId, result: await next() };
  }
}

@Job('ic-scoped', { interceptors: [ScopedTag] })
class ScopedJob implements JobHandler<object> {
  constructor(private readonly bag: AttemptBag) {}
  run(): string {
    return this.bag.note;
  }
}

/** Never provided by any module. */
@Injectable()
class Unprovided implements JobInterceptor {
  intercept(_: JobContext, next: JobCallHandler): Promise<unknown> {
    return next();
  }
}

@Job('ic-unprovided', { interceptors: [Unprovided] })
class UnprovidedJob implements JobHandler<object> {
  run(): void {}
}

const PROVIDERS = [
  Trace,
  Outer,
  TenantScope,
  Wrap,
  Tenancy,
  TenantJob,
  Gate,
  GatedJob,
  AttemptBag,
  ScopedTag,
  ScopedJob,
];
const schemas: string[] = [];
const apps: INestApplication[] = [];

async function boot(options: Partial<JobsModuleOptions> = {}, providers: unknown[] = PROVIDERS) {
  const schema = uniqueSchema('icept');
  schemas.push(schema);
  const app = await startJobsApp(
    schema,
    { worker: { concurrency: 20, pollInterval: 50 }, interceptors: [Outer], ...options },
    { providers: providers as never[] },
  );
  apps.push(app);
  return app;
}

afterAll(async () => {
  for (const app of apps) await app.close().catch(() => undefined);
  await dropSchemas(...schemas);
});

const settled = (app: INestApplication, id: string) =>
  waitFor(`job ${id} to settle`, async () => {
    const job = await app.get(JobQueue).get(id);
    return job && ['succeeded', 'failed'].includes(job.state) ? job : null;
  });

describe('interceptors on a worker', () => {
  let app: INestApplication;
  beforeAll(async () => {
    app = await boot();
  });

  it("run in order around the attempt, the module's outside the job's, and the outermost's value is the result", async () => {
    const trace = app.get(Trace);
    trace.calls.length = 0;
    const { id } = await app.get(JobQueue).enqueue(TenantJob, { tenant: 't-1' });
    expect((await settled(app, id)).result).toEqual({ wrapped: { tenant: 't-1' } });
    expect(trace.calls).toEqual(['outer>ic-tenant#1', 'wrap>t-1', 'run:t-1', 'outer<ic-tenant']);
  });

  it("give each of many concurrent attempts its own AsyncLocalStorage context, seen by the handler's providers", async () => {
    const jobs = app.get(JobQueue);
    const ids = await jobs.enqueueMany(
      Array.from({ length: 30 }, (_, i) => ({ job: TenantJob, payload: { tenant: `tenant-${i}` } })),
    );
    const results = await Promise.all(ids.map(({ id }) => settled(app, id)));
    expect(results.map((j) => j.result)).toEqual(
      Array.from({ length: 30 }, (_, i) => ({ wrapped: { tenant: `tenant-${i}` } })),
    );
  });

  it('let an interceptor snooze (no attempt spent) or throw (the attempt fails with retries, then onFailure)', async () => {
    const jobs = app.get(JobQueue);
    const trace = app.get(Trace);
    const snoozed = await jobs.enqueue(GatedJob, { mode: 'snooze' });
    const thrown = await jobs.enqueue(GatedJob, { mode: 'throw' });
    const s = await settled(app, snoozed.id);
    // The snooze gave its attempt back: both attempts were still left for failures.
    expect(s).toMatchObject({ state: 'succeeded', attempt: 2, maxAttempts: 3, result: 'ran' });
    expect(s.executions.map((e) => [e.state, e.error?.message])).toEqual([
      ['snoozed', 'the partner said 429'],
      ['succeeded', undefined],
    ]);
    const t = await settled(app, thrown.id);
    expect(t).toMatchObject({ state: 'failed', attempt: 2, lastError: { message: 'the gate is closed' } });
    expect(t.executions.map((e) => e.state)).toEqual(['failed', 'failed']);
    expect(trace.calls).not.toContain(`gated:${thrown.id}`);
    await waitFor('the onFailure hook', () => trace.failures.includes(`${thrown.id}:Error`));
  });

  it('fail the attempt with a JobsError naming the interceptor when it returns without running the attempt', async () => {
    const jobs = app.get(JobQueue);
    const trace = app.get(Trace);
    const cases: Array<[GateMode, RegExp]> = [
      ['skip', /^Job "ic-gated" \(.*\): its interceptor Gate returned without calling next\(\), snoozing or throwing/],
      ['twice', /its interceptor Gate called next\(\) twice; the attempt runs once/],
      [
        'no-wait',
        /its interceptor Gate returned before the attempt it wraps had finished\. Potential fix: await next\(\)/,
      ],
    ];
    const ids: Partial<Record<GateMode, string>> = {};
    for (const [mode, message] of cases) {
      const { id } = await jobs.enqueue(GatedJob, { mode });
      ids[mode] = id;
      const job: JobInfo = await settled(app, id);
      expect(job).toMatchObject({ state: 'failed', attempt: 2, lastError: { name: 'JobsError' } });
      expect(job.lastError!.message).toMatch(message);
      expect(job.executions.map((e) => e.error?.message)).toEqual([
        expect.stringMatching(message),
        expect.stringMatching(message),
      ]);
    }
    // Skipped: the handler never ran; twice: it ran once per attempt, the second next() refused.
    const runs = (id: string | undefined) => trace.calls.filter((c) => c === `gated:${id}`).length;
    expect(runs(ids.skip)).toBe(0);
    expect(runs(ids.twice)).toBe(2);
  });

  it("resolve a request-scoped interceptor per attempt, in the DI sub-tree of that attempt's scoped handler", async () => {
    const jobs = app.get(JobQueue);
    const [one, two] = await Promise.all([jobs.enqueue(ScopedJob, {}), jobs.enqueue(ScopedJob, {})]);
    expect((await settled(app, one.id)).result).toEqual({ requestJob: one.id, result: `tagged ${one.id}` });
    expect((await settled(app, two.id)).result).toEqual({ requestJob: two.id, result: `tagged ${two.id}` });
  });
});

describe('interceptors refused', () => {
  it('at boot: a class no module provides, naming the job and the class (or JobsModule)', async () => {
    await expect(boot({}, [...PROVIDERS, UnprovidedJob])).rejects.toThrow(
      new JobsError(
        `@Job('ic-unprovided') on UnprovidedJob names the interceptor Unprovided, but no module provides it, so nothing can build it. ` +
          `Potential fix: add Unprovided to the "providers" of a module (the one that provides the job's handler will do).`,
      ),
    );
    await expect(boot({ interceptors: [Outer, Unprovided] })).rejects.toThrow(
      /^JobsModule's "interceptors" names the interceptor Unprovided, but no module provides it/,
    );
    class NoIntercept {}
    await expect(boot({ interceptors: [NoIntercept as never] })).rejects.toThrow(
      /^JobsModule: "interceptors" entry 0 \(NoIntercept\) has no intercept\(ctx, next\) method\. Potential fix: implement JobInterceptor/,
    );
    await expect(boot({ interceptors: Outer as never })).rejects.toThrow(
      /^JobsModule: "interceptors" must be a list of classes, got /,
    );
  });

  it('on @Job: an entry that is no class, or a class without intercept()', () => {
    expect(() => Job('ic-bad', { interceptors: [{} as never] })(class Bad {})).toThrow(
      /^@Job\('ic-bad'\) on class Bad: "interceptors" entry 0 must be a class, got /,
    );
    expect(() => Job('ic-bad', { interceptors: [class Plain {} as never] })(class Bad {})).toThrow(
      /^@Job\('ic-bad'\) on class Bad: "interceptors" entry 0 \(Plain\) has no intercept\(ctx, next\) method/,
    );
  });

  it('in externalJobs: they run where the job runs, and this app does not run it', async () => {
    await expect(boot({ externalJobs: { 'ic-elsewhere': { queue: 'q', interceptors: [Outer] } } })).rejects.toThrow(
      /^JobsModule's "externalJobs" entry 'ic-elsewhere': "interceptors" run around attempts/,
    );
  });
});

describe('the testing kit runs interceptors as the worker does', () => {
  const kits: TestingApp[] = [];
  afterAll(async () => {
    for (const k of kits) await k.app.close();
  });
  const kit = async (mode: 'manual' | 'inline') => {
    const k = await startTestingApp(
      { connection: databaseUrl(), mode, interceptors: [Outer], unregisteredJobs: 'ignore' },
      { providers: [...PROVIDERS, KitLog] },
    );
    kits.push(k);
    return k;
  };

  it("in mode 'manual': drain() runs them, failNext's stand-in handler inside them, and a snooze is a snooze", async () => {
    const { app, jobs, tester } = await kit('manual');
    const trace = app.get(Trace);
    const { id } = await jobs.enqueue(TenantJob, { tenant: 'kit' });
    const [report] = await tester.drain();
    expect(report).toMatchObject({ id, outcome: 'succeeded', result: { wrapped: { tenant: 'kit' } } });
    expect(trace.calls).toEqual(['outer>ic-tenant#1', 'wrap>kit', 'run:kit', 'outer<ic-tenant']);

    trace.calls.length = 0;
    tester.failNext(TenantJob, 'injected');
    await jobs.enqueue(TenantJob, { tenant: 'kit-2' });
    expect((await tester.drain()).map((r) => r.outcome)).toEqual(['retry']);
    await tester.advance(60_000);
    expect((await tester.drain()).map((r) => r.outcome)).toEqual(['succeeded']);
    expect(trace.calls.filter((c) => c.startsWith('wrap>'))).toEqual(['wrap>kit-2', 'wrap>kit-2']);

    const gated = await jobs.enqueue(GatedJob, { mode: 'snooze' });
    const first = await tester.drain();
    expect(first).toMatchObject([{ id: gated.id, outcome: 'snoozed' }]);
    await tester.advance(10);
    expect((await tester.drain()).map((r) => r.outcome)).toEqual(['succeeded']);
  });

  it("in mode 'inline': the attempt runs inside them before enqueue() returns", async () => {
    const { app, jobs } = await kit('inline');
    const trace = app.get(Trace);
    const { id } = await jobs.enqueue(TenantJob, { tenant: 'inline' });
    expect(trace.calls).toEqual(['outer>ic-tenant#1', 'wrap>inline', 'run:inline', 'outer<ic-tenant']);
    expect((await jobs.get(id))?.result).toEqual({ wrapped: { tenant: 'inline' } });
    const thrown = await jobs.enqueue(GatedJob, { mode: 'throw' });
    expect(await jobs.get(thrown.id)).toMatchObject({ state: 'failed', lastError: { message: 'the gate is closed' } });
  });
});
