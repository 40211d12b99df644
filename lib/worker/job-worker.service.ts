import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { JobRegistry } from '../discovery/job-registry.js';
import { Clock, JobCipher, serializeError, WorkerShutdownError, type ClaimedJob } from '../model/index.js';
import { CLAIM_STORAGE, type ClaimStorage } from '../storage/jobs/claim/claim-storage.interface.js';
import {
  OUTCOME_STORAGE,
  type HeldJob,
  type OutcomeStorage,
} from '../storage/jobs/outcomes/outcome-storage.interface.js';
import { JobNotifications, type JobNotification } from '../storage/notifications/job-notifications.interface.js';
import { QUEUE_STORAGE, type QueueStorage } from '../storage/queues/queue-storage.interface.js';
import { WORKFLOW_STORAGE, type WorkflowStorage } from '../storage/workflows/workflow-storage.interface.js';
import { AttemptEnding } from './attempt-ending.js';
import { AttemptRunner } from './attempt-runner.service.js';
import { Claimer } from './claiming/claimer.js';
import { CompletionBatcher } from './completion-batcher.js';
import { FailureHooks } from './failure-hooks.service.js';
import { JobRescuer } from './job-rescuer.service.js';
import { LeaseKeeper, type LeaseHolder } from './lease-keeper.service.js';
import type { RunningJob } from './running-job.js';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker-options.js';

/**
 * How long a job sealed with a key this instance lacks stays out of every
 * claim once handed back: long enough that this instance does not spin on
 * it, short enough that one with the key takes it soon.
 */
const MISSING_KEY_WAIT_MS = 1_000;

/**
 * Runs the jobs its Claimer claims, up to the concurrency limit, and records
 * their outcomes in batches. Its leases are kept by the LeaseKeeper, jobs of
 * crashed workers are taken back by the JobRescuer, and every write about a
 * running job is fenced in storage.
 */
@Injectable()
export class JobWorker implements LeaseHolder {
  readonly id = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  private readonly logger = new Logger('JobWorker');
  /** By job id: one attempt per job, the latest claim's (see claimedAgain). */
  private readonly running = new Map<string, RunningJob>();
  private readonly claimer: Claimer;
  private readonly batcher: CompletionBatcher;
  private readonly ending: AttemptEnding;
  private state: 'idle' | 'running' | 'stopping' | 'stopped' = 'idle';
  private timers: NodeJS.Timeout[] = [];
  private unsubscribe: Array<() => void> = [];
  private idleWaiters: Array<() => void> = [];

  constructor(
    @Inject(CLAIM_STORAGE) private readonly claims: ClaimStorage,
    @Inject(OUTCOME_STORAGE) private readonly outcomes: OutcomeStorage,
    @Inject(WORKFLOW_STORAGE) workflows: WorkflowStorage,
    private readonly registry: JobRegistry,
    private readonly clock: Clock,
    private readonly notifications: JobNotifications,
    @Inject(WORKER_OPTIONS) private readonly options: ResolvedWorkerOptions,
    private readonly leases: LeaseKeeper,
    private readonly rescuer: JobRescuer,
    private readonly attempts: AttemptRunner,
    private readonly hooks: FailureHooks,
    @Inject(QUEUE_STORAGE) queueStorage: QueueStorage,
    private readonly cipher: JobCipher,
  ) {
    this.claimer = new Claimer({
      workerId: this.id,
      claims,
      outcomes,
      queueStorage,
      registry,
      clock,
      options,
      logger: this.logger,
      runAttempt: (job) => this.startJob(job),
      claimedAgain: (jobs) => this.claimedAgain(jobs),
    });
    this.batcher = new CompletionBatcher(
      outcomes,
      workflows,
      this.id,
      clock,
      leases.rowLock,
      options.lease,
      this.claimer,
    );
    this.ending = new AttemptEnding({
      workerId: this.id,
      attempts,
      batcher: this.batcher,
      hooks,
      outcomes,
      clock,
      logger: this.logger,
      slots: this.claimer,
    });
  }

