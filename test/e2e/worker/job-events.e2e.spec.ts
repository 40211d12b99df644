import { Inject, Injectable, Module, Scope, type INestApplication, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  Job,
  JobEvents,
  JobQueue,
  JobsError,
  JobsModule,
  JOBS_DATA_SOURCE,
  OnJobEvent,
  type JobContext,
  type JobEvent,
  type JobHandler,
  type JobsModuleOptions,
} from 'nestjs-durable-jobs';
import type { DataSource } from 'typeorm';
import { databaseUrl, sql, uniqueSchema } from '../../support/database.js';
import { waitFor } from '../../support/wait.js';
import { appFixture } from '../../support/app-fixture.js';

/** `@OnJobEvent` listeners on providers, fed by a real worker on a real database. */

@Job('ev-double', { queue: 'ev-a' })
class Double implements JobHandler<{ n: number }, { doubled: number }> {
  run({ n }: { n: number }) {
    return { doubled: n * 2 };
  }
}

@Job('ev-flaky', { queue: 'ev-b', maxAttempts: 2, backoff: { type: 'fixed', delay: 0 } })
class Flaky implements JobHandler<{ tag: string }> {
  run({ tag }: { tag: string }): never {
    throw new Error(`flaky ${tag}`);
  }
}

/** Snoozes on its first run, then succeeds. */
@Job('ev-sleepy', { queue: 'ev-a' })
class Sleepy implements JobHandler<null, string> {
  private readonly seen = new Set<string>();
  run(_: null, ctx: JobContext): string {
    if (this.seen.has(ctx.jobId)) return 'awake';
    this.seen.add(ctx.jobId);
    return ctx.snooze(50, 'not yet');
  }
}

/** Runs until its signal aborts: a job to cancel, steal or interrupt while it runs. */
@Injectable()
class Started {
  readonly ids = new Set<string>();
}

@Job('ev-held', { queue: 'ev-a' })
class Held implements JobHandler<null> {
  constructor(private readonly started: Started) {}
  run(_: null, ctx: JobContext): Promise<never> {
    this.started.ids.add(ctx.jobId);
    return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
  }
}

/** The event of an attempt whose job another worker took (job `name` in queue ev-a, no payload). */
function lostLease(id: string, name: string) {
  return {
    event: 'stalled',
    reason: 'lost-lease',
    job: { id, name, queue: 'ev-a', attempt: 1, maxAttempts: 3, payload: null },
    error: { name: 'LeaseLostError', message: expect.stringContaining(id) },
    durationMs: expect.any(Number),
  };
}

/** Where the jobs of this file live (set once the app is up). */
@Injectable()
class Where {
  schema = '';
}

/** Hands its own job to another worker before it returns: the outcome it returns is refused at the write. */
@Job('ev-stolen', { queue: 'ev-a' })
class Stolen implements JobHandler<null, string> {
  constructor(
    @Inject(JOBS_DATA_SOURCE) private readonly dataSource: DataSource,
    private readonly where: Where,
  ) {}
  async run(_: null, ctx: JobContext): Promise<string> {
    await this.dataSource.query(
      `UPDATE "${this.where.schema}".job SET worker_id = 'thief:1', lease_expires_at = now() + interval '1 hour' WHERE id = $1`,
      [ctx.jobId],
    );
    return 'done';
  }
}

@Injectable()
class Heard {
  readonly all: JobEvent[] = [];
  readonly succeededInA: JobEvent<'succeeded'>[] = [];
  readonly doubleInB: JobEvent<'succeeded'>[] = [];
  readonly flaky: JobEvent<'failed' | 'retrying'>[] = [];

  @OnJobEvent(['succeeded', 'failed', 'retrying', 'cancelled', 'snoozed', 'stalled'])
  any(event: JobEvent) {
    this.all.push(event);
  }

  @OnJobEvent('succeeded', { queue: 'ev-a' })
  inA(event: JobEvent<'succeeded'>) {
    this.succeededInA.push(event);
  }

  @OnJobEvent('succeeded', { queue: 'ev-b', name: 'ev-double' })
  doubledInB(event: JobEvent<'succeeded'>) {
    this.doubleInB.push(event);
  }

  @OnJobEvent(['failed', 'retrying'], { name: 'ev-flaky' })
  flakyOnes(event: JobEvent<'failed' | 'retrying'>) {
    this.flaky.push(event);
  }

