import type { ExecutionCursor, JobExecutionPage, JobInfo, JobState } from '../../../model/index.js';

/** What a cancel did: at once (not started), asked of the running worker, or nothing. */
export type CancelResult =
  | { outcome: 'cancelled' }
  | { outcome: 'requested' }
  | { outcome: 'not-found' }
  | { outcome: 'finished'; state: JobState };

/** What a retry did; `unknown-step`: `fromStep` names no step the job recorded, and nothing was written. */
export type RetryResult =
  | { outcome: 'requeued' }
  | { outcome: 'not-found' }
  | { outcome: 'not-retryable'; state: JobState }
  | { outcome: 'unknown-step'; recorded: string[]; recordedCount: number };

/**
 * Which finished steps a retry forgets: none (the default), all (`reset`), or the step named by
 * `from` and every step recorded after it.
 */
export type RetrySteps = { reset: true } | { from: string } | null;

/** How many of the job's recorded step names an `unknown-step` result lists, first recorded first. */
export const LISTED_STEPS = 20;

/** One job as the app reads and steers it by id: its record, a cancel, a retry. */
export interface JobControlStorage {
  cancel(id: string, now: Date): Promise<CancelResult>;
  /**
   * Failed, cancelled or skipped → queued with fresh attempts, in one statement; `steps` says which
   * of its finished steps to forget (default: none).
   */
  retry(id: string, now: Date, steps?: RetrySteps): Promise<RetryResult>;
  /**
   * Flags the job as awaited, so its end is announced on the schema's channel, and returns its
   * latest state; null when no job has this id.
   */
  awaitEnd(id: string): Promise<JobState | null>;
  /** The states of these jobs; a job that no longer exists is absent. */
  statesOf(ids: readonly string[]): Promise<Map<string, JobState>>;
  /** The job with its latest history and its steps; `stepResults` adds each step's stored result. */
  getJob(id: string, options?: { stepResults?: boolean }): Promise<JobInfo | null>;
  /** A page of the job's history, newest first, older than `after` when given; null if no such job. */
  executions(id: string, after: ExecutionCursor | null, limit: number): Promise<JobExecutionPage | null>;
}

/** Injection token of the JobControlStorage. */
export const JOB_CONTROL_STORAGE = Symbol('JOB_CONTROL_STORAGE');