  /**
   * Starts claiming (JobsLifecycle calls it once the whole app has
   * bootstrapped). A start that fails half-way stops what it started.
   */
  async start(): Promise<void> {
    if (!this.options.enabled || this.registry.names().length === 0 || this.state !== 'idle') return;
    this.claimer.start();
    this.attempts.prepare(this.id);
    this.hooks.start(this.id);
    this.state = 'running';
    try {
      await this.connect();
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  private async connect(): Promise<void> {
    await this.claimer.settings.refresh();
    await this.leases.start(this);
    await this.claims.openWorkerConnections();
    this.unsubscribe.push(
      this.notifications.subscribe({
        onNotification: (event) => this.onNotification(event),
        // Anything sent while the connection was down may hide work.
        onReconnect: () => this.claimer.lookForWork(),
      }),
    );
    await this.notifications.start();
    this.unsubscribe.push(this.clock.onChange(() => this.claimer.lookForWork()));
    const poll = setInterval(() => void this.poll(), this.options.pollInterval);
    poll.unref();
    this.timers.push(poll);
    await this.rescuer.start();
    await this.claimer.refreshServedQueues();
    this.claimer.lookForWork();
  }

  private onNotification(event: JobNotification): void {
    if (event.topic === 'queue') {
      this.claimer.queueNotified(event.queue);
    } else if (event.topic === 'cancel') {
      this.cancelLocal(event.jobId);
    } else if (event.topic === 'queues') {
      // A resume or a raised limit may let jobs start at once.
      void this.claimer.settings.refresh().then(() => this.claimer.lookForWork());
    }
  }

  private async poll(): Promise<void> {
    if (this.state !== 'running') return;
    await Promise.all([this.claimer.refreshServedQueues(), this.claimer.settings.refresh()]);
    this.claimer.lookForWork();
  }

  private startJob(job: ClaimedJob): void {
    if (job.unreadable?.missing) {
      this.handBackSealed(job, job.unreadable.keyId);
      return;
    }
    const run = this.attempts.create(job);
    this.running.set(job.id, run);
    void this.attempts
      .run(run)
      .then((result) => {
        // Not the entry any more: the job was claimed again meanwhile, and this attempt's lease is gone.
        const current = this.running.get(job.id) === run;
        if (current) this.running.delete(job.id);
        return this.ending.end(run, result, current);
      })
      .then(this.attemptDone);
  }

  /** Shared by every attempt: a closure per job would be held until its outcome is written. */
  private readonly attemptDone = (): void => {
    if (this.running.size === 0) for (const w of this.idleWaiters.splice(0)) w();
  };

  /**
   * A claim handed this worker jobs it may still run, or still be recording,
   * under an earlier claim: that claim's lease ran out and the rescue (or
   * another instance's) put the job back. The earlier attempt is stopped as
   * for a lost lease (whatever it writes is fenced anyway) and is no longer
   * held, so the renewals and the cancel go to the new attempt only.
   */
  private claimedAgain(jobs: readonly ClaimedJob[]): void {
    if (this.running.size === 0 && this.ending.pending === 0) return;
    for (const job of jobs) {
      const run = this.running.get(job.id);
      if (run) {
        this.running.delete(job.id);
        run.stop('lost-lease');
      }
      this.ending.withdraw(job.id);
    }
  }

  /**
   * A job sealed with a key this instance lacks: back to the queue, its attempt unspent, for an
   * instance with the key. The claimer's hand-backs write it, so stop() waits for the write.
   */
  private handBackSealed(job: ClaimedJob, keyId: string): void {
    if (this.cipher.noteMissing(keyId)) {
      this.logger.warn(
        `Job ${job.name} ${job.id} is encrypted with key '${keyId}', which this instance's keyring lacks: such jobs are handed back unspent for an instance that has it. ` +
          `Potential fix: add key '${keyId}' to JobsModule's "encryption.keys" here.`,
      );
    }
    const runAt = new Date(this.clock.now().getTime() + MISSING_KEY_WAIT_MS);
    this.claimer.handBackStarted(job, runAt, `encrypted with key '${keyId}', which this instance lacks`);
  }

  private cancelLocal(id: string): void {
    const running = this.running.get(id);
    if (running) {
      running.stop('cancel');
      return;
    }
    const withdrawn = this.claimer.withdraw(id);
    if (!withdrawn) return;
    const { job, freesSlot } = withdrawn;
    void this.batcher
      .add({
        job,
        outcome: { kind: 'cancelled', error: { name: 'JobCancelledError', message: `Job ${id} was cancelled` } },
      })
      .then(() => freesSlot && this.claimer.workMayHaveArrived(job.queue));
  }

  held(): HeldJob[] {
    const held: HeldJob[] = this.claimer.unstarted().map((j) => ({ id: j.id, attempt: j.attempt }));
    for (const { job } of this.running.values()) held.push({ id: job.id, attempt: job.attempt, started: job.started });
    for (const { id, attempt } of this.ending.unwritten()) held.push({ id, attempt });
    return held;
  }

  runningCount(): number {
    return this.running.size;
  }

  leasesLost(lost: readonly HeldJob[]): void {
    for (const { id, attempt } of lost) {
      // A renewal sent before this worker claimed the job again speaks of the earlier attempt, stopped already.
      const run = this.running.get(id);
      if (run?.job.attempt === attempt) run.stop('lost-lease');
      this.claimer.withdraw(id, attempt);
    }
  }

  cancelRequested(ids: readonly string[]): void {
    for (const id of ids) this.cancelLocal(id);
  }

  /**
   * Runs before the DataSource closes: stop claiming, give back what never
   * started, let running jobs finish within the grace period, then abort the
   * rest and hand their leases back so another instance takes them at once.
   */
  async stop(): Promise<void> {
    if (this.state !== 'running') return;
    this.state = 'stopping';
    this.claimer.stop();
    const deadline = Date.now() + this.options.shutdownGrace;
    for (const off of this.unsubscribe.splice(0)) off();
    for (const t of this.timers.splice(0)) clearInterval(t);
    await this.rescuer.stop();
    await this.notifications.stop();
    await this.claimer.handBackUnstarted();
    await this.claims
      .leaveWaits(this.id)
      .catch((e: Error) => this.logger.warn(`Leaving slot waits failed: ${e.message}`));
    if (this.running.size) {
      this.logger.log(`Waiting up to ${this.options.shutdownGrace} ms for ${this.running.size} running job(s)`);
      await Promise.race([
        new Promise<void>((r) => this.idleWaiters.push(r)),
        new Promise<void>((r) => setTimeout(r, this.options.shutdownGrace).unref()),
      ]);
    }
    const leftovers = [...this.running.values()];
    for (const run of leftovers) run.stop('shutdown');
    if (leftovers.length) {
      this.logger.warn(`Handing back ${leftovers.length} job(s) still running after the grace period`);
      await this.outcomes
        .handBack(
          this.id,
          leftovers.map(({ job }) => ({ id: job.id, attempt: job.attempt, started: job.started })),
          this.clock.now(),
          serializeError(new WorkerShutdownError()),
        )
        .catch((e: Error) => this.logger.error(`Handing back running jobs failed: ${e.message}`));
    }
    await this.attempts.drainProgress();
    const unrecorded = await this.batcher.drain(Math.max(5_000, this.options.shutdownGrace));
    if (unrecorded > 0) {
      this.logger.error(
        `Shutting down with ${unrecorded} job outcome(s) not recorded (database unreachable); those jobs run again once their lease expires`,
      );
    }
    // Jobs that claims on those writes brought in.
    await this.claimer.handBackUnstarted();
    // Hooks started by outcomes written during the grace period share what is left of it.
    await this.hooks.stop(Math.max(0, deadline - Date.now()));
    await this.leases.stop();
    await this.claims.closeWorkerConnections();
    this.state = 'stopped';
  }
}