  /** Each job's state as a listener reads it back from the database, by event and job id. */
  readonly readBack = new Map<string, string | undefined>();
  constructor(private readonly jobs: JobQueue) {}

  @OnJobEvent(['succeeded', 'failed'], { queue: 'ev-b' })
  async readItBack(event: JobEvent) {
    this.readBack.set(`${event.event} ${event.job.id}`, (await this.jobs.get(event.job.id))?.state);
  }

  of(id: string): JobEvent[] {
    return this.all.filter((e) => e.job.id === id);
  }
}

/** Listeners with bugs: the jobs they hear about must end as if they were not there. */
@Injectable()
class Buggy {
  @OnJobEvent('succeeded', { name: 'ev-double' })
  throws(): void {
    throw new Error('listener bug');
  }

  @OnJobEvent(['succeeded', 'failed'])
  async rejects(): Promise<void> {
    await Promise.resolve();
    throw new Error('async listener bug');
  }
}

class Recorder implements LoggerService {
  readonly lines: string[] = [];
  log = (m: unknown) => this.lines.push(String(m));
  warn = (m: unknown) => this.lines.push(String(m));
  error = (m: unknown) => this.lines.push(String(m));
  debug = () => undefined;
  verbose = () => undefined;
}

const { apps, schemas } = appFixture();

async function boot(options: Partial<JobsModuleOptions>, providers: unknown[], logger: LoggerService | false) {
  const schema = uniqueSchema('events');
  schemas.push(schema);
  @Module({ providers: providers as never[] })
  class Own {}
  const ref = await Test.createTestingModule({
    imports: [JobsModule.forRoot({ connection: databaseUrl(), schema, unregisteredJobs: 'ignore', ...options }), Own],
  }).compile();
  const app = ref.createNestApplication({ logger });
  apps.push(app);
  await app.init();
  return { app, schema };
}

