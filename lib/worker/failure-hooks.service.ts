import { Inject, Injectable, Logger } from '@nestjs/common';
import { JobRegistry } from '../discovery/job-registry.js';
import {
  Clock,
  computeBackoff,
  type JobHandler,
  JOB_DEFAULTS,
  JobsError,
  PermanentJobError,
  serializeError,
} from '../model/index.js';
import {
  OUTCOME_STORAGE,
  type FailedJob,
  type FailureHookEnd,
  type OutcomeStorage,
} from '../storage/jobs/outcomes/outcome-storage.interface.js';
import { AttemptRunner } from './attempt-runner.service.js';
import { loggableMessage, loggableStack } from './outcome-log.js';
import type { RunningJob } from './running-job.js';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker-options.js';

/** Hooks one sweep claims at most; the next sweep takes the rest. */
const SWEEP_BATCH = 20;

/**
 * Runs onFailure hooks from their record, so each runs once the failure is
 * written and is not lost or repeated by a crash in between:
 *
 * - the worker whose attempt failed for good writes the outcome with the hook
 *   held by itself, then runs it here at once (`runLocal`);
 * - jobs failed by the rescue (crashes used their attempts up), and hooks
 *   whose instance died before running them, are claimed by a sweep on any
 *   instance that has the handler.
 *
 * A hook is held like a job: with a lease the LeaseKeeper renews. It is
 * marked done when onFailure returns. When it throws, it is pending again
 * with its rerun's time (the job type's `onFailureRetries` backoff), and the
 * sweep of any instance runs it then, until its runs are used up or it
 * throws a PermanentJobError (failed). Each claim counts a run, so a run
 * that crashes its instance counts too. A process that dies between the
 * hook's end and its mark makes it run again, which is why hooks, like
 * handlers, should be idempotent.
 */
@Injectable()
export class FailureHooks {
  private readonly logger = new Logger('JobWorker');
  private readonly running = new Map<string, { run: RunningJob; done: Promise<void> }>();
  private workerId: string | null = null;
  private sweeping: Promise<void> | null = null;
  private again = false;
  /** Wake-ups for this worker's own pending reruns; the rescuer's sweep is the fallback. */
  private readonly wakeups = new Set<NodeJS.Timeout>();

  constructor(
    @Inject(OUTCOME_STORAGE) private readonly storage: OutcomeStorage,
    private readonly registry: JobRegistry,
    private readonly clock: Clock,
    @Inject(WORKER_OPTIONS) private readonly options: ResolvedWorkerOptions,
    private readonly attempts: AttemptRunner,
  ) {}

  start(workerId: string): void {
    this.workerId = workerId;
  }

  /** Hooks this worker holds, for lease renewal. */
  held(): string[] {
    return [...this.running.keys()];
  }

  /** Hooks whose lease was taken (this worker stalled): abort them; whoever took them runs them. */
  lost(ids: Iterable<string>): void {
    for (const id of ids) this.running.get(id)?.run.stop('lost-lease');
  }

  /** Runs the hook of an attempt this worker just recorded failed (its hook held by this worker). */
  runLocal(run: RunningJob): void {
    // Stopped meanwhile: the hook's lease runs out and the sweep of a live instance runs it.
    if (!this.workerId) return;
    this.track(run, 1, () => run.runFailureHook());
  }

  /** Claims and runs pending or abandoned hooks; a call during a sweep makes it go round once more. */
  sweep(): Promise<void> {
    if (this.sweeping) {
      this.again = true;
      return this.sweeping;
    }
    this.sweeping = this.sweepAll().finally(() => (this.sweeping = null));
    return this.sweeping;
  }

  private async sweepAll(): Promise<void> {
    do {
      this.again = false;
      const workerId = this.workerId;
      if (!workerId) return;
      let claimed: FailedJob[];
      try {
        claimed = await this.storage.claimFailureHooks(
          workerId,
          this.registry.names(),
          SWEEP_BATCH,
          this.clock.now(),
          this.options.lease,
        );
      } catch (error) {
        this.logger.warn(`Looking for onFailure hooks to run failed: ${(error as Error).message}`);
        return;
      }
      for (const { error, hookAttempt, ...job } of claimed) {
        const run = this.attempts.create(job);
        const recorded = Object.assign(new Error(error?.message ?? 'failed'), { name: error?.name ?? 'Error' });
        if (error?.stack) recorded.stack = error.stack;
        const { attempts } = this.retriesOf(job.name);
        if (!this.hasHook(job.name)) {
          this.track(run, hookAttempt, () => Promise.resolve(), true);
          continue;
        }
        // Its last run was cut short (its instance died, or the bound was lowered meanwhile): this
        // claim runs nothing, so it is not counted, and the hook shows the runs it had.
        const exhausted = hookAttempt > attempts;
        const hook = exhausted
          ? () =>
              Promise.reject(
                new JobsError(
                  `onFailure of job "${job.name}" (${job.id}) has no run left: its ${attempts} run(s) are used up, the last one interrupted before it ended. Potential fix: make onFailure end within the worker's lease, or raise the job's onFailureRetries.attempts.`,
                ),
              )
          : () => run.runFailureHook(recorded);
        this.track(run, Math.min(hookAttempt, attempts), hook, exhausted);
      }
      if (claimed.length === SWEEP_BATCH) this.again = true;
    } while (this.again);
  }

