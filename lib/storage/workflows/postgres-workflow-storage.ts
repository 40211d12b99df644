import type { EntityManager } from 'typeorm';
import {
  isUuid,
  JobsError,
  type BatchInfo,
  type Continuation,
  type FinishedAttempt,
  type JobCipher,
  type JobState,
  type NewJob,
} from '../../model/index.js';
import {
  asStorageTx,
  executorFor,
  inOneSnapshot,
  PoolExecutor,
  underSavepoint,
  UNDONE,
  type SqlExecutor,
} from '../sql/sql-executor.js';
import { dueQueues, encodeFlags, encodeNewJobColumns, queueFeatures } from '../jobs/job-encoding.js';
import { newJobParams } from '../jobs/new-job-params.js';
import type { ArgsOf, Statement } from '../sql/named-params.js';
import { jobSummaryFromRow } from '../jobs/job-rows.js';
import type { PostgresEnqueueStorage } from '../jobs/enqueue/postgres-enqueue-storage.js';
import type { PostgresOutcomeStorage } from '../jobs/outcomes/postgres-outcome-storage.js';
import { batchInfoFromRow } from './batch-rows.js';
import { edgeRow, edgesBefore } from './edge-rows.js';
import type { StorageContext } from '../sql/storage-context.js';
import type { StorageTx, TxScope } from '../sql/storage-tx.interface.js';
import type {
  BatchGraph,
  BatchMember,
  JobGraph,
  NewDependency,
  ParentStates,
  WorkflowStorage,
} from './workflow-storage.interface.js';
import { workflowStatements, addToBatchArgs, type WorkflowStatements } from './workflow-statements.js';

type Row = Record<string, unknown>;

export class PostgresWorkflowStorage implements WorkflowStorage {
  private readonly cipher: JobCipher;
  private readonly sql: WorkflowStatements;
  private readonly pool: PoolExecutor;
  private readonly channel: string;

  constructor(
    context: StorageContext,
    /** Flags the queues a graph's jobs newly put groups or serial keys in, in the graph's transaction. */
    private readonly enqueue: PostgresEnqueueStorage,
    /** Outcomes with continuations are written here, in a transaction with the continuations. */
    private readonly outcomes: PostgresOutcomeStorage,
  ) {
    this.sql = workflowStatements(context.schema);
    this.pool = context.executor;
    this.channel = context.channel;
    this.cipher = context.cipher;
  }

  private run<K extends keyof WorkflowStatements>(
    key: K,
    args: ArgsOf<WorkflowStatements[K]>,
    scope?: TxScope | SqlExecutor,
  ): Promise<Row[]> {
    const statement = this.sql[key] as Statement<ArgsOf<WorkflowStatements[K]>>;
    return statement.run(executorFor(scope as TxScope | undefined, this.pool), args);
  }

  transaction<T>(fn: (tx: StorageTx) => Promise<T>, outer?: EntityManager): Promise<T> {
    return executorFor(outer, this.pool).transaction((tx) => fn(asStorageTx(tx)));
  }

  async insertGraph(graph: JobGraph, now: Date, tx?: TxScope): Promise<void> {
    try {
      await this.writeGraph(graph, now, tx);
    } catch (error) {
      throw heldUniqueKey(error) ?? error;
    }
  }

  async insertGraphUnlessHeld(graph: JobGraph, now: Date, tx: StorageTx): Promise<boolean> {
    const executor = executorFor(tx, this.pool);
    const written = await underSavepoint(
      executor,
      UNLESS_HELD,
      () => this.writeGraph(graph, now, tx),
      isUniqueKeyViolation,
    );
    return written !== UNDONE;
  }

  private async writeGraph(graph: JobGraph, now: Date, tx?: TxScope): Promise<void> {
    const batches = (graph.batches ?? []).map((b) => ({
      id: b.id,
      name: b.name,
      state: b.state,
      total: b.total,
      pending: b.state === 'executing' ? b.total : 0,
      succeeded: 0,
      options: b.options,
    }));
    const children = new Set((graph.dependencies ?? []).map((d) => d.childId));
    const deps = (graph.dependencies ?? []).map(edgeRow);
    const values = {
      batches: JSON.stringify(batches),
      due: dueQueues(graph.jobs, now),
      edges: JSON.stringify(deps),
      now,
      channel: this.channel,
      ...newJobParams(encodeNewJobColumns(graph.jobs)),
      has_dependents: encodeFlags(graph.jobs, (j) => j.hasDependents ?? false),
      has_parents: encodeFlags(graph.jobs, (j) => children.has(j.id)),
    };
    const executor = executorFor(tx, this.pool);
    if (!queueFeatures(graph.jobs).groups.length && !queueFeatures(graph.jobs).serial.length) {
      await this.run('insertGraph', values, executor);
      return;
    }
    await executor.transaction(async (t) => {
      await this.enqueue.flagQueuesOn(t, graph.jobs, now);
      await this.run('insertGraph', values, t);
    });
  }

