import { Inject, Injectable, Logger } from '@nestjs/common';
import { JobRegistry } from '../discovery/job-registry.js';
import { Clock } from '../model/index.js';
import {
  OUTCOME_STORAGE,
  type FailedJob,
  type OutcomeStorage,
} from '../storage/jobs/outcomes/outcome-storage.interface.js';
import { AttemptRunner } from './attempt-runner.service.js';
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
 * marked done when onFailure returns (or throws: a hook is not retried). A
 * process that dies between the hook's end and that mark makes it run
 * again, which is why hooks, like handlers, should be idempotent.
 */
@Injectable()
export class FailureHooks {
  private readonly logger = new Logger('JobWorker');
  private readonly running = new Map<string, { run: RunningJob; done: Promise<void> }>();
  private workerId: string | null = null;
  private sweeping: Promise<void> | null = null;
  private again = false;

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
    this.track(run.job.id, run, () => run.runFailureHook());
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
      for (const { error, ...job } of claimed) {
        const run = this.attempts.create(job);
        const recorded = Object.assign(new Error(error?.message ?? 'failed'), { name: error?.name ?? 'Error' });
        if (error?.stack) recorded.stack = error.stack;
        this.track(job.id, run, () => run.runFailureHook(recorded));
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

  private track(id: string, run: RunningJob, hook: () => Promise<void>): void {
    const workerId = this.workerId!;
    const done = hook()
      .then(() => this.storage.settleFailureHooks(workerId, [id], 'done'))
      .catch((error: Error) => this.logger.error(`Recording the onFailure hook of job ${id} failed: ${error.message}`))
      .finally(() => this.running.delete(id));
    this.running.set(id, { run, done });
  }

  /**
   * Lets running hooks finish within `graceMs`; the rest are aborted and
   * given back (pending again) for another instance.
   */
  async stop(graceMs: number): Promise<void> {
    await this.sweeping;
    const workerId = this.workerId;
    this.workerId = null;
    if (this.running.size === 0 || !workerId) return;
    const all = Promise.all([...this.running.values()].map((h) => h.done));
    await Promise.race([all, new Promise((r) => setTimeout(r, graceMs).unref())]);
    const left = [...this.running.keys()];
    for (const h of this.running.values()) h.run.stop('shutdown');
    if (left.length) {
      await this.storage
        .settleFailureHooks(workerId, left, 'pending')
        .catch((error: Error) => this.logger.error(`Giving back onFailure hooks failed: ${error.message}`));
    }
  }
}