  /**
   * Resolves once every hook running now, and any started meanwhile, has
   * ended and been recorded: the testing kit's drain returns after them.
   */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.all([...this.running.values()].map((h) => h.done));
  }

  /** `none`: the claim runs nothing (no onFailure, or no run left), and is not counted as a run. */
  private track(run: RunningJob, hookAttempt: number, hook: () => Promise<void>, none = false): void {
    const workerId = this.workerId!;
    const { job } = run;
    // Claimed again by this worker: the earlier run's lease ran out (a stall), and it must not settle this run's hook.
    this.running.get(job.id)?.run.stop('lost-lease');
    const done = hook()
      .then(
        (): FailureHookEnd => ({ state: 'done', error: null, none }),
        (error: unknown) => this.threw(run, hookAttempt, error, none),
      )
      .then(async (end) => {
        // Stopped from outside: stop() gives it back, or the instance that took its lease runs it.
        if (!end || run.stopped) return;
        await this.storage.settleFailureHook(workerId, job, end);
        if (end.state === 'pending') this.wakeAt(end.runAt);
      })
      .catch((error: Error) =>
        this.logger.error(`Recording the onFailure hook of job ${job.id} failed: ${error.message}`),
      )
      .finally(() => {
        if (this.running.get(job.id)?.run === run) this.running.delete(job.id);
      });
    this.running.set(job.id, { run, done });
  }

  /** What a run that threw leaves: a rerun after the backoff, or the hook failed for good. */
  private threw(run: RunningJob, hookAttempt: number, thrown: unknown, none: boolean): FailureHookEnd | null {
    if (run.stopped) return null;
    const { job } = run;
    const error = thrown instanceof Error ? thrown : new Error(String(thrown));
    const { attempts, backoff } = this.retriesOf(job.name);
    const permanent = error instanceof PermanentJobError || error.name === 'PermanentJobError';
    const what = `onFailure of job ${job.id} threw on run ${hookAttempt} of ${attempts}: ${loggableMessage(job, error)}`;
    if (permanent || hookAttempt >= attempts) {
      run.logger.error(
        `${what}; ${permanent ? 'a PermanentJobError is' : 'its runs are used up, it is'} not run again`,
        loggableStack(job, error),
      );
      return { state: 'failed', error: serializeError(error), none };
    }
    const runAt = new Date(this.clock.now().getTime() + computeBackoff(backoff, hookAttempt, error));
    run.logger.warn(`${what}; it runs again at ${runAt.toISOString()}`);
    return { state: 'pending', runAt, error: serializeError(error) };
  }

  private hasHook(name: string): boolean {
    const handler = this.registry.get(name)?.metatype.prototype as JobHandler | undefined;
    return typeof handler?.onFailure === 'function';
  }

  private retriesOf(name: string) {
    return this.registry.get(name)?.options.onFailureRetries ?? JOB_DEFAULTS.onFailureRetries;
  }

  /** A sweep when a rerun this worker recorded is due, so it need not wait for the rescuer's round. */
  private wakeAt(at: Date): void {
    if (!this.workerId) return;
    const timer = setTimeout(
      () => {
        this.wakeups.delete(timer);
        void this.sweep();
      },
      Math.max(0, at.getTime() - this.clock.now().getTime()),
    );
    timer.unref();
    this.wakeups.add(timer);
  }

  /**
   * Lets running hooks finish within `graceMs`; the rest are aborted and
   * given back (pending again) for another instance.
   */
  async stop(graceMs: number): Promise<void> {
    await this.sweeping;
    for (const timer of this.wakeups) clearTimeout(timer);
    this.wakeups.clear();
    const workerId = this.workerId;
    this.workerId = null;
    if (this.running.size === 0 || !workerId) return;
    const all = Promise.all([...this.running.values()].map((h) => h.done));
    await Promise.race([all, new Promise((r) => setTimeout(r, graceMs).unref())]);
    const left = [...this.running.keys()];
    for (const h of this.running.values()) h.run.stop('shutdown');
    if (left.length) {
      await this.storage
        .giveBackFailureHooks(workerId, left)
        .catch((error: Error) => this.logger.error(`Giving back onFailure hooks failed: ${error.message}`));
    }
  }
}
