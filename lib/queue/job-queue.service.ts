import { Inject, Injectable, type OnModuleDestroy, type Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { JobRegistry } from '../discovery/job-registry.js';
import {
  checkId,
  checkName,
  databaseCall,
  checkOptions,
  describeValue,
  JobEvents,
  JobsNotFoundError,
  type BatchInfo,
  type ExecutionPageOptions,
  type JobExecutionPage,
  type JobHandler,
  type JobInfo,
  type PayloadOf,
  JOB_WRITE_RULES,
  type JobWriteRules,
} from '../model/index.js';
import { JOB_CONTROL_STORAGE, type JobControlStorage } from '../storage/jobs/control/job-control-storage.interface.js';
import { ENQUEUE_STORAGE, type EnqueueStorage } from '../storage/jobs/enqueue/enqueue-storage.interface.js';
import { SIGNAL_STORAGE, type SignalStorage } from '../storage/jobs/signals/signal-storage.interface.js';
import { JobNotifications } from '../storage/notifications/job-notifications.interface.js';
import {
  WORKFLOW_STORAGE,
  type BatchGraph,
  type BatchMember,
  type WorkflowStorage,
} from '../storage/workflows/workflow-storage.interface.js';
import { ChainDraft, FlowDraft } from './flow-drafts.js';
import { InlineRunner } from './inline-runner.js';
import { JobActions } from './job-actions.js';
import { JobEnqueuer, type EnqueueItem, type EnqueueResult } from './job-enqueuer.js';
import { JobFactory, type JobRef } from './job-factory.js';
import type { GetEventOptions, SignalOptions } from './durable-options.js';
import { checkWaitTimeout, JobEndWaiters } from './job-end-waiters.js';
import { JobSignals } from './job-signals.js';
import {
  WAIT_FOR_JOB_SHAPE,
  type EnqueueOptions,
  type GetJobOptions,
  type RetryJobOptions,
  type WaitForJobOptions,
  type WriteOptions,
} from './queue-options.js';
import { JobReads, type BatchMembersOptions } from './job-reads.js';
import { WorkflowWriter } from './workflow-writer.js';

export type { EnqueueItem, EnqueueResult } from './job-enqueuer.js';
export type { JobRef } from './job-factory.js';
export type { BatchMembersOptions } from './job-reads.js';

/** Starts work and looks after it: enqueue, inspect, cancel, retry; chains, flows and batches. */
@Injectable()
export class JobQueue implements OnModuleDestroy {
  private readonly enqueuer: JobEnqueuer;
  private readonly waiters: JobEndWaiters;
  private readonly signals: JobSignals;
  private readonly reads: JobReads;
  private readonly actions: JobActions;
  private readonly inline: InlineRunner;

  constructor(
    @Inject(ENQUEUE_STORAGE) storage: EnqueueStorage,
    @Inject(JOB_CONTROL_STORAGE) control: JobControlStorage,
    @Inject(WORKFLOW_STORAGE) workflows: WorkflowStorage,
    private readonly factory: JobFactory,
    private readonly writer: WorkflowWriter,
    events: JobEvents,
    registry: JobRegistry,
    moduleRef: ModuleRef,
    @Inject(JOB_WRITE_RULES) writeRules: JobWriteRules,
    notifications: JobNotifications,
    @Inject(SIGNAL_STORAGE) signals: SignalStorage,
  ) {
    this.waiters = new JobEndWaiters(control, notifications);
    this.signals = new JobSignals(signals, this.waiters, factory.clock, writeRules.maxPayloadBytes);
    this.enqueuer = new JobEnqueuer(storage, factory, writer, events, writeRules.contextFrom);
    this.reads = new JobReads(control, workflows);
    this.actions = new JobActions(control, workflows, factory.clock);
    this.inline = new InlineRunner(
      registry,
      moduleRef,
      factory.clock,
      writeRules.maxPayloadBytes,
      writeRules.contextFrom,
    );
  }

  /**
   * Writes one job, due at once unless `delay` or `runAt` says later; with `manager`, in the caller's
   * transaction, so it exists only if that commits. With `after`, the job waits (`waiting`) until its
   * parents settle. Resolves with the job's id and whether this call wrote it (see EnqueueResult).
   * Bad input (an unknown job, a payload JSON would change or over `maxPayloadBytes`, a bad option,
   * an unknown parent) throws a JobsError and writes nothing.
   */
  enqueue<H extends JobHandler>(
    job: Type<H> | string,
    payload: PayloadOf<H>,
    options: EnqueueOptions = {},
  ): Promise<EnqueueResult> {
    return this.enqueuer.one(job, payload, options);
  }

  /**
   * Runs the job's handler now, in this process, and resolves with what it returns or rejects with
   * what it throws: one attempt (`ctx.attempt` 1 of 1), no retry, no queue, no job row, no
   * `onFailure`, no job events. The payload is checked as `enqueue()` checks it (an unknown job, one
   * another service runs, or a bad payload throws a JobsError) and the handler gets its JSON
   * round trip, as from a worker; its interceptors and its `timeout` apply. `ctx.progress()` records
   * nothing, and what needs a job row (`ctx.step()`, `sleep()`, `transaction()`, `continueWith()`,
   * `addToBatch()`, `snooze()`) throws a JobsError. Nothing of it survives a crash: for tests, a
   * CLI, a synchronous fallback, not for work that must happen.
   */
  async runInline<H extends JobHandler>(
    job: Type<H> | string,
    payload: PayloadOf<H>,
  ): Promise<Awaited<ReturnType<H['run']>>> {
    return (await this.inline.run(job, payload)) as Awaited<ReturnType<H['run']>>;
  }

  /** Many jobs at once: all are written or none. */
  enqueueMany(items: ReadonlyArray<EnqueueItem>, options: WriteOptions = {}): Promise<EnqueueResult[]> {
    return this.enqueuer.many(items, options);
  }

  /** Jobs that run one after another: `chain().then(A, a).then(B, b).dispatch()`. */
  chain(): ChainDraft {
    return new ChainDraft(this.writer);
  }

  /**
   * A DAG by keys: `flow().add('a', A, a).add('b', B, b, { after: ['a'] }).dispatch()`, written with
   * a batch record; `name` (optional) is that record's name. A name that is blank, over 200
   * characters or holds control characters throws a JobsError.
   */
  flow(name?: string): FlowDraft {
    if (name !== undefined) checkName('flow()', 'name', name, 'publish-article');
    return new FlowDraft(this.writer, name ?? null);
  }

  /**
   * The job with its history and its finished steps; null when no job has
   * this id. `stepResults: true` adds each step's stored result. Read from
   * the primary, so it sees the caller's own writes.
   */
  get(id: string, options: GetJobOptions = {}): Promise<JobInfo | null> {
    return this.reads.get(id, options);
  }

  /**
   * Resolves with the job (as `get()` reads it) once it has ended: succeeded, failed, cancelled or
   * skipped, whichever instance ran it; at once if it already has. Woken by the database when the job
   * ends (every waiter of the process shares the instance's one listening connection), with a
   * re-check every few seconds for a notification lost with a connection. `timeout` (ms, optional)
   * bounds the wait: past it, a JobsError names the job's state. A job that does not exist, or is
   * deleted while waited on, rejects with a JobsNotFoundError. A retried job that was waited on
   * ends again later: wait again for that end.
   */
  async waitFor(id: string, options: WaitForJobOptions = {}): Promise<JobInfo> {
    const where = `waitFor(${typeof id === 'string' ? id : describeValue(id)})`;
    id = checkId(where, id);
    const timeout = checkWaitTimeout(
      where,
      checkOptions(where, options, '{ timeout: 30_000 }', WAIT_FOR_JOB_SHAPE)?.timeout,
    );
    await databaseCall(where, () => this.waiters.wait(where, id, timeout));
    const info = await this.reads.get(id);
    if (!info)
      throw new JobsNotFoundError(
        `${where}: the job was deleted as it ended. Potential fix: keep finished jobs longer (retention).`,
      );
    return info;
  }

  /**
   * Stores a signal for the job, kept until a `ctx.waitForSignal(name)` of it consumes it (the oldest
   * first), whether the job is running, waiting in a `waitForSignal` or not started yet; a job that
   * waits for `name` is made due at once. `payload` (optional) is JSON, bounded by `maxPayloadBytes`.
   * With `manager`, the signal is written in the caller's transaction and exists only if that commits.
   * A job that has ended or does not exist is refused with a JobsError (JobsNotFoundError), and nothing
   * is stored.
   */
  async signal(id: string, name: string, payload?: unknown, options?: SignalOptions): Promise<void> {
    await this.signals.signal(id, name, payload, options);
  }

  /**
   * The value the job published under `key` with `ctx.setEvent()` (its last write), or null when it has
   * published none. With `timeout` (ms), waits that long for it to be published, woken when it is; it
   * resolves with null at the timeout, and at once when the job ends without publishing it. An unknown
   * job rejects with a JobsNotFoundError.
   */
  getEvent<T = unknown>(id: string, key: string, options?: GetEventOptions): Promise<T | null> {
    return this.signals.getEvent<T>(id, key, options);
  }

  /** Open waits end with a JobsError: nothing will wake them once the app is closed. */
  async onModuleDestroy(): Promise<void> {
    await this.waiters.close();
  }

  /**
   * The job's execution history a page at a time, newest first (`get()`
   * shows the latest attempts); pass `after: page.next` for older ones.
   * Null if there is no such job.
   */
  executions(id: string, options: ExecutionPageOptions = {}): Promise<JobExecutionPage | null> {
    return this.reads.executions(id, options);
  }

  /** Queued or waiting → cancelled now; active → its signal aborts and it ends cancelled. */
  cancel(id: string): Promise<void> {
    return this.actions.cancel(id);
  }

  /**
   * Failed, cancelled or skipped → queued again with fresh attempts; reopens
   * its batch and skipped dependents. Its finished steps stay, so the next
   * attempt answers them from storage; `resetSteps: true` forgets them and
   * runs the job from scratch; `fromStep: 'name'` forgets that step and the
   * steps recorded after it, so the job runs again from there. A step the
   * job never recorded is a JobsError, and nothing is written.
   */
  retry(id: string, options: RetryJobOptions = {}): Promise<void> {
    return this.actions.retry(id, options);
  }

  /**
   * The batch's state, its counts of members by outcome, its progress and times; null when no batch
   * has this id. A malformed id throws a JobsError.
   */
  batchStatus(id: string): Promise<BatchInfo | null> {
    return this.reads.batchStatus(id);
  }

  /**
   * A page of the batch's members, oldest first: `state` keeps one state, `skip` (default 0) and
   * `take` (default 100, at most 10 000) page. Empty when no batch has this id. A malformed id or
   * option throws a JobsError.
   */
  batchMembers(id: string, options: BatchMembersOptions = {}): Promise<BatchMember[]> {
    return this.reads.batchMembers(id, options);
  }

  /**
   * The batch as a graph, as the dashboard draws it: its members and its then/catch/finally jobs as
   * nodes, their dependencies as edges. Null when no batch has this id; a malformed id throws a JobsError.
   */
  batchGraph(id: string): Promise<BatchGraph | null> {
    return this.reads.batchGraph(id);
  }

  /** Members not started → cancelled; running ones have their signal aborted; `finally` still runs. */
  cancelBatch(id: string): Promise<void> {
    return this.actions.cancelBatch(id);
  }

  /** Deletes a settled batch and its members (the callbacks stay, as ordinary jobs). */
  deleteBatch(id: string): Promise<void> {
    return this.actions.deleteBatch(id);
  }

  /** The name a job reference stands for (validated). */
  resolveName(job: JobRef): string {
    return this.factory.resolveName(job);
  }
}
