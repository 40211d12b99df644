import type { AttemptOutcome, ClaimedJob } from './records.js';

/*
 * What observers of this instance's work hear through JobEvents (metrics, tracing): attempts'
 * starts and ends, and the jobs enqueues wrote. Unlike job events, nothing here is filtered or
 * awaited: each is told to every observer, and an observer that throws is ignored.
 */

/** One attempt that ended on this instance, with an outcome to record. */
export interface AttemptEnded {
  /** The job, as the worker claimed it. */
  job: ClaimedJob;
  /** How the attempt ended: `succeeded`, `retry`, `failed`, `cancelled` or `snoozed`. */
  outcome: AttemptOutcome['kind'];
  /** From the handler's start to its outcome, in ms. */
  durationMs: number;
}

/** One attempt starting on this instance: its handler is about to run. */
export interface AttemptStarted {
  /** The job, as the worker claimed it; `started.at` is the handler's start. */
  job: ClaimedJob;
  /**
   * How long the attempt waited to start, in ms: from when it became due (the job's run_at: its
   * enqueue for an immediate job, else its delay, retry backoff or snooze) to its handler's start,
   * so the time in the queue and in this worker's prefetch; 0 when clocks disagree the other way.
   * Null when the claim did not say when the job was due.
   */
  waitMs: number | null;
}

/** One job a call on this instance wrote, as `JobEvents.onEnqueued` observers see it. */
export interface EnqueuedJob {
  /** The new job's id. */
  id: string;
  /** Its name, as in `@Job(name)`. */
  name: string;
  /** Its queue. */
  queue: string;
  /** When it is due. */
  runAt: Date;
  /**
   * `queued`, `waiting` (on parents or its batch), `skipped` (its trigger can no longer be met) or
   * `cancelled` (a continuation staged into a batch that was already stopping).
   */
  state: 'queued' | 'waiting' | 'skipped' | 'cancelled';
}

/**
 * Jobs one call on this instance wrote (enqueue, enqueueMany, a chain, a
 * flow, a batch): the jobs a held unique key answered are not among them.
 */
export interface JobsEnqueued {
  /** The jobs written. */
  jobs: readonly EnqueuedJob[];
  /**
   * Written in the caller's transaction (`manager`): told when written, before that transaction
   * commits, so it may yet roll back.
   */
  inTransaction: boolean;
}

/** Adds `listener`; returns the function that removes it. */
export function subscribe<T>(listeners: Array<(event: T) => void>, listener: (event: T) => void): () => void {
  listeners.push(listener);
  return () => {
    const at = listeners.indexOf(listener);
    if (at >= 0) listeners.splice(at, 1);
  };
}

/** Calls each listener; one that throws is ignored. */
export function notify<T>(listeners: ReadonlyArray<(event: T) => void>, event: T): void {
  for (const listener of listeners) {
    try {
      listener(event);
    } catch {
      // An observer's bug is the observer's; the job's outcome, or the enqueue, stands.
    }
  }
}
