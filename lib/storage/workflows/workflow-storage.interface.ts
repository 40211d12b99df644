import type {
  BatchInfo,
  Continuation,
  DependencyOn,
  FinishedAttempt,
  JobState,
  JobSummary,
  NewJob,
} from '../../model/index.js';
import type { EntityManager } from 'typeorm';
import type { StorageTx, TxScope } from '../sql/storage-tx.interface.js';

interface NewBatch {
  id: string;
  name: string | null;
  state: 'executing' | 'succeeded';
  total: number;
  options: { allowFailures: boolean };
}

/** An edge to write: the child waits on a job or a batch. */
export interface NewDependency {
  childId: string;
  parentJobId?: string;
  parentBatchId?: string;
  trigger: DependencyOn;
  /** Set when the parent had already settled when the edge was made. */
  parentOutcome?: string | null;
}

export interface JobGraph {
  batches?: NewBatch[];
  jobs: Array<NewJob & { hasDependents?: boolean }>;
  dependencies?: NewDependency[];
}

export interface ParentStates {
  jobs: Map<string, JobState>;
  batches: Map<string, { state: string; failed: number }>;
}

/** A member of a batch, as lists show jobs. */
export type BatchMember = JobSummary;

/** A batch drawn as a graph: its members and callbacks as nodes, their dependencies as edges. */
export interface BatchGraph {
  /** The batch itself, as `batchStatus()` returns it. */
  batch: BatchInfo;
  /** The batch's members (oldest first, at most 100 000), then its callbacks. */
  nodes: Array<{
    /** The job's id. */
    id: string;
    /** The job's name. */
    name: string;
    /** The job's state. */
    state: JobState;
    /**
     * `member` for a member of the batch; `then`, `catch` or `finally` for a callback, by the outcome
     * it waits for (`callback` for any other).
     */
    role: 'member' | 'then' | 'catch' | 'finally' | 'callback';
  }>;
  /** Each callback waiting on the batch, and each job waiting on a member (which need not be in `nodes`). */
  edges: Array<{
    /** The id of what is waited on: the batch's id for a callback, else a member's id. */
    from: string;
    /** The id of the job that waits. */
    to: string;
    /** The outcome of `from` that lets `to` run: `success`, `failure` or `always`. */
    on: DependencyOn;
  }>;
}

export interface WorkflowStorage {
  insertGraph(graph: JobGraph, now: Date, tx?: TxScope): Promise<void>;
  /**
   * insertGraph inside `tx`, where a job's unique key taken meanwhile by
   * another transaction leaves nothing of the graph written and answers
   * false; `tx` goes on.
   */
  insertGraphUnlessHeld(graph: JobGraph, now: Date, tx: StorageTx): Promise<boolean>;
  /** Locks the parents (in `tx`) and reports their states; unknown ids are absent. */
  lockParents(jobIds: string[], batchIds: string[], tx: StorageTx): Promise<ParentStates>;
  markParents(jobIds: string[], tx: StorageTx): Promise<void>;
  /**
   * Adds `job` to a running batch that is not stopping (false when it is not). `before`: the id of
   * the member adding it, whose waiting dependents then wait on the new job too (beforeDependents).
   */
  addToBatch(batchId: string, job: NewJob, now: Date, before?: string): Promise<boolean>;
  /** Settles the workflow rows of graph jobs written skipped (their parents had ended otherwise), in `tx`. */
  settleSkipped(ids: string[], now: Date, tx: StorageTx): Promise<void>;
  /**
   * Records one outcome and, only if it applied, writes the staged
   * continuations with it: in the job's batch when it is a member (written
   * cancelled when that batch was already stopping), and before the job's
   * waiting dependents for those staged with `beforeDependents`. `scope`: a transaction to write it in (a
   * handler's ctx.transaction), committed by its owner; by default one of its own.
   */
  finishWithContinuations(
    workerId: string,
    attempt: FinishedAttempt,
    continuations: readonly Continuation[],
    now: Date,
    leaseMs: number,
    scope?: TxScope,
  ): Promise<boolean>;
  batchStatus(id: string): Promise<BatchInfo | null>;
  batchMembers(id: string, filter: { state?: JobState; skip: number; take: number }): Promise<BatchMember[]>;
  batchGraph(id: string): Promise<BatchGraph | null>;
  cancelBatch(id: string, now: Date): Promise<'cancelled' | 'not-found' | 'finished'>;
  deleteBatch(id: string): Promise<'deleted' | 'not-found' | 'executing'>;
  /** Runs `fn` in a transaction: the caller's (`outer`), or a new one. */
  transaction<T>(fn: (tx: StorageTx) => Promise<T>, outer?: EntityManager): Promise<T>;
}

export const WORKFLOW_STORAGE = Symbol('WORKFLOW_STORAGE');