  async lockParents(jobIds: string[], batchIds: string[], tx: StorageTx): Promise<ParentStates> {
    const jobs = jobIds.length ? await this.run('lockParentJobs', { ids: jobIds }, tx) : [];
    const batches = batchIds.length ? await this.run('lockParentBatches', { ids: batchIds }, tx) : [];
    return {
      jobs: new Map(jobs.map((r) => [r.id as string, r.state as JobState])),
      batches: new Map(batches.map((r) => [r.id as string, { state: r.state as string, failed: r.failed as number }])),
    };
  }

  async markParents(jobIds: string[], tx: StorageTx): Promise<void> {
    if (jobIds.length) await this.run('markParents', { ids: jobIds }, tx);
  }

  async addToBatch(batchId: string, job: NewJob, now: Date, before?: string): Promise<boolean> {
    const added = (hasDependents: boolean) => addToBatchArgs(batchId, job, now, this.channel, hasDependents);
    try {
      if (!before && !job.groupKey && !job.serialKey) return (await this.run('addToBatch', added(false))).length > 0;
      return await this.pool.transaction(async (t) => {
        if (job.groupKey || job.serialKey) await this.enqueue.flagQueuesOn(t, [job], now);
        // The adder is active, so its edges are unsettled. Its batch, then its waiting dependents, are
        // locked in the order a settle takes them (job, batch, children), so the two cannot deadlock.
        if (before) await this.run('lockBatch', { batchId }, t);
        const dependents = before ? await this.run('waitingDependents', { jobId: before }, t) : [];
        const rows = await this.run('addToBatch', added(dependents.length > 0), t);
        if (!rows.length) return false;
        await this.waitAlsoOn([job.id], dependents, t);
        return true;
      });
    } catch (error) {
      throw heldUniqueKey(error) ?? error;
    }
  }

  async finishWithContinuations(
    workerId: string,
    attempt: FinishedAttempt,
    continuations: readonly Continuation[],
    now: Date,
    leaseMs: number,
    scope?: TxScope,
  ): Promise<boolean> {
    return executorFor(scope, this.pool).transaction(async (tx) => {
      if (!continuations.length) {
        return (await this.outcomes.finishOn(tx, workerId, [attempt], now, leaseMs)).has(attempt.job.id);
      }
      // The counts of the continuations' batch and of the dependents they go before move ahead of the
      // outcome, whose settle would otherwise end that batch or release those dependents; the
      // continuations themselves are written after it, so that when this outcome is the batch's first
      // failure, the members it cancels are those staged before, not the ones staged for it. The
      // job's row, locked under the outcome's fence, keeps that outcome certain meanwhile.
      const { job } = attempt;
      const [held] = await this.run('lockFinishing', { jobId: job.id, workerId, attempt: job.attempt }, tx);
      if (!held) return false;
      const batchId = (held.batch_id as string | null) ?? null;
      const [batch] = batchId ? await this.run('lockBatch', { batchId }, tx) : [];
      const stopping = batch?.stopping === true;
      const before = continuations.filter((c) => c.beforeDependents).map((c) => c.id);
      const dependents = before.length ? await this.run('waitingDependents', { jobId: job.id }, tx) : [];
      if (batch) {
        const pending = stopping ? 0 : continuations.length;
        await this.run('joinBatch', { batchId: batchId!, added: continuations.length, pending }, tx);
      }
      if (!stopping) await this.countEdges(before, dependents, tx);
      const applied = await this.outcomes.finishOn(tx, workerId, [attempt], now, leaseMs);
      // Cannot happen while the row is locked under the same fence; thrown so that nothing above commits.
      if (!applied.has(job.id)) throw new Error(`The outcome of job ${job.id} was refused under its own fence`);
      const jobs = continuations.map(({ on: _on, beforeDependents, ...row }) => ({
        ...row,
        batchId: batch ? batchId : null,
        state: stopping ? ('cancelled' as const) : row.state,
        hasDependents: beforeDependents === true && dependents.length > 0,
      }));
      // The edge to the parent is written already settled: the continuation is released as it is
      // written, and the edge only says where it came from (ctx.parentIds, the job's detail).
      const dependencies: NewDependency[] = continuations.map((c) => ({
        childId: c.id,
        parentJobId: job.id,
        trigger: c.on,
        parentOutcome: attempt.outcome.kind,
      }));
      dependencies.push(...edgesBefore(before, dependents, stopping ? 'cancelled' : null));
      await this.insertGraph({ jobs, dependencies }, now, asStorageTx(tx));
      return true;
    });
  }

  /** Jobs `ids`, just added before `dependents` (beforeDependents), become their parents too. */
  private async waitAlsoOn(ids: string[], dependents: Row[], tx: SqlExecutor): Promise<void> {
    if (!dependents.length) return;
    await this.run('insertEdges', { edges: JSON.stringify(edgesBefore(ids, dependents, null).map(edgeRow)) }, tx);
    await this.countEdges(ids, dependents, tx);
  }

