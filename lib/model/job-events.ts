import { JobsError } from './errors.js';
import { checkJobEventFilter, checkJobEventNames, JOB_EVENT_LISTENER_FILTER_SHAPE } from './job-event-checks.js';
import { EVENT_OF, toJobEvent } from './job-event-of.js';
import type {
  AttemptEnd,
  JobEvent,
  JobEventListener,
  JobEventListenerFilter,
  JobEventName,
} from './job-event-types.js';
import { notify, subscribe, type AttemptEnded, type AttemptStarted, type JobsEnqueued } from './job-observations.js';
import type { ClaimedJob } from './records.js';
import { describeValue } from './validation.js';

export type { AttemptEnded, AttemptStarted, EnqueuedJob, JobsEnqueued } from './job-observations.js';
export * from './job-event-types.js';
export { checkJobEventFilter, checkJobEventNames } from './job-event-checks.js';

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

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}
