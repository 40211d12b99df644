import { Inject, Injectable } from '@nestjs/common';
import { JobRegistry } from '../discovery/job-registry.js';
import {
  checkOptions,
  checkStepName,
  describeValue,
  JobsError,
  optionShape,
  type BatchInfo,
  type Clock,
  type JobHandler,
  type JobInfo,
} from '../model/index.js';
import { JobsMonitor } from '../monitoring/jobs-monitor.service.js';
import type { JobRef } from '../queue/job-factory.js';
import { JobQueue } from '../queue/job-queue.service.js';
import { RecurringSchedules } from '../scheduler/recurring-schedules.service.js';
import { EnqueuedJobs, type EnqueuedExpectation, type EnqueuedFilter } from './enqueued-jobs.js';
import { DEFAULT_LIMIT, JobDrainer, type AttemptReport } from './job-drainer.service.js';
import {
  JOBS_TESTING_SETTINGS,
  type JobsTestingMode,
  type JobsTestingSettings,
} from './jobs-testing-options.interface.js';
import { ManualClock } from './manual-clock.js';
import { JobWaiter, type WaitForOptions } from './job-waiter.js';

/** Which due jobs `drain()` runs, and how many attempts at most. */
export interface DrainOptions {
  /** Only jobs of this queue; default every queue. */
  queue?: string;
  /** Only these jobs (classes or names); default every job this app has a handler for. */
  names?: ReadonlyArray<JobRef>;
  /** Attempts one drain may run before it fails as endless; default 1000. */
  limit?: number;
}

/** What `history()` takes. */
export interface HistoryFilter {
  /** Only the attempts of this job (a `@Job` class or a job name); default every job. */
  name?: JobRef;
}

const DRAIN_SHAPE = optionShape<DrainOptions>({ queue: true, names: true, limit: true });
const HISTORY_SHAPE = optionShape<HistoryFilter>({ name: true });

/**
 * Drives a test app's jobs: runs them (`drain`), moves time (`advance`),
 * injects faults (`failNext`, `dieAfterWork`, `dieAfterStep`), waits for the real worker
 * (`waitFor`) and checks what was enqueued (`expectEnqueued`). Get it with
 * `app.get(JobsTester)` from an app built with JobsTestingModule.
 */
@Injectable()
export class JobsTester {
  private readonly enqueuedJobs: EnqueuedJobs;
  private readonly waiter: JobWaiter;

  constructor(
    @Inject(JOBS_TESTING_SETTINGS) private readonly settings: JobsTestingSettings,
    private readonly drainer: JobDrainer,
    private readonly jobs: JobQueue,
    private readonly schedules: RecurringSchedules,
    private readonly registry: JobRegistry,
    monitor: JobsMonitor,
  ) {
    this.enqueuedJobs = new EnqueuedJobs(jobs, monitor);
    this.waiter = new JobWaiter(jobs, settings.mode, settings.clock);
  }

  /** How this app runs its jobs: `manual`, `inline` or `worker` (the module's `mode`). */
  get mode(): JobsTestingMode {
    return this.settings.mode;
  }

  /** The app's own schema: created at start, dropped at close. */
  get schema(): string {
    return this.settings.schema;
  }

  /** The app's clock: a ManualClock unless the options said otherwise. */
  get clock(): Clock {
    return this.settings.clock;
  }

