import type { SerializedError } from './errors.js';
import type { AttemptOutcome, ClaimedJob } from './records.js';
import { notify, subscribe, type AttemptEnded, type AttemptStarted, type JobsEnqueued } from './job-observations.js';
import { optionShape } from './option-keys.js';
import { checkName, checkOptions, describeValue } from './validation.js';
import { JobsError } from './errors.js';

export type { AttemptEnded, AttemptStarted, EnqueuedJob, JobsEnqueued } from './job-observations.js';

/** The keys a job event filter may have. */
const JOB_EVENT_FILTER_SHAPE = optionShape<JobEventFilter>({ queue: true, name: true });

/** The keys an @OnJobEvent filter may have. */
const JOB_EVENT_LISTENER_FILTER_SHAPE = optionShape<JobEventListenerFilter>({
  queue: true,
  name: true,
  label: true,
});

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
type AttemptEnd = AttemptOutcome | { kind: 'stalled'; reason: StallReason; error: SerializedError };

/** Where listener errors go (the module passes a Nest Logger): the model imports nothing of Nest's. */
interface JobEventsLogger {
  error(message: string, stack?: string): void;
}

interface Entry {
  listener: JobEventListener;
  queue: string | undefined;
  name: string | undefined;
  label: string;
}

/**
 * The event each outcome raises. Typed over every outcome kind, so that a new
 * kind fails to compile here until it is given its event.
 */
const EVENT_OF: { [K in AttemptEnd['kind']]: JobEventName } = {
  succeeded: 'succeeded',
  retry: 'retrying',
  failed: 'failed',
  cancelled: 'cancelled',
  snoozed: 'snoozed',
  stalled: 'stalled',
};

/**
 * In-process notifications from this instance's worker: attempt ends for
 * observers such as metrics, and job events for `@OnJobEvent` listeners.
 * With no listener the worker does not even take the time, and an event
 * object is built only for an attempt some listener wants, so the hot path
 * pays for observation only where someone observes.
 */
export class JobEvents {
  private readonly attemptListeners: Array<(event: AttemptEnded) => void> = [];
  private readonly startListeners: Array<(event: AttemptStarted) => void> = [];
  private readonly enqueueListeners: Array<(event: JobsEnqueued) => void> = [];
  /** Replaced, never mutated, on (un)subscribe: a dispatch under way keeps the list it started with. */
  private byEvent = new Map<JobEventName, readonly Entry[]>();
  private jobListeners = 0;

  constructor(private readonly logger?: JobEventsLogger) {}

  /**
   * True while an attempt observer (`onAttemptEnded`) or a job event listener is subscribed: only then
   * does the worker time attempts and report them.
   */
  get observed(): boolean {
    return this.attemptListeners.length > 0 || this.jobListeners > 0;
  }

  /** True while an `onAttemptStarted` observer is subscribed: only then does the worker report starts. */
  get startsObserved(): boolean {
    return this.startListeners.length > 0;
  }

  /** True while an `onEnqueued` observer is subscribed: only then do enqueues report the jobs they wrote. */
  get enqueuesObserved(): boolean {
    return this.enqueueListeners.length > 0;
  }

  /** Returns the unsubscribe function. A listener that throws is ignored: it must not fail a job. */
  onAttemptEnded(listener: (event: AttemptEnded) => void): () => void {
    return subscribe(this.attemptListeners, listener);
  }

  /**
   * Each attempt this instance's worker starts, with how long it waited to start. Returns the
   * unsubscribe function. A listener that throws is ignored: it must not fail a job.
   */
  onAttemptStarted(listener: (event: AttemptStarted) => void): () => void {
    return subscribe(this.startListeners, listener);
  }

  /**
   * The jobs each call on this instance writes (enqueue, enqueueMany, chains, flows, batches).
   * Returns the unsubscribe function. A listener that throws is ignored: the jobs are written.
   */
  onEnqueued(listener: (event: JobsEnqueued) => void): () => void {
    return subscribe(this.enqueueListeners, listener);
  }

  /**
   * Listens to what attempts on this instance came to; `@OnJobEvent` is this
   * call made for a provider's method. Returns the unsubscribe function. A
   * listener that throws, or whose promise rejects, is logged; the job's
   * outcome stands either way, and the worker never awaits a listener.
   */
  on<E extends JobEventName>(
    event: E | readonly E[],
    listener: JobEventListener<E>,
    filter: JobEventListenerFilter = {},
  ): () => void {
    const where = 'JobEvents.on()';
    const events = checkJobEventNames(where, event);
    checkJobEventFilter(where, filter, JOB_EVENT_LISTENER_FILTER_SHAPE);
    if (typeof listener !== 'function') {
      throw new JobsError(
        `${where}: the listener must be a function, got ${describeValue(listener)}. Potential fix: events.on('failed', (e) => …).`,
      );
    }
    const entry: Entry = {
      listener: listener as JobEventListener,
      queue: filter.queue,
      name: filter.name,
      label: filter.label ?? (listener.name || 'a listener'),
    };
    for (const e of events) this.byEvent.set(e, [...(this.byEvent.get(e) ?? []), entry]);
    this.jobListeners += events.length;
    let subscribed = true;
    return () => {
      if (!subscribed) return;
      subscribed = false;
      for (const e of events)
        this.byEvent.set(
          e,
          this.byEvent.get(e)!.filter((x) => x !== entry),
        );
      this.jobListeners -= events.length;
    };
  }