describe('@OnJobEvent', () => {
  const logs = new Recorder();
  let app: INestApplication;
  let schema: string;
  let jobs: JobQueue;
  let heard: Heard;

  beforeAll(async () => {
    ({ app, schema } = await boot(
      // A short lease: a stolen job is noticed at the next renewal (every third of it).
      { worker: { pollInterval: 100, lease: 1_500, shutdownGrace: 100 } },
      [Double, Flaky, Sleepy, Held, Started, Heard, Buggy, Stolen, Where],
      logs,
    ));
    jobs = app.get(JobQueue);
    heard = app.get(Heard);
    app.get(Where).schema = schema;
  });

  it('tells listeners of a success, with the job, its result and the duration, filtered by queue and name', async () => {
    const inA = await jobs.enqueue(Double, { n: 2 });
    const inB = await jobs.enqueue(Double, { n: 3 }, { queue: 'ev-b' });
    await waitFor('both successes to be heard', () => heard.of(inA.id).length && heard.of(inB.id).length);

    expect(heard.of(inA.id)).toEqual([
      {
        event: 'succeeded',
        job: { id: inA.id, name: 'ev-double', queue: 'ev-a', attempt: 1, maxAttempts: 3, payload: { n: 2 } },
        result: { doubled: 4 },
        durationMs: expect.any(Number),
      },
    ]);
    expect(heard.of(inB.id)).toMatchObject([{ event: 'succeeded', job: { queue: 'ev-b' }, result: { doubled: 6 } }]);
    expect(heard.succeededInA.map((e) => e.job.id)).toEqual([inA.id]);
    expect(heard.doubleInB.map((e) => e.job.id)).toEqual([inB.id]);
    expect(heard.flaky).toEqual([]);
  });

  it('logs a listener that throws or rejects, and the job ends as it would have', async () => {
    const { id } = await jobs.enqueue(Double, { n: 5 });
    await waitFor('the success to be heard', () => heard.of(id).length);
    await waitFor('both listener failures to be logged', () => {
      const about = logs.lines.filter((l) => l.includes(id));
      return about.some((l) => l.includes('Buggy.throws') && l.includes('listener bug')) &&
        about.some((l) => l.includes('Buggy.rejects') && l.includes('async listener bug'))
        ? about
        : null;
    });
    expect(logs.lines.filter((l) => l.includes(id) && l.includes('Buggy.'))).toEqual([
      `Job event listener Buggy.throws failed on 'succeeded' of job ev-double ${id} attempt 1: listener bug (the job's outcome stands)`,
      `Job event listener Buggy.rejects failed on 'succeeded' of job ev-double ${id} attempt 1: async listener bug (the job's outcome stands)`,
    ]);
    await waitFor('the job to be recorded succeeded', async () => (await jobs.get(id))?.state === 'succeeded');
    const job = await jobs.get(id);
    expect(job).toMatchObject({ state: 'succeeded', attempt: 1, result: { doubled: 10 }, lastError: null });
    expect(job!.executions).toMatchObject([{ attempt: 1, state: 'succeeded', error: null }]);
  });

  it('tells of a retry and then of the failure for good, with the error and when the retry runs', async () => {
    const { id } = await jobs.enqueue(Flaky, { tag: 'x' });
    await waitFor('the failure for good to be heard', () => heard.of(id).some((e) => e.event === 'failed'));
    const events = heard.of(id);
    expect(events).toEqual([
      {
        event: 'retrying',
        job: { id, name: 'ev-flaky', queue: 'ev-b', attempt: 1, maxAttempts: 2, payload: { tag: 'x' } },
        error: expect.objectContaining({ name: 'Error', message: 'flaky x' }),
        retryAt: expect.any(Date),
        durationMs: expect.any(Number),
      },
      {
        event: 'failed',
        job: { id, name: 'ev-flaky', queue: 'ev-b', attempt: 2, maxAttempts: 2, payload: { tag: 'x' } },
        error: expect.objectContaining({ name: 'Error', message: 'flaky x' }),
        durationMs: expect.any(Number),
      },
    ]);
    expect(heard.flaky.filter((e) => e.job.id === id)).toEqual(events);
    await waitFor('the job to be recorded failed', async () => (await jobs.get(id))?.state === 'failed');
  });

  it('tells of a snooze, with when the job runs again and why, and then of its success without an attempt spent', async () => {
    const before = Date.now();
    const { id } = await jobs.enqueue(Sleepy, null);
    await waitFor('the success after the snooze', () => heard.of(id).some((e) => e.event === 'succeeded'));
    const job = { id, name: 'ev-sleepy', queue: 'ev-a', attempt: 1, maxAttempts: 3, payload: null };
    // A snooze gives its attempt back as a shutdown hand-back does: the next run counts one more of
    // both, so the job still has its three tries.
    expect(heard.of(id)).toEqual([
      { event: 'snoozed', job, until: expect.any(Date), reason: 'not yet', durationMs: expect.any(Number) },
      {
        event: 'succeeded',
        job: { ...job, attempt: 2, maxAttempts: 4 },
        result: 'awake',
        durationMs: expect.any(Number),
      },
    ]);
    const [snoozed] = heard.of(id) as [JobEvent<'snoozed'>];
    expect(snoozed.until.getTime()).toBeGreaterThanOrEqual(before + 50);
  });

  it('tells of a job cancelled while it ran here', async () => {
    const { id } = await jobs.enqueue(Held, null);
    await waitFor('the job to start', () => app.get(Started).ids.has(id));
    await jobs.cancel(id);
    await waitFor('the cancel to be heard', () => heard.of(id).length);
    expect(heard.of(id)).toEqual([
      {
        event: 'cancelled',
        job: { id, name: 'ev-held', queue: 'ev-a', attempt: 1, maxAttempts: 3, payload: null },
        error: expect.objectContaining({ name: 'JobCancelledError' }),
        durationMs: expect.any(Number),
      },
    ]);
    await waitFor('the job to be recorded cancelled', async () => (await jobs.get(id))?.state === 'cancelled');
  });

  it('tells of an attempt stalled by a lost lease', async () => {
    const { id } = await jobs.enqueue(Held, null);
    await waitFor('the job to start', () => app.get(Started).ids.has(id));
    // Another worker "took" the job, with a lease long enough that no rescue here brings it back.
    await sql(
      `UPDATE "${schema}".job SET worker_id = 'thief:1', lease_expires_at = now() + interval '1 hour' WHERE id = $1`,
      [id],
    );
    await waitFor('the stall to be heard', () => heard.of(id).length);
    expect(heard.of(id)).toEqual([lostLease(id, 'ev-held')]);
  });

  it('tells of an outcome only once it is written: a listener reading the job back finds what it was told', async () => {
    const refs = await jobs.enqueueMany([
      ...Array.from({ length: 5 }, (_, n) => ({ job: Double, payload: { n }, options: { queue: 'ev-b' } })),
      ...Array.from({ length: 3 }, (_, n) => ({ job: Flaky, payload: { tag: `read-${n}` } })),
    ]);
    const expected = [
      ...refs.slice(0, 5).map((r) => [`succeeded ${r.id}`, 'succeeded']),
      ...refs.slice(5).map((r) => [`failed ${r.id}`, 'failed']),
    ];
    await waitFor('every read-back', () => expected.every(([key]) => heard.readBack.has(key!)));
    expect(expected.map(([key]) => [key, heard.readBack.get(key!)])).toEqual(expected);
  });

  it('tells of a stall, not of the outcome, when the outcome is refused because another worker took the job', async () => {
    const { id } = await jobs.enqueue(Stolen, null);
    await waitFor('the stall to be heard', () => heard.of(id).length);
    expect(heard.of(id)).toEqual([lostLease(id, 'ev-stolen')]);
    const [row] = await sql<{ state: string; worker_id: string }>(
      `SELECT state, worker_id FROM "${schema}".job WHERE id = $1`,
      [id],
    );
    expect(row).toEqual({ state: 'active', worker_id: 'thief:1' });
  });

  it('stops calling a listener once it unsubscribes from JobEvents.on()', async () => {
    const events = app.get(JobEvents);
    const got: string[] = [];
    const off = events.on('succeeded', (e) => void got.push(e.job.id), { name: 'ev-double' });
    const first = await jobs.enqueue(Double, { n: 1 });
    await waitFor('the first success to reach the listener', () => got.includes(first.id));
    off();
    const second = await jobs.enqueue(Double, { n: 1 });
    await waitFor('the second success to be heard by the providers', () => heard.of(second.id).length);
    expect(got).toEqual([first.id]);
  });

  it('tells of an attempt handed back at shutdown, as stalled', async () => {
    const { id } = await jobs.enqueue(Held, null);
    await waitFor('the job to start', () => app.get(Started).ids.has(id));
    await app.close();
    expect(heard.of(id)).toEqual([
      {
        event: 'stalled',
        reason: 'shutdown',
        job: { id, name: 'ev-held', queue: 'ev-a', attempt: 1, maxAttempts: 3, payload: null },
        error: { name: 'WorkerShutdownError', message: expect.any(String) },
        durationMs: expect.any(Number),
      },
    ]);
    const [row] = await sql<{ state: string }>(`SELECT state FROM "${schema}".job WHERE id = $1`, [id]);
    expect(row).toEqual({ state: 'queued' });
  });
});