  /** Each dependent waits on `ids.length` more parents. */
  private async countEdges(ids: string[], dependents: Row[], tx: SqlExecutor): Promise<void> {
    if (!ids.length || !dependents.length) return;
    await this.run(
      'addDependencies',
      { ids: dependents.map((d) => d.id), counts: dependents.map(() => ids.length) },
      tx,
    );
  }

  async settleSkipped(ids: string[], now: Date, tx: StorageTx): Promise<void> {
    if (ids.length) await this.run('settle', { ids, states: ids.map(() => 'skipped'), now, channel: this.channel }, tx);
  }

  async batchStatus(id: string, scope?: SqlExecutor): Promise<BatchInfo | null> {
    if (!isUuid(id)) return null;
    const [row] = await this.run('batch', { batchId: id }, scope);
    return row ? batchInfoFromRow(row) : null;
  }

  async batchMembers(
    id: string,
    f: { state?: JobState; skip: number; take: number },
    scope?: SqlExecutor,
  ): Promise<BatchMember[]> {
    if (!isUuid(id)) return [];
    const rows = await this.run(
      'batchMembers',
      { batchId: id, state: f.state ?? null, skip: f.skip, take: f.take },
      scope,
    );
    return rows.map((r) => jobSummaryFromRow(r, this.cipher));
  }

  async batchGraph(id: string): Promise<BatchGraph | null> {
    // One snapshot: the batch's counts, its members' states and its callbacks' agree.
    const read = await inOneSnapshot(this.pool, async (tx) => {
      const batch = await this.batchStatus(id, tx);
      if (!batch) return null;
      const members = await this.batchMembers(id, { skip: 0, take: 100_000 }, tx);
      const callbacks = await this.run('batchCallbacks', { batchId: id }, tx);
      return { batch, members, callbacks, memberEdges: await this.run('memberEdges', { batchId: id }, tx) };
    });
    if (!read) return null;
    const { batch, members, callbacks, memberEdges } = read;
    const roles: Record<string, BatchGraph['nodes'][number]['role']> = {
      success: 'then',
      failure: 'catch',
      always: 'finally',
    };
    return {
      batch,
      nodes: [
        ...members.map((m) => ({ id: m.id, name: m.name, state: m.state, role: 'member' as const })),
        ...callbacks.map((c) => ({
          id: c.id as string,
          name: c.name as string,
          state: c.state as JobState,
          role: roles[c.trigger as string] ?? 'callback',
        })),
      ],
      edges: [
        ...callbacks.map((c) => ({ from: id, to: c.id as string, on: c.trigger as 'success' })),
        ...memberEdges.map((e) => ({
          from: e.parent_job_id as string,
          to: e.child_id as string,
          on: e.trigger as 'success',
        })),
      ],
    };
  }

  async cancelBatch(id: string, now: Date): Promise<'cancelled' | 'not-found' | 'finished'> {
    if (!isUuid(id)) return 'not-found';
    return this.pool.transaction(async (tx) => {
      const flagged = await this.run('flagBatchCancelled', { batchId: id }, tx);
      if (!flagged.length) {
        const [row] = await this.run('batchState', { batchId: id }, tx);
        return row ? 'finished' : 'not-found';
      }
      await this.run('requestCancelActiveMembers', { batchId: id, channel: this.channel }, tx);
      await this.run('cancelBatchMembers', { batchId: id, now, channel: this.channel }, tx);
      return 'cancelled';
    });
  }

  async deleteBatch(id: string): Promise<'deleted' | 'not-found' | 'executing'> {
    if (!isUuid(id)) return 'not-found';
    if ((await this.run('deleteBatch', { batchId: id })).length) return 'deleted';
    return (await this.run('batchState', { batchId: id })).length ? 'executing' : 'not-found';
  }
}

/** The savepoint insertGraphUnlessHeld rolls back to. */
const UNLESS_HELD = 'durable_jobs_unless_held';

function isUniqueKeyViolation(error: unknown): boolean {
  const e = error as { code?: string; constraint?: string };
  return e?.code === '23505' && e.constraint?.startsWith('job_unique_') === true;
}

/**
 * A batch, flow or chain is written whole or not at all, so a member whose
 * unique key is held cannot be dropped the way a lone enqueue returns the
 * holder: the whole write is refused, saying which key.
 */
function heldUniqueKey(error: unknown): JobsError | null {
  if (!isUniqueKeyViolation(error)) return null;
  const e = error as { detail?: string };
  const key = /\(unique_key(?:, unique_window)?\)=\((.*)\)/.exec(e.detail ?? '')?.[1] ?? 'a unique key';
  return new JobsError(
    `A job's unique key (${key}) is already held by another job, so this batch, flow or chain was not written (nothing of it). ` +
      `Potential fix: enqueue that job on its own (enqueue() returns the holder's id), or leave "unique" out of members of a batch or flow.`,
  );
}