  /**
   * Tells each `onAttemptEnded` observer of an attempt that ended with an outcome to record; the worker
   * calls it while `observed`. An observer that throws is ignored.
   */
  attemptEnded(event: AttemptEnded): void {
    notify(this.attemptListeners, event);
  }

  /** Tells each `onAttemptStarted` observer of an attempt starting; the worker calls it while `startsObserved`. */
  attemptStarted(event: AttemptStarted): void {
    notify(this.startListeners, event);
  }

  /** Tells each `onEnqueued` observer of jobs a call wrote; the queue calls it while `enqueuesObserved`. */
  enqueued(event: JobsEnqueued): void {
    if (event.jobs.length) notify(this.enqueueListeners, event);
  }

  /**
   * What an attempt on this instance came to, for `@OnJobEvent` listeners
   * (the worker calls this only while `observed`): its outcome once
   * written, or how it stalled.
   */
  jobEnded(job: ClaimedJob, end: AttemptEnd, durationMs: number): void {
    const entries = this.byEvent.get(EVENT_OF[end.kind]);
    if (!entries?.length) return;
    let event: JobEvent | undefined;
    for (const entry of entries) {
      if (entry.queue !== undefined && entry.queue !== job.queue) continue;
      if (entry.name !== undefined && entry.name !== job.name) continue;
      event ??= toJobEvent(job, end, durationMs);
      this.call(entry, event);
    }
  }

  private call(entry: Entry, event: JobEvent): void {
    try {
      const returned = entry.listener(event);
      if (isThenable(returned)) returned.then(undefined, (error: unknown) => this.report(entry, event, error));
    } catch (error) {
      this.report(entry, event, error);
    }
  }

  private report(entry: Entry, event: JobEvent, error: unknown): void {
    const { job } = event;
    const err = error instanceof Error ? error : new Error(String(error));
    this.logger?.error(
      `Job event listener ${entry.label} failed on '${event.event}' of job ${job.name} ${job.id} attempt ${job.attempt}: ${err.message} (the job's outcome stands)`,
      err.stack,
    );
  }
}

function toJobEvent(job: ClaimedJob, end: AttemptEnd, durationMs: number): JobEvent {
  const base = {
    job: {
      id: job.id,
      name: job.name,
      queue: job.queue,
      attempt: job.attempt,
      maxAttempts: job.maxAttempts,
      payload: job.payload,
    },
    durationMs,
  };
  switch (end.kind) {
    case 'succeeded':
      return { event: 'succeeded', ...base, result: end.result };
    case 'retry':
      return { event: 'retrying', ...base, error: end.error, retryAt: end.retryAt };
    case 'failed':
      return { event: 'failed', ...base, error: end.error };
    case 'cancelled':
      return { event: 'cancelled', ...base, error: end.error };
    case 'snoozed':
      return { event: 'snoozed', ...base, until: end.until, reason: end.reason };
    case 'stalled':
      return { event: 'stalled', ...base, reason: end.reason, error: end.error };
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}

/** Event names as given to `@OnJobEvent` or `JobEvents.on`: one or a non-empty array of known names. */
export function checkJobEventNames(where: string, value: unknown): JobEventName[] {
  const names = Array.isArray(value) ? (value as unknown[]) : [value];
  const known = JOB_EVENT_NAMES.map((n) => `'${n}'`).join(', ');
  if (names.length === 0) {
    throw new JobsError(`${where}: no event given. Potential fix: one of ${known}, or an array of them.`);
  }
  for (const name of names) {
    if (!JOB_EVENT_NAMES.includes(name as JobEventName)) {
      throw new JobsError(`${where}: unknown job event ${describeValue(name)}. Potential fix: one of ${known}.`);
    }
  }
  return [...new Set(names as JobEventName[])];
}

export function checkJobEventFilter(where: string, filter: unknown, shape = JOB_EVENT_FILTER_SHAPE): void {
  const f = checkOptions(
    where,
    filter as JobEventFilter | undefined,
    "{ queue: 'emails', name: 'send-receipt' }",
    shape,
  );
  if (f?.queue !== undefined) checkName(where, 'queue', f.queue, 'emails');
  if (f?.name !== undefined) checkName(where, 'name', f.name, 'send-receipt');
}