describe('@OnJobEvent at start', () => {
  it('refuses a listener on a request-scoped provider, naming the fix', async () => {
    @Injectable({ scope: Scope.REQUEST })
    class PerRequest {
      @OnJobEvent('failed')
      onFailed() {}
    }
    await expect(boot({ worker: { enabled: false } }, [PerRequest], false)).rejects.toThrow(
      new JobsError(
        'PerRequest has @OnJobEvent methods but is request-scoped or transient (itself or through a dependency), so there is no one instance to call. ' +
          'Potential fix: move the listeners to a singleton provider, which may resolve scoped ones through ModuleRef.',
      ),
    );
  });

  it('refuses unknown events and bad filters where the decorator is applied', () => {
    class Target {
      method() {}
    }
    const descriptor = Object.getOwnPropertyDescriptor(Target.prototype, 'method')!;
    expect(() => OnJobEvent('finished' as never)(Target.prototype, 'method', descriptor)).toThrow(
      `@OnJobEvent() on Target.method: unknown job event the string "finished". Potential fix: one of 'succeeded', 'failed', 'retrying', 'cancelled', 'snoozed', 'stalled'.`,
    );
    expect(() => OnJobEvent([])(Target.prototype, 'method', descriptor)).toThrow(/no event given/);
    expect(() => OnJobEvent('failed', { queue: '' })(Target.prototype, 'method', descriptor)).toThrow(
      `@OnJobEvent() on Target.method: "queue" must be a non-empty string, got an empty string. Potential fix: queue: 'emails'.`,
    );
  });
});