  /**
   * Runs every due job in this process, one at a time, through the worker's
   * own execution path, then the jobs they made due (continuations, batch
   * callbacks, dependents, retries whose backoff is already over), until
   * none is due. Jobs due later (delays, backoffs, schedules) wait for
   * `advance()`. Resolves with the attempts it ran, in order; onFailure
   * hooks have run by then.
   */
  drain(options: DrainOptions = {}): Promise<AttemptReport[]> {
    const where = 'JobsTester.drain()';
    const o = checkOptions(where, options, "{ queue: 'emails' }", DRAIN_SHAPE) ?? {};
    this.refuseInWorkerMode(where, "use waitFor(id) for the worker's jobs");
    if (o.names !== undefined && !Array.isArray(o.names)) {
      throw new JobsError(
        `${where}: "names" must be an array of @Job classes or names, got ${describeValue(o.names)}. Potential fix: names: [SendReceipt].`,
      );
    }
    const limit = o.limit ?? DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1) {
      throw new JobsError(
        `${where}: "limit" must be an integer >= 1, got ${describeValue(limit)}. Potential fix: limit: 100.`,
      );
    }
    const names = o.names === undefined ? this.registry.names() : o.names.map((ref) => this.runnable(where, ref));
    return this.drainer.drain({ queue: o.queue, names, limit });
  }

  /**
   * Moves the ManualClock `ms` forward, then turns schedule ticks that fell
   * due into jobs; in inline mode it also drains, and resolves with what ran
   * (otherwise with none: drain() next). Delays, backoffs and leases follow
   * the clock, so this is how a test gets past them without waiting.
   */
  async advance(ms: number): Promise<AttemptReport[]> {
    const where = 'JobsTester.advance()';
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
      throw new JobsError(
        `${where}: "ms" must be a finite number of milliseconds >= 0, got ${describeValue(ms)}. Potential fix: advance(60_000).`,
      );
    }
    const clock = this.settings.clock;
    if (!(clock instanceof ManualClock)) {
      throw new JobsError(
        `${where}: the app runs on the system clock, which a test cannot move. Potential fix: leave "clock" out of JobsTestingModule.forRoot() (a ManualClock is the default), or pass a ManualClock.`,
      );
    }
    clock.advance(ms);
    await this.schedules.runDue();
    return this.settings.mode === 'inline' ? this.drain() : [];
  }

  /**
   * The next attempt of `job` that drain() runs fails with `error` (a string
   * becomes an Error) without calling the handler: the retry and backoff
   * decision, PermanentJobError and onFailure follow as if it had thrown.
   * Calls queue up: two calls fail the next two attempts.
   */
  failNext(job: JobRef, error: Error | string): void {
    const where = 'JobsTester.failNext()';
    this.refuseInWorkerMode(where, 'faults apply to attempts that drain() runs');
    if (!(error instanceof Error) && typeof error !== 'string') {
      throw new JobsError(
        `${where}: "error" must be an Error or a message, got ${describeValue(error)}. Potential fix: failNext(SendReceipt, new Error('SMTP down')).`,
      );
    }
    this.drainer.faults.add(this.runnable(where, job), {
      kind: 'fail',
      error: typeof error === 'string' ? new Error(error) : error,
    });
  }

  /**
   * The next attempt of `job` runs its handler to the end, and then its
   * runner "dies": the outcome is not written and the job stays active until
   * its lease (worker.lease, 30 s by default) runs out, as after a crash.
   * `advance()` past the lease and `drain()`: the job comes back, its attempt
   * recorded interrupted (LeaseLostError), and runs again — which is where
   * a test checks that the handler's work is idempotent.
   */
  dieAfterWork(job: JobRef): void {
    const where = 'JobsTester.dieAfterWork()';
    this.refuseInWorkerMode(where, 'faults apply to attempts that drain() runs');
    this.drainer.faults.add(this.runnable(where, job), { kind: 'die' });
  }

  /**
   * The first attempt of `job` that finishes the work of step `step` then
   * "dies" before the step's record is written: the attempt ends with
   * nothing written, and the job stays active until its lease runs out, as
   * after a crash in that window. `advance()` past the lease and `drain()`:
   * the next attempt answers the steps recorded before it from storage and
   * runs this one again, which is where a test checks that the step's work
   * is idempotent (`ctx.stepKey()`). Fires once; calls queue up.
   */
  dieAfterStep(job: JobRef, step: string): void {
    const where = 'JobsTester.dieAfterStep()';
    this.refuseInWorkerMode(where, 'faults apply to attempts that drain() runs');
    checkStepName(where, step, "dieAfterStep(Checkout, 'charge')");
    this.drainer.faults.add(this.runnable(where, job), { kind: 'die-after-step', step });
  }

  /** Faults not met yet, by job name: `{ 'send-receipt': ['fail'] }`. */
  pendingFaults(): Record<string, Array<'fail' | 'die' | 'die-after-step'>> {
    return this.drainer.faults.pending();
  }

  /** Drops every fault not met yet (`failNext`, `dieAfterWork`, `dieAfterStep`), for every job. */
  clearFaults(): void {
    this.drainer.faults.clear();
  }

  /** Every attempt this app's drains ran (inline ones too), oldest first; `name` narrows it. */
  history(filter: HistoryFilter = {}): AttemptReport[] {
    const o = checkOptions('JobsTester.history()', filter, '{ name: SendReceipt }', HISTORY_SHAPE) ?? {};
    const name = o.name === undefined ? undefined : this.jobs.resolveName(o.name);
    return this.drainer.history().filter((r) => name === undefined || r.name === name);
  }

  /**
   * Waits until the job has ended (succeeded, failed, cancelled, skipped), or
   * the batch has settled and its then/catch/finally jobs have ended, and
   * resolves with it. For apps in mode 'worker'; in the other modes it fails
   * at once if the job has not ended, since only drain() would run it.
   */
  waitFor(id: string, options: WaitForOptions = {}): Promise<JobInfo | BatchInfo> {
    return this.waiter.waitFor(id, options);
  }

  /** waitFor() for a job id, typed as one. */
  waitForJob(id: string, options: WaitForOptions = {}): Promise<JobInfo> {
    return this.waiter.waitForJob(id, options);
  }

  /** waitFor() for a batch id, typed as one. */
  waitForBatch(id: string, options: WaitForOptions = {}): Promise<BatchInfo> {
    return this.waiter.waitForBatch(id, options);
  }

  /**
   * Sends a signal to a job, as `JobQueue.signal()` does: a job parked in
   * `ctx.waitForSignal(name)` is due at once, so the next `drain()` resumes
   * it with the payload. A wait's timeout is on the test's clock: `advance()`
   * past it, then `drain()`, and the wait returns null.
   */
  signal(id: string, name: string, payload?: unknown): Promise<void> {
    return this.jobs.signal(id, name, payload);
  }

  /** Jobs with their payloads, oldest first; by default those not run yet (queued, due or later, and waiting). */
  enqueued(filter: EnqueuedFilter = {}): Promise<JobInfo[]> {
    return this.enqueuedJobs.list('JobsTester.enqueued()', filter);
  }

  /**
   * Fails, listing what was enqueued instead, unless a job of that name
   * (and payload, queue, state) is there: at least one, or exactly `count`.
   * Resolves with the matching jobs.
   */
  expectEnqueued(expectation: EnqueuedExpectation): Promise<JobInfo[]> {
    return this.enqueuedJobs.expect(expectation);
  }

  /** Fails, listing them, if any job matches. */
  expectNotEnqueued(expectation: EnqueuedExpectation): Promise<void> {
    return this.enqueuedJobs.expectNone(expectation);
  }

  /** A name this app has a handler for, so that drain() can run it. */
  private runnable(where: string, ref: JobRef<JobHandler>): string {
    const name = this.jobs.resolveName(ref);
    if (!this.registry.get(name)) {
      throw new JobsError(
        `${where}: "${name}" has no handler in this app (it is an external job), so no attempt of it runs here. Potential fix: register its @Job class in the test module.`,
      );
    }
    return name;
  }

  private refuseInWorkerMode(where: string, why: string): void {
    if (this.settings.mode === 'worker') {
      throw new JobsError(
        `${where}: the app is in mode 'worker', where its worker runs the jobs; ${why}. ` +
          `Potential fix: JobsTestingModule.forRoot({ mode: 'manual' }) to run jobs with drain().`,
      );
    }
  }
}
