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
  /** Its context (`ctx.context`), opened when sealed; null or absent when it has none. */
  context?: Record<string, unknown> | null;
  /** Past this, the job does not start or retry: it fails with a DeadlineExceededError. */
  deadline?: Date | null;
  /** Its payload was sealed: what the attempt writes (result, errors, steps, progress) is sealed too. */
  encrypted?: boolean;
  /** Its payload could not be opened: the key id, and whether the key is missing or the value does not authenticate. */
  unreadable?: { keyId: string; missing: boolean };
  /** The claimer's clock when the claim took it. */
  claimedAt?: Date;
  /**
   * When this attempt became due: the job's run_at as the claim found it (its enqueue time for an
   * immediate job, else its delay, retry backoff or snooze). Absent where a claim does not return it.
   */
  runAt?: Date;
  /**
   * Claimed ahead for a limited queue, uncounted by its limit: it starts only in the place of a
   * job of the queue that succeeded here (its successor), whose write then counts it
   * (FinishedAttempt.successor). Stored as the job's `reserved` column.
   */
  claimedAhead?: boolean;
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
  /** `forget`: the job type does not keep successes (`keep.succeeded: false`): the write deletes the job. */
  | { kind: 'succeeded'; result: unknown; forget?: true }
  | { kind: 'retry'; error: SerializedError; retryAt: Date }
  /** `hook`: the handler has an onFailure, which this worker runs once the outcome is written. */
  | { kind: 'failed'; error: SerializedError; hook: boolean }
  | { kind: 'cancelled'; error: SerializedError }
  /** Back to the queue until `until`, the attempt not spent (ctx.snooze, SnoozeJob). */
  | {
      kind: 'snoozed';
      until: Date;
      reason: string | null;
      /** A ctx.waitForSignal() park: the signal it waits for, which the write checks has not come meanwhile. */
      signal?: string;
    };

export interface FinishedAttempt {
  job: ClaimedJob;
  outcome: AttemptOutcome;
  /** Jobs staged by ctx.continueWith that this outcome releases; written with it or not at all. */
  continuations?: Continuation[];
  /** A success's: the id of the job claimed ahead that started in its place, counted from this write on. */
  successor?: string;
}

/** A job staged by ctx.continueWith(): its row, and the end of its parent it was staged for. */
export interface Continuation extends NewJob {
  on: DependencyOn;
  /** The jobs waiting on its parent wait on it too (`beforeDependents`). */
  beforeDependents?: boolean;
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
  /** `cancelled`: staged into a batch that was already stopping (BATCH_STOPPED). */
  state: 'queued' | 'waiting' | 'skipped' | 'cancelled';
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
  /** Its context's JSON (see serializeContext), sealed for an encrypted job; null for none. */
  contextJson?: string | null;
}

/** While a unique key is held: its job queued (or waiting), or also running, or until it succeeded. */
export type UniqueWhile = 'queued' | 'queued-or-active' | 'until-succeeded';
export const UNIQUE_WHILE: readonly UniqueWhile[] = ['queued', 'queued-or-active', 'until-succeeded'];

/** One attempt of a job: which worker ran it, when, how it ended, its error and its trace. */
export interface JobExecution {
  /** The attempt's number, from 1. */
  attempt: number;
  /** The worker that ran it (a `WorkerInfo.id`); null when none was recorded. */
  workerId: string | null;
  /**
   * How it ended, or `active` while it runs. `interrupted`: its worker stopped renewing the lease (a crash
   * or a stall), or shut down while it ran.
   */
  state: ExecutionState;
  /** When the claim took the job for this attempt; null for attempts the worker did not see end (rescued, handed back, running). */
  claimedAt: Date | null;
  /** When its handler began (for an attempt rescued, handed back or running: when it was claimed). */
  startedAt: Date | null;
  /** When it ended; null while it runs. */
  endedAt: Date | null;
  /** What it ended with (a snooze's reason, as a SnoozeJob); null for a success and while it runs. */
  error: SerializedError | null;
  /** The attempt's span in the tracing backend (`tracing: true`); null without tracing or when the worker did not see it end. */
  traceId: string | null;
  /** The span's id; null like traceId. */
  spanId: string | null;
}

