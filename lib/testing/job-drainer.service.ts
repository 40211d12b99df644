import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Inject, Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { ContextIdFactory, ModuleRef } from '@nestjs/core';
import type { EntityManager } from 'typeorm';
import { JobRegistry, type RegisteredJob } from '../discovery/job-registry.js';
import {
  Clock,
  databaseCall,
  JobsError,
  settlesWithin,
  type ClaimedJob,
  type JobContext,
  type JobHandler,
} from '../model/index.js';
import { CLAIM_STORAGE, type ClaimStorage } from '../storage/jobs/claim/claim-storage.interface.js';
import {
  MAINTENANCE_STORAGE,
  type MaintenanceStorage,
} from '../storage/jobs/maintenance/maintenance-storage.interface.js';
import { OUTCOME_STORAGE, type OutcomeStorage } from '../storage/jobs/outcomes/outcome-storage.interface.js';
import { QUEUE_STORAGE, type QueueStorage } from '../storage/queues/queue-storage.interface.js';
import type { TxScope } from '../storage/sql/storage-tx.interface.js';
import { WORKFLOW_STORAGE, type WorkflowStorage } from '../storage/workflows/workflow-storage.interface.js';
import { AttemptEnding } from '../worker/attempt-ending.js';
import { AttemptRunner } from '../worker/attempt-runner.service.js';
import { Claimer } from '../worker/claiming/claimer.js';
import { CompletionBatcher } from '../worker/completion-batcher.js';
import { FailureHooks } from '../worker/failure-hooks.service.js';
import { ReadersWriterLock } from '../worker/readers-writer-lock.js';
import type { RunningJob, RunResult } from '../worker/running-job.js';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from '../worker/worker-options.js';
import type { AttemptReport } from './attempt-report.js';
import { CommitHooks } from './commit-hooks.js';
import { LockedJobs } from './locked-jobs.js';
import { FaultPlan } from './fault-plan.js';
import { JOBS_TESTING_SETTINGS, type JobsTestingSettings } from './jobs-testing-options.interface.js';
import { StorageTap, type TapListener } from './storage-tap.js';

export type { AttemptReport } from './attempt-report.js';

interface DrainRequest {
  /** Only this queue; default every queue. */
  queue?: string;
  /** Only these job names; default every registered one. */
  names: readonly string[];
  /** Attempts one drain may run; past it, the drain fails (a job that enqueues itself without end). */
  limit: number;
}

/** Expired leases one pass takes back at most, as the worker's rescuer does. */
const RESCUE_BATCH = 500;

/**
 * Runs due jobs in the test's process through the worker's own parts: the
 * Claimer's claim, the AttemptRunner (handler resolution, context, signal, retry and
 * backoff decisions), the CompletionBatcher (fenced outcome writes that
 * settle workflows and write continuations) and FailureHooks (onFailure
 * from its record). What it adds is the loop of a test: one job at a time,
 * until none is due, with faults injected on request.
 */
