import type { ClaimedJob, FinishedAttempt, SerializedError } from '../../../model/index.js';
import type { ClaimRequest, ClaimResult } from '../claim/claim-storage.interface.js';

/** A job a worker holds: its id and the attempt the worker's writes are fenced by. */
export interface HeldJob {
  id: string;
  attempt: number;
  /** Its payload is sealed: what is written for it (progress, steps) is sealed too. */
  encrypted?: boolean;
  /** Its handler's start and span, once it started: renewals and the hand-back record a traced one's. */
  started?: ClaimedJob['started'];
}

/** What a lease renewal learned. */
export interface LeaseRenewal {
  /** The held jobs (as given, with their attempt) this worker no longer owns: stop them, never write their outcome. */
  lost: HeldJob[];
  /** Jobs someone asked to cancel (a fallback for a missed notification). */
  cancelRequested: string[];
}

/** A job failed for good whose onFailure hook this instance claimed. */
export interface FailedJob extends ClaimedJob {
  error: SerializedError;
  /** The hook's run this claim starts, 1 for its first. */
  hookAttempt: number;
}

/**
 * How a hook's run ended: it returned (`done`), it threw and runs again at
 * `runAt` (`pending`), or it threw for the last time (`failed`). `error` is
 * what it threw; null keeps the error recorded before. `none`: the claim
 * ran nothing, so it is not counted as a run: the handler has no onFailure
 * (a job the rescue failed, `done`), or the hook's runs were used up before
 * it (its last run was cut short, `failed`).
 */
export type FailureHookEnd =
  | { state: 'done'; error: null; none?: boolean }
  | { state: 'pending'; runAt: Date; error: SerializedError }
  | { state: 'failed'; error: SerializedError | null; none?: boolean };

/**
 * What a worker writes about the jobs it holds: outcomes, leases, progress,
 * the hand-back at shutdown, and the onFailure hooks it runs. Every write
 * is fenced by (id, attempt, worker, active).
 */
export interface OutcomeStorage {
  /**
   * Records outcomes; returns the ids that were applied. A failure whose
   * handler has onFailure is written with its hook held by this worker for `leaseMs`.
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
   * Writes a traced attempt's span ids on the interrupted history row the rescue wrote when this
   * worker lost its lease: the rescue knows them only when a renewal wrote them before.
   */
  recordLostSpan(workerId: string, job: HeldJob): Promise<void>;
  updateProgress(workerId: string, job: HeldJob, progress: number, message: string | null): Promise<void>;
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
  /** Records how the run of a hook this worker holds ended; its error sealed when the job is encrypted. */
  settleFailureHook(workerId: string, job: { id: string; encrypted?: boolean }, end: FailureHookEnd): Promise<void>;
  /** Makes hooks this worker holds pending again, their runs uncounted: it stops before they ended. */
  giveBackFailureHooks(workerId: string, ids: readonly string[]): Promise<void>;
}

/** Injection token of the OutcomeStorage. */
export const OUTCOME_STORAGE = Symbol('OUTCOME_STORAGE');
