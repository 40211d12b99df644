import { Inject, Injectable, type Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { JobRegistry } from '../discovery/job-registry.js';
import {
  checkName,
  checkId,
  checkOptionKeys,
  checkOptions,
  databaseCall,
  describeValue,
  JobEvents,
  JobsError,
  JobsNotFoundError,
  optionShape,
  type BatchInfo,
  type ExecutionPageOptions,
  type JobExecutionPage,
  type JobHandler,
  type JobInfo,
  type NewJob,
  type PayloadOf,
  JOB_WRITE_RULES,
  type JobWriteRules,
} from '../model/index.js';
import { JOB_CONTROL_STORAGE, type JobControlStorage } from '../storage/jobs/control/job-control-storage.interface.js';
import { ENQUEUE_STORAGE, type EnqueueStorage } from '../storage/jobs/enqueue/enqueue-storage.interface.js';
import {
  WORKFLOW_STORAGE,
  type BatchGraph,
  type BatchMember,
  type WorkflowStorage,
} from '../storage/workflows/workflow-storage.interface.js';
import { ChainDraft, FlowDraft } from './flow-drafts.js';
import { InlineRunner } from './inline-runner.js';
import { defaultContext, withDefaultContext } from './job-context-capture.js';
import { JobFactory, type JobRef } from './job-factory.js';
import {
  ENQUEUE_OPTIONS_SHAPE,
  RETRY_JOB_SHAPE,
  WRITE_OPTIONS_SHAPE,
  type EnqueueOptions,
  type GetJobOptions,
  type RetryJobOptions,
  type WriteOptions,
} from './queue-options.js';
import { JobReads, type BatchMembersOptions } from './job-reads.js';
import { checkManager } from './manager.js';
import { WorkflowWriter } from './workflow-writer.js';

export type { JobRef } from './job-factory.js';
export type { BatchMembersOptions } from './job-reads.js';

/**
 * What an enqueue did: `created` is false when a job with the same unique
 * key already held it, and `id` is then that job's (which `replace` may
 * have updated).
 */
export interface EnqueueResult {
  /** The job's id: the new job's, or the id of the job already holding the unique key. */
  id: string;
  /** True when this call wrote a new job; false when a job holding the same unique key was found instead. */
  created: boolean;
}

/** One job of an `enqueueMany()` call: the job (class or name), its payload and its options. */
export interface EnqueueItem<H extends JobHandler = JobHandler> {
  /** The job: its `@Job` class (the payload is then type-checked) or its name. */
  job: JobRef<H>;
  /** The job's payload: plain JSON data, at most `maxPayloadBytes` once serialised. */
  payload: PayloadOf<H>;
  /** This job's options; `manager` belongs to the whole `enqueueMany()` call, and `after` is refused here. */
  options?: Omit<EnqueueOptions, 'manager' | 'after'>;
}

/**
 * Jobs per insert statement in a big enqueueMany. Chunks let PostgreSQL
 * insert one while the next is built (20k jobs of mixed shape: ~60k -> ~75k
 * jobs/s over one statement, measured); much smaller ones pay the
 * per-statement cost more often.
 */
const ENQUEUE_CHUNK = 2000;

const ENQUEUE_ITEM_SHAPE = optionShape<EnqueueItem>({ job: true, payload: true, options: ENQUEUE_OPTIONS_SHAPE });

/** Starts work and looks after it: enqueue, inspect, cancel, retry; chains, flows and batches. */
@Injectable()
export class JobQueue {
  private readonly reads: JobReads;
  private readonly inline: InlineRunner;
  private readonly contextFrom: JobWriteRules['contextFrom'];

  constructor(
    @Inject(ENQUEUE_STORAGE) private readonly storage: EnqueueStorage,
    @Inject(JOB_CONTROL_STORAGE) private readonly control: JobControlStorage,
    @Inject(WORKFLOW_STORAGE) private readonly workflows: WorkflowStorage,
    private readonly factory: JobFactory,
    private readonly writer: WorkflowWriter,
    private readonly events: JobEvents,
    registry: JobRegistry,
    moduleRef: ModuleRef,
    @Inject(JOB_WRITE_RULES) writeRules: JobWriteRules,
  ) {
    this.reads = new JobReads(control, workflows);
    this.contextFrom = writeRules.contextFrom;
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
  async enqueue<H extends JobHandler>(
    job: Type<H> | string,
    payload: PayloadOf<H>,
    options: EnqueueOptions = {},
  ): Promise<EnqueueResult> {
    // Named before the job is resolved, so that even a bad options argument says which job it came with.
    const where =
      typeof job === 'string' ? `enqueue('${job}')` : typeof job === 'function' ? `enqueue(${job.name})` : 'enqueue()';
    const given = checkOptions(where, options, '{ delay: 5000 }', ENQUEUE_OPTIONS_SHAPE) ?? {};
    const manager = checkManager(where, given.manager);
    if (given.after !== undefined) return this.writer.enqueueAfter(job, payload, given);
    const now = this.factory.clock.now();
    const { manager: _manager, ...rest } = given;
    const row = this.factory.build(job, payload, rest, now, true);
    const duplicates = await databaseCall(`enqueue('${row.name}')`, () => this.storage.insertJobs([row], now, manager));
    const holder = duplicates.get(row.id);
    if (holder) return { id: holder, created: false };
    if (this.events.enqueuesObserved) this.events.enqueued({ jobs: [row], inTransaction: manager !== undefined });
    return { id: row.id, created: true };
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
  async enqueueMany(items: ReadonlyArray<EnqueueItem>, options: WriteOptions = {}): Promise<EnqueueResult[]> {
    if (!Array.isArray(items)) {
      throw new JobsError(
        `enqueueMany(): the items must be an array, got ${describeValue(items)}. Potential fix: enqueueMany([{ job: SendReceipt, payload }]).`,
      );
    }
    const tx = checkManager(
      'enqueueMany()',
      checkOptions('enqueueMany()', options, '{ manager }', WRITE_OPTIONS_SHAPE)?.manager,
    );
    const now = this.factory.clock.now();
    const ids: string[] = [];
    // Read once for the call: items without a context of their own share it.
    const fallback = defaultContext('enqueueMany()', this.contextFrom);
    // Kept for the enqueue observers (metrics) only: a big call's rows otherwise die with their chunk.
    const written: NewJob[] | null = this.events.enqueuesObserved ? [] : null;
    const build = (from: number, to: number): NewJob[] => {
      const rows: NewJob[] = [];
      // By index, not map(): map() skips the holes of a sparse array, and a missing item must be refused.
      for (let i = from; i < Math.min(to, items.length); i++) {
        const item = items[i];
        if (!item || typeof item !== 'object' || (typeof item.job !== 'function' && typeof item.job !== 'string')) {
          throw new JobsError(
            `enqueueMany(): item ${i} has no "job" (got ${describeValue(item)}). Nothing was written. Potential fix: pass { job: HandlerClass, payload }.`,
          );
        }
        // An item's keys are checked like options: { job, payload, option: {...} } would drop its options.
        checkOptionKeys(`enqueueMany(): item ${i}`, item, ENQUEUE_ITEM_SHAPE);
        const options = withDefaultContext(item.options ?? {}, fallback);
        rows.push(this.factory.build(item.job, item.payload, options, now, true));
      }
      for (const r of rows) ids.push(r.id);
      written?.push(...rows);
      return rows;
    };
    let duplicates: Map<string, string>;
    if (items.length <= ENQUEUE_CHUNK) {
      const rows = build(0, items.length);
      duplicates = await databaseCall('enqueueMany()', () => this.storage.insertJobs(rows, now, tx));
    } else {
      // Built chunk by chunk while earlier chunks are being inserted, all in one transaction.
      const chunks = function* (): Generator<NewJob[]> {
        for (let i = 0; i < items.length; i += ENQUEUE_CHUNK) yield build(i, i + ENQUEUE_CHUNK);
      };
      duplicates = await databaseCall('enqueueMany()', () => this.storage.insertJobChunks(chunks(), now, tx));
    }
    if (written) {
      const jobs = duplicates.size ? written.filter((r) => !duplicates.has(r.id)) : written;
      this.events.enqueued({ jobs, inTransaction: tx !== undefined });
    }
    return ids.map((id) => {
      const holder = duplicates.get(id);
      return holder ? { id: holder, created: false } : { id, created: true };
    });
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
   * The job's execution history a page at a time, newest first (`get()`
   * shows the latest attempts); pass `after: page.next` for older ones.
   * Null if there is no such job.
   */
  executions(id: string, options: ExecutionPageOptions = {}): Promise<JobExecutionPage | null> {
    return this.reads.executions(id, options);
  }

  /** Queued or waiting → cancelled now; active → its signal aborts and it ends cancelled. */
  async cancel(id: string): Promise<void> {
    id = checkId('cancel()', id);
    const result = await databaseCall(`cancel(${id})`, () => this.control.cancel(id, this.factory.clock.now()));
    if (result.outcome === 'not-found') {
      throw new JobsNotFoundError(`cancel(${id}): no such job. Potential fix: check the id returned by enqueue().`);
    }
    if (result.outcome === 'finished') {
      throw new JobsError(
        `cancel(${id}): the job already ended "${result.state}", so there is nothing to cancel. Potential fix: only queued, waiting or active jobs can be cancelled; use retry() to run a finished job again.`,
      );
    }
  }

  /**
   * Failed, cancelled or skipped → queued again with fresh attempts; reopens
   * its batch and skipped dependents. Its finished steps stay, so the next
   * attempt answers them from storage; `resetSteps: true` forgets them and
   * runs the job from scratch.
   */
  async retry(id: string, options: RetryJobOptions = {}): Promise<void> {
    id = checkId('retry()', id);
    const o = checkOptions(`retry(${id})`, options, '{ resetSteps: true }', RETRY_JOB_SHAPE) ?? {};
    if (o.resetSteps !== undefined && typeof o.resetSteps !== 'boolean') {
      throw new JobsError(
        `retry(${id}): "resetSteps" must be a boolean, got ${describeValue(o.resetSteps)}. Potential fix: retry(id, { resetSteps: true }).`,
      );
    }
    const result = await databaseCall(`retry(${id})`, () =>
      this.control.retry(id, this.factory.clock.now(), o.resetSteps === true),
    );
    if (result.outcome === 'not-found') {
      throw new JobsNotFoundError(`retry(${id}): no such job. Potential fix: check the id returned by enqueue().`);
    }
    if (result.outcome === 'not-retryable') {
      throw new JobsError(
        `retry(${id}): the job is "${result.state}"; only failed, cancelled or skipped jobs can be retried. Potential fix: wait until it has ended, or cancel() it first.`,
      );
    }
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
  async cancelBatch(id: string): Promise<void> {
    id = checkId('cancelBatch()', id, 'batch');
    const result = await databaseCall(`cancelBatch(${id})`, () =>
      this.workflows.cancelBatch(id, this.factory.clock.now()),
    );
    if (result === 'not-found')
      throw new JobsNotFoundError(
        `cancelBatch(${id}): no such batch. Potential fix: check the id returned by dispatch().`,
      );
    if (result === 'finished')
      throw new JobsError(
        `cancelBatch(${id}): the batch has already settled. Potential fix: nothing to do; retry() a member to reopen it.`,
      );
  }

  /** Deletes a settled batch and its members (the callbacks stay, as ordinary jobs). */
  async deleteBatch(id: string): Promise<void> {
    id = checkId('deleteBatch()', id, 'batch');
    const result = await databaseCall(`deleteBatch(${id})`, () => this.workflows.deleteBatch(id));
    if (result === 'not-found')
      throw new JobsNotFoundError(
        `deleteBatch(${id}): no such batch. Potential fix: check the id returned by dispatch().`,
      );
    if (result === 'executing') {
      throw new JobsError(
        `deleteBatch(${id}): the batch is still executing. Potential fix: wait until it settles, or cancelBatch() it first.`,
      );
    }
  }

  /** The name a job reference stands for (validated). */
  resolveName(job: JobRef): string {
    return this.factory.resolveName(job);
  }
}