@Injectable()
export class JobDrainer implements TapListener, BeforeApplicationShutdown {
  /** The worker id its claims and outcome writes carry (and executions show). */
  readonly id = `jobs-tester:${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  readonly faults = new FaultPlan();
  private readonly logger = new Logger('JobsTester');
  /** Set inside a drain: calls made by the jobs it runs are part of it. */
  private readonly inside = new AsyncLocalStorage<true>();
  private readonly running = new Map<string, RunningJob>();
  private readonly reports: AttemptReport[] = [];
  private readonly commits = new CommitHooks(() => this.drainInline());
  private batcher: CompletionBatcher | null = null;
  private ending: AttemptEnding | null = null;
  /** Drains run one after another: each starts after the writes that asked for it. */
  private tail: Promise<unknown> = Promise.resolve();
  private closing = false;
  /** Claims as the worker does, one job at a time; its passes never start: the drain loop asks. */
  private readonly claimer: Claimer;

  constructor(
    @Inject(CLAIM_STORAGE) private readonly claims: ClaimStorage,
    @Inject(OUTCOME_STORAGE) private readonly outcomes: OutcomeStorage,
    @Inject(MAINTENANCE_STORAGE) private readonly maintenance: MaintenanceStorage,
    @Inject(QUEUE_STORAGE) queueStorage: QueueStorage,
    @Inject(WORKFLOW_STORAGE) private readonly workflows: WorkflowStorage,
    @Inject(WORKER_OPTIONS) private readonly options: ResolvedWorkerOptions,
    @Inject(JOBS_TESTING_SETTINGS) private readonly settings: JobsTestingSettings,
    private readonly registry: JobRegistry,
    private readonly attempts: AttemptRunner,
    private readonly hooks: FailureHooks,
    private readonly clock: Clock,
    private readonly moduleRef: ModuleRef,
    tap: StorageTap,
  ) {
    if (settings.mode !== 'worker') tap.listener = this;
    this.claimer = new Claimer({
      workerId: this.id,
      claims,
      outcomes,
      queueStorage,
      registry,
      clock,
      options: { ...options, concurrency: 1 },
      logger: this.logger,
      // The drain loop runs each job it claims itself.
      runAttempt: () => undefined,
    });
  }

  /** True inside a job (or onFailure) that a drain runs. */
  insideDrain(): boolean {
    return this.inside.getStore() === true;
  }

  /** Every attempt drains ran so far, oldest first. */
  history(): readonly AttemptReport[] {
    return this.reports;
  }

  drain(request: DrainRequest): Promise<AttemptReport[]> {
    if (this.insideDrain()) {
      throw new JobsError(
        'JobsTester.drain() was called from inside a job that a drain is running, and would wait for itself. ' +
          'Potential fix: return from the handler and let the drain that runs it go on: it runs whatever becomes due meanwhile.',
      );
    }
    if (this.closing) {
      throw new JobsError('JobsTester.drain(): the app is closing. Potential fix: await the drain before app.close().');
    }
    const pass = this.tail.then(() =>
      this.inside.run(true, () => databaseCall('JobsTester.drain()', () => this.pass(request))),
    );
    this.tail = pass.catch(() => undefined);
    return pass;
  }

  /** In inline mode: drains once the write that made jobs due has committed. */
  async written(scope: TxScope | undefined): Promise<void> {
    if (this.settings.mode !== 'inline' || this.insideDrain() || this.closing) return;
    if (scope === undefined) return this.drainInline();
    // Anything but a manager is a transaction of storage's own: its transaction() call reports again.
    if (!isEntityManager(scope)) return;
    if (CommitHooks.inOpenTransaction(scope)) this.commits.afterCommit(scope);
    else await this.drainInline();
  }

  cancelRequested(target: { job: string } | { batch: string }): void {
    for (const run of this.running.values()) {
      if ('job' in target ? run.job.id === target.job : run.job.batchId === target.batch) run.stop('cancel');
    }
  }

  private async drainInline(): Promise<void> {
    await this.drain({ names: this.registry.names(), limit: DEFAULT_LIMIT });
  }

  private async pass(request: DrainRequest): Promise<AttemptReport[]> {
    this.start();
    const reports: AttemptReport[] = [];
    try {
      // Leases that ran out since the last pass (dieAfterWork, once the clock has moved past
      // the lease) come back as a worker's rescuer would bring them back, interrupted attempt and all.
      while ((await this.maintenance.rescueExpired(this.clock.now(), RESCUE_BATCH)).rescued === RESCUE_BATCH);
      await this.hooks.sweep();
      // Paused queues, limits, groups and serial keys hold in a drain as on a worker.
      await this.claimer.settings.refresh();
      const locks = new LockedJobs(this.claims);
      for (;;) {
        let claimed = 0;
        for (const queue of await this.queues(request.queue)) {
          if (this.claimer.settings.paused(queue)) continue;
          const [job] = await this.claimer.claim({
            workerId: this.id,
            queue,
            names: request.names,
            limit: 1,
            now: this.clock.now(),
            leaseMs: this.options.lease,
          });
          if (!job) continue;
          claimed++;
          // One job at a time, and no claim on its outcome write: the claimer need not count it.
          this.claimer.jobReleased(job);
          if (reports.length >= request.limit) {
            await this.outcomes.handBack(this.id, [job], this.clock.now(), null);
            throw new JobsError(
              `JobsTester.drain() ran ${reports.length} attempts and jobs are still due (next: "${job.name}" in queue "${job.queue}"): ` +
                `a job that enqueues another of itself each time never lets a drain end. ` +
                `Potential fix: drain({ limit: ${request.limit * 10} }) if that many is expected, or stop the chain in the handler.`,
            );
          }
          reports.push(await this.runOne(job));
        }
        if (claimed > 0) {
          locks.claimed();
          continue;
        }
        if ((await locks.next(request.names, this.clock.now())) === 'end') return reports;
      }
    } finally {
      await this.hooks.idle();
    }
  }

  /** Registered queues and queues holding queued jobs, in name order. */
  private async queues(only: string | undefined): Promise<string[]> {
    if (only !== undefined) return [only];
    const all = new Set(this.registry.all().map((job) => job.options.queue));
    for (const queue of await this.claims.queuesWithWork()) all.add(queue);
    return [...all].sort();
  }

  /** Runs one claimed job, with the fault planned for it, and ends its attempt as the worker does. */
  private async runOne(job: ClaimedJob): Promise<AttemptReport> {
    const fault = this.faults.take(job.name);
    let diedAfterStep = false;
    const run = this.attempts.create(job, {
      handler: fault?.kind === 'fail' ? this.failing(job, fault.error) : undefined,
      dieAfterStep: (step) => {
        if (!this.faults.takeStep(job.name, step)) return false;
        diedAfterStep = true;
        return true;
      },
    });
    this.running.set(job.id, run);
    let result: RunResult;
    try {
      result = await this.attempts.run(run);
    } finally {
      this.running.delete(job.id);
    }
    const base = {
      id: job.id,
      name: job.name,
      queue: job.queue,
      attempt: job.attempt,
      maxAttempts: job.maxAttempts,
      payload: job.payload,
      batchId: job.batchId,
      ...(fault ? { injected: fault.kind === 'fail' ? ('failNext' as const) : ('dieAfterWork' as const) } : {}),
    };
    if (diedAfterStep) return this.report({ ...base, outcome: 'died', injected: 'dieAfterStep' });
    // A crash after the handler's work: nothing is written and the lease is left to run out. After
    // ctx.transaction() committed there is nothing left to lose: the job succeeded with it.
    if (fault?.kind === 'die' && !(result.outcome && result.recorded)) return this.report({ ...base, outcome: 'died' });
    const { outcome, applied } = await this.ending!.end(run, result, true);
    if (!outcome || !applied) return this.report({ ...base, outcome: 'lost' });
    switch (outcome.kind) {
      case 'succeeded':
        return this.report({ ...base, outcome: 'succeeded', result: outcome.result });
      case 'retry':
        return this.report({ ...base, outcome: 'retry', error: outcome.error, retryAt: outcome.retryAt });
      case 'snoozed':
        return this.report({ ...base, outcome: 'snoozed', retryAt: outcome.until });
      default:
        return this.report({ ...base, outcome: outcome.kind, error: outcome.error });
    }
  }

  private report(report: AttemptReport): AttemptReport {
    this.reports.push(report);
    return report;
  }

  /** A stand-in handler that fails at once; onFailure is still the real handler's. */
  private failing(job: ClaimedJob, error: Error): JobHandler {
    const registered = this.registry.get(job.name)!;
    return {
      run: () => Promise.reject(error),
      onFailure: async (payload: unknown, failure: Error, ctx: JobContext) => {
        const real = registered.instance ?? (await this.resolveScoped(registered, payload, ctx));
        await real.onFailure?.(payload, failure, ctx);
      },
    };
  }

  /** As RunningJob resolves request-scoped handlers: a DI sub-tree of its own with REQUEST = { job }. */
  private resolveScoped(registered: RegisteredJob, payload: unknown, ctx: JobContext): Promise<JobHandler> {
    const contextId = ContextIdFactory.create();
    this.moduleRef.registerRequestByContextId({ job: ctx, payload }, contextId);
    return this.moduleRef.resolve(registered.metatype, contextId, { strict: false });
  }

  /** Binds the worker's parts to this runner, once, on the first drain. */
  private start(): void {
    if (this.batcher) return;
    this.attempts.prepare(this.id);
    this.hooks.start(this.id);
    this.batcher = new CompletionBatcher(
      this.outcomes,
      this.workflows,
      this.id,
      this.clock,
      new ReadersWriterLock(),
      this.options.lease,
    );
    // No slots: the drain claims one job at a time and releases it from the claimer at once.
    this.ending = new AttemptEnding({
      workerId: this.id,
      attempts: this.attempts,
      batcher: this.batcher,
      hooks: this.hooks,
      outcomes: this.outcomes,
      clock: this.clock,
      logger: this.logger,
      slots: null,
    });
  }

  /**
   * A drain the test did not wait for gets the grace period; what still runs
   * then is stopped and its outcome dropped (the schema goes with the app).
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    this.commits.detach();
    this.claimer.stop();
    if (!this.batcher) return;
    if (!(await settlesWithin(this.tail, this.options.shutdownGrace))) {
      this.logger.warn(`A drain was still running at close; stopping ${this.running.size} job(s)`);
      for (const run of this.running.values()) run.stop('shutdown');
    }
    await this.attempts.drainProgress();
    await this.batcher.drain(5_000);
    await this.hooks.stop(this.options.shutdownGrace);
  }
}

/** Attempts one drain runs before it decides a job enqueues itself without end. */
export const DEFAULT_LIMIT = 1_000;

/** The caller's manager, told apart from storage's opaque transactions the way JobQueue checks one. */
function isEntityManager(scope: TxScope): scope is EntityManager {
  return typeof scope === 'object' && scope !== null && 'dataSource' in scope;
}
