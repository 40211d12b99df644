import type { ClaimedJob, FinishedAttempt, JobInfo, JobState, NewJob, SerializedError } from '../../model/index.js';
import type { TxScope } from '../storage-tx.interface.js';

export interface ClaimRequest {
  workerId: string;
  queue: string;
  names: readonly string[];
  limit: number;
  now: Date;
  leaseMs: number;
}

/** What a controlled claim got; `waitMs`: a rate limit held jobs back, and the next may start then. */
export interface ClaimResult {
  jobs: ClaimedJob[];
  waitMs: number | null;
}

export interface HeldJob {
  id: string;
  attempt: number;
}

export interface LeaseRenewal {
  /** Jobs this worker no longer owns: stop them, never write their outcome. */
  lost: string[];
  /** Jobs someone asked to cancel (a fallback for a missed notification). */
  cancelRequested: string[];
}

export interface WorkerRegistration {
  id: string;
  host: string;
  pid: number;
  queues: readonly string[];
  concurrency: number;
  now: Date;
}

export type CancelResult =
  | { outcome: 'cancelled' }
  | { outcome: 'requested' }
  | { outcome: 'not-found' }
  | { outcome: 'finished'; state: JobState };
export type RetryResult =
  { outcome: 'requeued' } | { outcome: 'not-found' } | { outcome: 'not-retryable'; state: JobState };

export interface RescueResult {
  rescued: number;
  /** Of those, failed for good (no attempt left): their onFailure hooks now wait for the sweep. */
  failed: number;
}

/** A job failed for good whose onFailure hook this instance claimed. */
export interface FailedJob extends ClaimedJob {
  error: SerializedError;
}

/**
 * Everything the queue and the workers need of the job table. `tx` is a
 * transaction a write joins: the caller's TypeORM EntityManager, or one
 * storage opened.
 */
export interface JobStorage {
  /**
   * All of `jobs` are written or none. Returns the duplicates: each job not
   * written because its unique key is held, mapped to the holder's id.
   */
  insertJobs(jobs: readonly NewJob[], now: Date, tx?: TxScope): Promise<Map<string, string>>;
  /** One transaction, a statement or a few per chunk; chunks are pulled from the iterator as the previous one is sent. */
  insertJobChunks(chunks: Iterable<readonly NewJob[]>, now: Date, tx?: TxScope): Promise<Map<string, string>>;
  claim(request: ClaimRequest): Promise<ClaimedJob[]>;
  /**
   * The claim of a controlled queue (limits, groups, serial keys, pause;
   * see claim_controlled): enforced across instances, one claim at a time
   * per queue.
   */
  claimControlled(request: ClaimRequest): Promise<ClaimResult>;
  /** Fails up to `limit` queued or waiting jobs whose deadline passed; returns how many. */
  expireDeadlines(now: Date, limit: number): Promise<number>;
  /**
   * Records outcomes fenced by (id, attempt, worker, active); returns the ids
   * that were applied. A failure whose handler has onFailure is written with
   * its hook held by this worker for `leaseMs`.
   */
  finish(workerId: string, attempts: readonly FinishedAttempt[], now: Date, leaseMs: number): Promise<Set<string>>;
  /**
   * finish, and a controlled claim made in the success write's own
   * statement, after it: the slots these outcomes free count as free. One
   * round trip where a limited queue's worker would otherwise wait for the
   * write before it claims. `claim.now` is ignored: the claim is made at `now`.
   */
  finishAndClaim(
    workerId: string,
    attempts: readonly FinishedAttempt[],
    now: Date,
    leaseMs: number,
    claim: ClaimRequest,
  ): Promise<{ applied: Set<string>; claimed: ClaimResult }>;
  renewLeases(workerId: string, jobs: readonly HeldJob[], now: Date, leaseMs: number): Promise<LeaseRenewal>;
  /** Gives jobs back at shutdown without spending their attempt; `error` records an interrupted run. */
  handBack(workerId: string, jobs: readonly HeldJob[], now: Date, error: SerializedError | null): Promise<void>;
  /**
   * Requeues active jobs whose lease expired (keeping their place), or fails
   * them when no attempt is left, recording their onFailure hook.
   */
  rescueExpired(now: Date, limit: number): Promise<RescueResult>;
  /** Claims up to `limit` onFailure hooks (pending, or abandoned by their instance) of jobs named `names`. */
  claimFailureHooks(
    workerId: string,
    names: readonly string[],
    limit: number,
    now: Date,
    leaseMs: number,
  ): Promise<FailedJob[]>;
  /** Extends the leases of hooks this worker runs; returns the ids it still holds. */
  renewFailureHooks(workerId: string, ids: readonly string[], now: Date, leaseMs: number): Promise<Set<string>>;
  /** Marks hooks this worker holds done (they ran) or pending again (it stops before running them). */
  settleFailureHooks(workerId: string, ids: readonly string[], outcome: 'done' | 'pending'): Promise<void>;
  updateProgress(workerId: string, job: HeldJob, progress: number, message: string | null): Promise<void>;
  cancel(id: string, now: Date): Promise<CancelResult>;
  /** Failed, cancelled or skipped → queued with fresh attempts; `resetSteps` forgets its finished steps. */
  retry(id: string, now: Date, resetSteps?: boolean): Promise<RetryResult>;
  /** The job with its history and steps; `stepResults` adds each step's stored result. */
  getJob(id: string, options?: { stepResults?: boolean }): Promise<JobInfo | null>;
  registerWorker(worker: WorkerRegistration): Promise<void>;
  /** False when the worker's row is gone (pruned): register again. */
  heartbeatWorker(id: string, now: Date, active: number): Promise<boolean>;
  unregisterWorker(id: string, now: Date): Promise<void>;
  /** Queues that hold eligible work, for workers that serve every queue. */
  queuesWithWork(): Promise<string[]>;
  /** Deletes up to `limit` jobs in `states` that ended before `before`; returns how many. */
  prune(states: readonly string[], before: Date, limit: number): Promise<number>;
  pruneBatches(before: Date, limit: number): Promise<number>;
  /** Deletes the rows of workers stopped, or silent, since before `before`. */
  pruneWorkers(before: Date): Promise<number>;
  /** Opens the worker's own connections before its first claim, so the first jobs do not wait for them. */
  openWorkerConnections(): Promise<void>;
  /** Closes the worker's own connections (after the worker stopped). */
  closeWorkerConnections(): Promise<void>;
}

export const JOB_STORAGE = Symbol('JOB_STORAGE');
