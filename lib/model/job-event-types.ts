import type { SerializedError } from './errors.js';
import type { AttemptOutcome } from './records.js';

/** What an attempt that ran on this instance came to, as `@OnJobEvent` listeners see it. */
export const JOB_EVENT_NAMES = ['succeeded', 'failed', 'retrying', 'cancelled', 'snoozed', 'stalled'] as const;
/** How an attempt ended, as job events name it. */
export type JobEventName = (typeof JOB_EVENT_NAMES)[number];

/** The job an event is about, as its attempt ran. */
export interface JobEventJob {
  /** The job's id (a UUIDv7). */
  id: string;
  /** The job's name, as in `@Job(name)`. */
  name: string;
  /** The queue it ran in. */
  queue: string;
  /** The attempt's number, from 1. */
  attempt: number;
  /** The attempt after which a failure was final, as it stood for this attempt. */
  maxAttempts: number;
  /** The payload the handler was given (the same object). */
  payload: unknown;
}

/**
 * Why an attempt ended with nothing of this worker's recorded: another
 * worker owns the job now (`lost-lease`), or this worker shut down and
 * handed it back (`shutdown`; the attempt is recorded `interrupted`).
 */
export type StallReason = 'lost-lease' | 'shutdown';

/** What each event adds to the job and the duration. */
export interface JobEventDetails {
  /** `result`: what the handler returned (null for undefined). */
  succeeded: {
    /** What the handler returned; null for undefined. */
    result: unknown;
  };
  /** Failed for good: no attempt left, or a PermanentJobError. */
  failed: {
    /** The error the job failed with: its name, message and stack. */
    error: SerializedError;
  };
  /** Failed, and runs again at `retryAt`. */
  retrying: {
    /** The error the attempt failed with. */
    error: SerializedError;
    /** When the next attempt is due: the failure's time plus the job's backoff. */
    retryAt: Date;
  };
  /** Cancelled while it ran here. */
  cancelled: {
    /** A JobCancelledError: its name, message and stack. */
    error: SerializedError;
  };
  /** Put back to run again at `until` (ctx.snooze, SnoozeJob), the attempt given back. */
  snoozed: {
    /** When the job is due again. */
    until: Date;
    /**
     * The reason given to `ctx.snooze()` or `SnoozeJob`, else `snoozed for <ms> ms`; for a
     * `ctx.sleep()`, `ctx.sleep('<name>') until <time>`.
     */
    reason: string | null;
  };
  /** Ended with nothing of this worker's recorded: the job is another worker's now, or was handed back at shutdown. */
  stalled: {
    /** Why: `lost-lease` or `shutdown` (see StallReason). */
    reason: StallReason;
    /** A LeaseLostError or WorkerShutdownError, its name and message only. */
    error: SerializedError;
  };
}

/** What an `@OnJobEvent` listener receives when an attempt on this instance ended: the job, the duration and the event's own fields. */
export type JobEvent<E extends JobEventName = JobEventName> = {
  [K in E]: {
    /** Which event this is; checking it narrows the event to its own fields. */
    event: K;
    /** The job, as its attempt ran. */
    job: JobEventJob;
    /** From the handler's start to the attempt's end, in ms. */
    durationMs: number;
  } & JobEventDetails[K];
}[E];

/** Which jobs a listener hears about; left out, every job. */
export interface JobEventFilter {
  /** Only jobs of this queue. */
  queue?: string;
  /** The job's name, as in `@Job(name)`. */
  name?: string;
}

/** What `JobEvents.on()` takes: a filter, and the listener's name in the log when it throws. */
export interface JobEventListenerFilter extends JobEventFilter {
  /** The listener's name in the log when it throws; default the function's name, else `a listener`. */
  label?: string;
}

/** A function `JobEvents.on()` calls for each matching event; what it returns is not awaited. */
export type JobEventListener<E extends JobEventName = JobEventName> = (event: JobEvent<E>) => unknown;

/** How an attempt on this instance ended: an outcome to record, or nothing of ours to record. */
export type AttemptEnd = AttemptOutcome | { kind: 'stalled'; reason: StallReason; error: SerializedError };
