import type { AttemptOutcome, JobEventJob, SerializedError } from '../model/index.js';

/** One attempt a drain ran, and what came of it. */
export interface AttemptReport extends JobEventJob {
  /** The id of the batch the job is a member of; null when it is a member of none. */
  batchId: string | null;
  /**
   * `succeeded`, `retry` (queued again after its backoff), `failed` (for
   * good; onFailure has run), `cancelled`, `snoozed` (queued again at
   * `retryAt`, the attempt given back; ctx.sleep() too); `died`: dieAfterWork
   * dropped the outcome, or dieAfterStep a step's record; `lost`: the outcome was not recorded (the job was no longer
   * this runner's, or the app closed first).
   */
  outcome: AttemptOutcome['kind'] | 'died' | 'lost';
  /** What the handler returned (succeeded). */
  result?: unknown;
  /** Why the attempt failed (retry, failed, cancelled). */
  error?: SerializedError;
  /** When the next attempt is due (retry, snoozed). */
  retryAt?: Date;
  /** The fault that shaped this attempt, if one did. */
  injected?: 'failNext' | 'dieAfterWork' | 'dieAfterStep';
}
