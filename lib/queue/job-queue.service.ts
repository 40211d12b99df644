import { Inject, Injectable, type Type } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import {
  JobsError,
  type BatchInfo,
  type JobHandler,
  type JobInfo,
  type JobState,
  type NewJob,
  type PayloadOf,
} from '../model/index.js';
import { JOB_STORAGE, type JobStorage } from '../storage/jobs/job-storage.interface.js';
import {
  WORKFLOW_STORAGE,
  type BatchGraph,
  type BatchMember,
  type WorkflowStorage,
} from '../storage/workflows/workflow-storage.interface.js';
import { ChainDraft, FlowDraft } from './flow-drafts.js';
import { JobFactory, type JobRef } from './job-factory.js';
import type { EnqueueOptions } from './queue-options.js';
import { WorkflowWriter } from './workflow-writer.js';

export type { JobRef } from './job-factory.js';

export interface EnqueueItem<H extends JobHandler = JobHandler> {
  job: JobRef<H>;
  payload: PayloadOf<H>;
  options?: Omit<EnqueueOptions, 'manager' | 'after'>;
}

/**
 * Jobs per insert statement in a big enqueueMany. Chunks let PostgreSQL
 * insert one while the next is built (20k jobs of mixed shape: ~60k -> ~75k
 * jobs/s over one statement, measured); much smaller ones pay the
 * per-statement cost more often.
 */
const ENQUEUE_CHUNK = 2000;

/** Starts work and looks after it: enqueue, inspect, cancel, retry; chains, flows and batches. */
@Injectable()
export class JobQueue {
  constructor(
    @Inject(JOB_STORAGE) private readonly storage: JobStorage,
    @Inject(WORKFLOW_STORAGE) private readonly workflows: WorkflowStorage,
    private readonly factory: JobFactory,
    private readonly writer: WorkflowWriter,
  ) {}

  async enqueue<H extends JobHandler>(
    job: Type<H> | string,
    payload: PayloadOf<H>,
    options: EnqueueOptions = {},
  ): Promise<{ id: string }> {
    if (options.after !== undefined) return this.writer.enqueueAfter(job, payload, options);
    const now = this.factory.clock.now();
    const { manager, ...rest } = options;
    const row = this.factory.build(job, payload, rest, now);
    await this.storage.insertJobs([row], now, manager);
    return { id: row.id };
  }

  /** Many jobs at once: all are written or none. */
  async enqueueMany(
    items: ReadonlyArray<EnqueueItem>,
    options: { manager?: EntityManager } = {},
  ): Promise<Array<{ id: string }>> {
    const now = this.factory.clock.now();
    const tx = options.manager;
    const ids: Array<{ id: string }> = [];
    const build = (from: number, to: number): NewJob[] => {
      const rows = items.slice(from, to).map((item, k) => {
        if (!item || (typeof item.job !== 'function' && typeof item.job !== 'string')) {
          throw new JobsError(
            `enqueueMany: item ${from + k} has no "job". Potential fix: pass { job: HandlerClass, payload }.`,
          );
        }
        return this.factory.build(item.job, item.payload, item.options ?? {}, now);
      });
      for (const r of rows) ids.push({ id: r.id });
      return rows;
    };
    if (items.length <= ENQUEUE_CHUNK) {
      await this.storage.insertJobs(build(0, items.length), now, tx);
      return ids;
    }
    // Built chunk by chunk while earlier chunks are being inserted, all in one transaction.
    function* chunks(): Generator<NewJob[]> {
      for (let i = 0; i < items.length; i += ENQUEUE_CHUNK) yield build(i, i + ENQUEUE_CHUNK);
    }
    await this.storage.insertJobChunks(chunks(), now, tx);
    return ids;
  }

  /** Jobs that run one after another: `chain().then(A, a).then(B, b).dispatch()`. */
  chain(): ChainDraft {
    return new ChainDraft(this.writer);
  }

  /** A DAG by keys: `flow().add('a', A, a).add('b', B, b, { after: ['a'] }).dispatch()`. */
  flow(): FlowDraft {
    return new FlowDraft(this.writer);
  }

  get(id: string): Promise<JobInfo | null> {
    return this.storage.getJob(id);
  }

  /** Queued or waiting → cancelled now; active → its signal aborts and it ends cancelled. */
  async cancel(id: string): Promise<void> {
    const result = await this.storage.cancel(id, this.factory.clock.now());
    if (result.outcome === 'not-found') {
      throw new JobsError(`cancel(${id}): no such job. Potential fix: check the id returned by enqueue().`);
    }
    if (result.outcome === 'finished') {
      throw new JobsError(
        `cancel(${id}): the job already ended "${result.state}", so there is nothing to cancel. Potential fix: only queued, waiting or active jobs can be cancelled; use retry() to run a finished job again.`,
      );
    }
  }

  /** Failed, cancelled or skipped → queued again with fresh attempts; reopens its batch and skipped dependents. */
  async retry(id: string): Promise<void> {
    const result = await this.storage.retry(id, this.factory.clock.now());
    if (result.outcome === 'not-found') {
      throw new JobsError(`retry(${id}): no such job. Potential fix: check the id returned by enqueue().`);
    }
    if (result.outcome === 'not-retryable') {
      throw new JobsError(
        `retry(${id}): the job is "${result.state}"; only failed, cancelled or skipped jobs can be retried. Potential fix: wait until it has ended, or cancel() it first.`,
      );
    }
  }

  batchStatus(id: string): Promise<BatchInfo | null> {
    return this.workflows.batchStatus(id);
  }

  batchMembers(id: string, options: { state?: JobState; skip?: number; take?: number } = {}): Promise<BatchMember[]> {
    const take = options.take ?? 100;
    const skip = options.skip ?? 0;
    if (!Number.isInteger(take) || take < 1 || take > 10_000 || !Number.isInteger(skip) || skip < 0) {
      throw new JobsError(
        `batchMembers(${id}): "take" must be 1..10000 and "skip" >= 0. Potential fix: { skip: 0, take: 100 }.`,
      );
    }
    return this.workflows.batchMembers(id, { state: options.state, skip, take });
  }

  batchGraph(id: string): Promise<BatchGraph | null> {
    return this.workflows.batchGraph(id);
  }

  /** Members not started → cancelled; running ones have their signal aborted; `finally` still runs. */
  async cancelBatch(id: string): Promise<void> {
    const result = await this.workflows.cancelBatch(id, this.factory.clock.now());
    if (result === 'not-found')
      throw new JobsError(`cancelBatch(${id}): no such batch. Potential fix: check the id returned by dispatch().`);
    if (result === 'finished')
      throw new JobsError(
        `cancelBatch(${id}): the batch has already settled. Potential fix: nothing to do; retry() a member to reopen it.`,
      );
  }

  /** Deletes a settled batch and its members (the callbacks stay, as ordinary jobs). */
  async deleteBatch(id: string): Promise<void> {
    const result = await this.workflows.deleteBatch(id);
    if (result === 'not-found')
      throw new JobsError(`deleteBatch(${id}): no such batch. Potential fix: check the id returned by dispatch().`);
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
