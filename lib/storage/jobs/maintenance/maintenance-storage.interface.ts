import type { BatchRoundResult, SettledBatchState } from './settled-batch-rounds.js';

/** A worker process as it registers in the worker table. */
export interface WorkerRegistration {
  id: string;
  host: string;
  pid: number;
  queues: readonly string[];
  concurrency: number;
  now: Date;
  /** The service its app is (JobsModule's `service`). */
  service: string;
  /** The job names it has handlers for: what its claims take. */
  jobNames: readonly string[];
}

/** What a rescue pass did. */
export interface RescueResult {
  rescued: number;
  /** Of those, failed for good (no attempt left): their onFailure hooks now wait for the sweep. */
  failed: number;
  /** Of those, cancelled: a cancel had been accepted that their worker never carried out. */
  cancelled: number;
}

/** What one retention chunk deleted. */
export interface PruneChunk {
  deleted: number;
  /** The highest id it deleted; null when it deleted none. */
  last: string | null;
}

/**
 * What keeps the job table healthy without anyone asking: rescuing jobs of
 * crashed workers, failing jobs past their deadline, retention, and the
 * worker registry.
 */
export interface MaintenanceStorage {
  /**
   * Requeues active jobs whose lease expired (keeping their place), or fails
   * them when no attempt is left, recording their onFailure hook.
   */
  rescueExpired(now: Date, limit: number): Promise<RescueResult>;
  /** Fails up to `limit` queued or waiting jobs whose deadline passed; returns how many. */
  expireDeadlines(now: Date, limit: number): Promise<number>;
  /**
   * Fails up to `limit` queued jobs that have been due for `failAfter` ms and that no live worker
   * (not stopped, its heartbeat at or after `liveSince`) handles, settling their batches and
   * dependents; returns how many.
   */
  failUnhandled(now: Date, liveSince: Date, failAfter: number, limit: number): Promise<number>;
  /**
   * Deletes up to `limit` jobs in `states` that ended before `before`, of ids
   * above `after` (null: from the first); returns how many, and the highest id
   * deleted, where the next chunk of the pass starts.
   */
  prune(states: readonly string[], before: Date, limit: number, after: string | null): Promise<PruneChunk>;
  /**
   * One round of settled batches of `state` that ended before `before`, after
   * the batch id `after`, with their members: as many as fit in about
   * `maxMembers` member rows, at least one.
   */
  pruneBatches(
    state: SettledBatchState,
    before: Date,
    after: string | null,
    maxMembers: number,
  ): Promise<BatchRoundResult>;
  /** Deletes the rows of workers stopped, or silent, since before `before`. */
  pruneWorkers(before: Date): Promise<number>;
  /**
   * Deletes the groups' rate logs (`groups.rateLimit`) whose every start left its window well
   * before `now`, and those of queues whose groups no longer have a rate limit; returns how many.
   */
  pruneGroupRates(now: Date): Promise<number>;
  /** The throughput counts of forgotten successes (job_forgotten) of minutes before `before`. */
  pruneForgotten(before: Date): Promise<number>;
  registerWorker(worker: WorkerRegistration): Promise<void>;
  /** False when the worker's row is gone (pruned): register again. */
  heartbeatWorker(id: string, now: Date, active: number): Promise<boolean>;
  unregisterWorker(id: string, now: Date): Promise<void>;
}

/** Injection token of the MaintenanceStorage. */
export const MAINTENANCE_STORAGE = Symbol('MAINTENANCE_STORAGE');
