import type { ClaimedJob } from '../../../model/index.js';

/** A worker's request for up to `limit` due jobs of one queue, leased to it for `leaseMs`. */
export interface ClaimRequest {
  workerId: string;
  queue: string;
  names: readonly string[];
  limit: number;
  now: Date;
  leaseMs: number;
  /**
   * A controlled claim of a queue with a concurrency limit: while another
   * worker waits for its slots, take no more than this worker's share of
   * the limit (see the routine's limit-shares). The worker asks for it once
   * the queue's handlers run long enough that where they run matters.
   */
  share?: boolean;
  /**
   * A controlled claim of a queue limited as a whole: also claim up to this
   * many jobs ahead (ClaimedJob.claimedAhead), uncounted by the limit, each to
   * start in the place of one of this worker's jobs of the queue that
   * succeeds. The routine holds them to no more than the worker's counted
   * jobs of the queue (see its claimAhead).
   */
  ahead?: number;
}

/** What a controlled claim got; `waitMs`: a rate limit held jobs back, and the next may start then. */
export interface ClaimResult {
  jobs: ClaimedJob[];
  waitMs: number | null;
  /** The worker's own jobs claimed ahead that the claim moved into the limit's count: to start now. */
  counted?: string[];
}

/** How workers take jobs: the plain and the controlled claim, on the worker's own connections. */
export interface ClaimStorage {
  claim(request: ClaimRequest): Promise<ClaimedJob[]>;
  /**
   * The claim of a controlled queue (limits, groups, serial keys, pause;
   * see the claim_controlled routine): enforced across instances, one claim
   * at a time per queue.
   */
  claimControlled(request: ClaimRequest): Promise<ClaimResult>;
  /** Drops the worker's waits for limited queues' slots: it stops claiming. */
  leaveWaits(workerId: string): Promise<void>;
  /** How many jobs of `names` are due, and how many of them another transaction holds locked now (a claim skips those): for the testing kit's drain. */
  dueJobs(names: readonly string[], now: Date): Promise<{ due: number; locked: number }>;
  /** Queues that hold eligible work, for workers that serve every queue. */
  queuesWithWork(): Promise<string[]>;
  /** Opens the worker's own connections before its first claim, so the first jobs do not wait for them. */
  openWorkerConnections(): Promise<void>;
  /** Closes the worker's own connections (after the worker stopped). */
  closeWorkerConnections(): Promise<void>;
}

/** Injection token of the ClaimStorage. */
export const CLAIM_STORAGE = Symbol('CLAIM_STORAGE');