/** A job without its payload, result and history: what lists show (`JobsMonitor.jobs`). */
export interface JobSummary {
  /** The job's id: a UUIDv7, so ids sort in creation order. */
  id: string;
  /** The job's name, as in `@Job(name)`. */
  name: string;
  /** The queue it runs in. */
  queue: string;
  /** Its state now; a `queued` job may be due later (lists and counts call that `scheduled`). */
  state: JobState;
  /** Higher runs first among its queue's due jobs; default 0. */
  priority: number;
  /**
   * The number of its current or last attempt; 0 before its first claim. Snoozed and interrupted
   * attempts count, and `retry()` continues the count.
   */
  attempt: number;
  /**
   * The attempt after which a failure is final: the `maxAttempts` it was enqueued with, raised by one
   * for each snooze and each attempt handed back at shutdown (they spend none), and past `attempt` by
   * `retry()`.
   */
  maxAttempts: number;
  /**
   * When it is, or was last, due to run: set at enqueue (`delay`, `runAt`), and moved whenever it
   * goes (back) to the queue, as after a retry or a snooze, or by `runNow()`.
   */
  runAt: Date;
  /** When it was enqueued. */
  createdAt: Date;
  /** When its latest attempt was claimed; null before its first claim. */
  startedAt: Date | null;
  /** When it ended (succeeded, failed, cancelled or skipped); null while it may still run. */
  completedAt: Date | null;
  /** The fraction last reported by `ctx.progress()`, 0 to 1 (1 once it succeeded); null when none was. */
  progress: number | null;
  /** The last failed attempt's error while the job has not succeeded; each attempt's is in `executions`. */
  lastError: SerializedError | null;
  /**
   * The worker that claimed its current or last attempt (a `WorkerInfo.id`); null while the job is
   * queued, since going back to the queue clears it.
   */
  workerId: string | null;
  /** The batch it is a member of; null otherwise (a batch's then/catch/finally job is no member). */
  batchId: string | null;
}

/** What `JobQueue.get(id)` returns. */
export interface JobInfo extends JobSummary {
  /** The job whose `ctx.invoke()` enqueued this one, and waits for it; null for any other job. */
  invokedBy: string | null;
  /** The payload it was enqueued with; a placeholder for an encrypted one this process cannot open. */
  payload: unknown;
  /**
   * Its context (`ctx.context`), as stored: `{}` when it has none; a placeholder string for an
   * encrypted one this process cannot open.
   */
  context: Readonly<Record<string, unknown>> | string;
  /** The message of the latest `ctx.progress()` report; null when that report had none, or none was made. */
  progressMessage: string | null;
  /** What the handler returned, as stored JSON (null for undefined); null until the job succeeded. */
  result: unknown;
  /**
   * True once a cancel was asked for (`cancel()`, `cancelAll()`): a running job's signal then aborts.
   * `retry()` sets it back to false.
   */
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
  /** The batch's id, a UUIDv7. */
  id: string;
  /** The name given to `batches.create(name)`; null when none was. */
  name: string | null;
  /** `executing` until every member has ended, then how the batch ended. */
  state: BatchState;
  /** Its members, those added by `ctx.addToBatch()` included (its then/catch/finally jobs are no members). */
  total: number;
  /** Members that have not ended yet. */
  pending: number;
  /** Members that succeeded. */
  succeeded: number;
  /** Members that failed for good. */
  failed: number;
  /** Members that were cancelled. */
  cancelled: number;
  /** Members that were skipped. */
  skipped: number;
  /** The fraction of members that have ended, 0 to 1: `(total - pending) / total`, or 1 without members. */
  progress: number;
  /** When it was dispatched. */
  createdAt: Date;
  /** The earliest `startedAt` of its members; null while none has been claimed. */
  startedAt: Date | null;
  /** When it settled (at dispatch for a batch without members); null while `executing`. */
  completedAt: Date | null;
}
