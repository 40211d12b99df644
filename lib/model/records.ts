import type { BatchState, DependencyOn, ExecutionState, JobState } from './job-state.js';
import type { SerializedError } from './errors.js';
import type { JobStep } from './job-steps.js';

/** A job as a worker receives it from a claim: only what running it needs. */
export interface ClaimedJob {
  id: string;
  name: string;
  queue: string;
  payload: unknown;
  attempt: number;
  maxAttempts: number;
  timeoutMs: number | null;
  batchId: string | null;
  /** The jobs this one waited on (chain, flow, after) or continued from; null or absent when none. */
  parentIds?: string[] | null;
  /** The batch whose then/catch/finally this job is; null or absent otherwise. */
  parentBatchId?: string | null;
  /** The trace context captured at enqueue (only where tracing is on and a trace was active). */
  traceContext?: Record<string, string> | null;
  /** Past this, the job does not start or retry: it fails with a DeadlineExceededError. */
  deadline?: Date | null;
  /** Its payload was sealed: what the attempt writes (result, errors, steps, progress) is sealed too. */
  encrypted?: boolean;
  /** Its payload could not be opened: the key id, and whether the key is missing or the value does not authenticate. */
  unreadable?: { keyId: string; missing: boolean };
  /** The claimer's clock when the claim took it. */
  claimedAt?: Date;
  /** When its handler began, and its span: noted by the worker as the attempt starts, written with its outcome. */
  started?: AttemptStart;
}

/** The start of one attempt as the worker saw it: when its handler began and, with tracing on, its span. */
interface AttemptStart {
  at: Date;
  /** The span's W3C trace id (32 hex digits); null when tracing is off or no SDK records spans. */
  traceId: string | null;
  /** The span's id (16 hex digits); null like traceId. */
  spanId: string | null;
}

/** What the worker decided about one finished attempt. */
export type AttemptOutcome =
  | { kind: 'succeeded'; result: unknown }
  | { kind: 'retry'; error: SerializedError; retryAt: Date }
  /** `hook`: the handler has an onFailure, which this worker runs once the outcome is written. */
  | { kind: 'failed'; error: SerializedError; hook: boolean }
  | { kind: 'cancelled'; error: SerializedError }
  /** Back to the queue until `until`, the attempt not spent (ctx.snooze, SnoozeJob). */
  | { kind: 'snoozed'; until: Date; reason: string | null };

export interface FinishedAttempt {
  job: ClaimedJob;
  outcome: AttemptOutcome;
  /** Jobs staged by ctx.continueWith that this outcome releases; written with it or not at all. */
  continuations?: Continuation[];
}

/** A job staged by ctx.continueWith(): its row, and the end of its parent it was staged for. */
export interface Continuation extends NewJob {
  on: DependencyOn;
}

/**
 * Builds validated job rows. Implemented by the queue layer; the worker
 * reaches it through this token so that it never depends on the queue.
 */
export interface JobRowBuilder {
  build(job: unknown, payload: unknown, options: Record<string, unknown>, now: Date): NewJob;
}
export const JOB_ROW_BUILDER = Symbol('JOB_ROW_BUILDER');

/** A row to insert: what `JobQueue` turns a call into. */
export interface NewJob {
  id: string;
  name: string;
  queue: string;
  /** Already serialised (and size-checked) by the queue, so it is encoded once. */
  payloadJson: string;
  state: 'queued' | 'waiting' | 'skipped';
  priority: number;
  runAt: Date;
  maxAttempts: number;
  timeoutMs: number | null;
  batchId?: string | null;
  groupKey?: string | null;
  uniqueKey?: string | null;
  /** How the unique key is held: by state (`uniqueWhile`), or per time window (`uniqueWindow`). */
  uniqueWhile?: UniqueWhile | null;
  uniqueWindow?: number | null;
  /**
   * `unique.ttl`: this job takes over a key held by state from a job
   * enqueued more than this many ms before it, whatever that job's state.
   * Not stored: it judges the holders this enqueue finds.
   */
  uniqueTtl?: number | null;
  /** Replace a waiting job with the same unique key (its payload and run time) instead of refusing. */
  uniqueReplace?: boolean;
  serialKey?: string | null;
  deadline?: Date | null;
  remainingDependencies?: number;
  traceContext?: Record<string, string> | null;
}

/** While a unique key is held: its job queued (or waiting), or also running, or until it succeeded. */
export type UniqueWhile = 'queued' | 'queued-or-active' | 'until-succeeded';
export const UNIQUE_WHILE: readonly UniqueWhile[] = ['queued', 'queued-or-active', 'until-succeeded'];

/** One attempt of a job: which worker ran it, when, how it ended, its error and its trace. */
export interface JobExecution {
  attempt: number;
  workerId: string | null;
  state: ExecutionState;
  /** When the claim took the job for this attempt; null for attempts the worker did not see end (rescued, handed back, running). */
  claimedAt: Date | null;
  /** When its handler began (for an attempt rescued, handed back or running: when it was claimed). */
  startedAt: Date | null;
  endedAt: Date | null;
  error: SerializedError | null;
  /** The attempt's span in the tracing backend (`tracing: true`); null without tracing or when the worker did not see it end. */
  traceId: string | null;
  /** The span's id; null like traceId. */
  spanId: string | null;
}

/** A job without its payload, result and history: what lists show (`JobsMonitor.jobs`). */
export interface JobSummary {
  id: string;
  name: string;
  queue: string;
  state: JobState;
  priority: number;
  attempt: number;
  maxAttempts: number;
  runAt: Date;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
  progress: number | null;
  /** The last failed attempt's error while the job has not succeeded; each attempt's is in `executions`. */
  lastError: SerializedError | null;
  workerId: string | null;
  batchId: string | null;
}

/** What `JobQueue.get(id)` returns. */
export interface JobInfo extends JobSummary {
  payload: unknown;
  progressMessage: string | null;
  result: unknown;
  cancelRequested: boolean;
  /** Its latest attempts (at most 20 recorded ones, and the running or succeeded one), oldest first. */
  executions: JobExecution[];
  /**
   * Null when `executions` holds the whole history; else the cursor of the
   * attempts before them: `JobQueue.executions(id, { after: moreExecutions })`.
   */
  moreExecutions: string | null;
  /** Its finished steps and sleeps, in the order they finished (results only when asked for). */
  steps: JobStep[];
  /** Its onFailure hook once the job failed for good and has one; null otherwise. */
  failureHook: FailureHookInfo | null;
}

/** Where a failed job's onFailure hook stands (`JobInfo.failureHook`). */
export interface FailureHookInfo {
  /**
   * `pending` (waiting for its first run or a rerun), `running`, `done`
   * (it returned), `failed` (its runs are used up, or it threw a PermanentJobError).
   */
  state: 'pending' | 'running' | 'done' | 'failed';
  /** Runs started so far. */
  attempts: number;
  /** When a pending rerun is due; null otherwise. */
  nextRunAt: Date | null;
  /** The error of its last run that threw, if any. */
  lastError: SerializedError | null;
}

/** A batch as `batchStatus()` reports it: state, counts per outcome, progress and times. */
export interface BatchInfo {
  id: string;
  name: string | null;
  state: BatchState;
  total: number;
  pending: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  skipped: number;
  progress: number;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
}
