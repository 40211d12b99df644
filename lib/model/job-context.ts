import type { DependencyOn } from './job-state.js';
import type { UniqueWhile } from './records.js';

/** What a running handler receives besides its payload. */
export interface JobLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string, trace?: string): void;
  debug(message: string): void;
}

/** What a running handler receives besides its payload: the attempt, an abort signal, a logger, progress and workflow calls. */
export interface JobContext {
  readonly jobId: string;
  readonly name: string;
  readonly queue: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  /** Aborted on timeout, cancellation, lost lease and shutdown; pass it to I/O. */
  readonly signal: AbortSignal;
  readonly logger: JobLogger;
  /**
   * Ends this attempt and puts the job back until `ms` from now without
   * spending an attempt (an API said "not now"); the history shows it
   * snoozed. Never returns: it throws a SnoozeJob for the worker to catch.
   */
  snooze(ms: number, reason?: string): never;
  /** Reports progress in [0, 1]; writes are throttled, the last value always lands. */
  progress(fraction: number, message?: string): Promise<void>;
  /** Adds a member to this job's batch now; the batch's `then` waits for it too. */
  addToBatch<H extends JobHandler>(
    job: JobClass<H> | string,
    payload: PayloadOf<H>,
    options?: StepOptions,
  ): Promise<{ id: string }>;
  /**
   * Stages a job to start when this one ends: on 'success' (default),
   * 'failure' (failed for good) or 'always'. It is written in the same
   * transaction as this job's outcome, and only if that outcome matches.
   */
  continueWith<H extends JobHandler>(
    job: JobClass<H> | string,
    payload: PayloadOf<H>,
    options?: StepOptions & { on?: DependencyOn },
  ): void;
}

/** A class, as `@Job` handlers are passed to `enqueue()` and friends. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type JobClass<H = unknown> = new (...args: any[]) => H;

/** Per-job options, wherever a job is started. */
export interface StepOptions {
  /** Milliseconds from now before the job may run. */
  delay?: number;
  /** An absolute time before which the job does not run. */
  runAt?: Date;
  /** Higher runs first. */
  priority?: number;
  queue?: string;
  maxAttempts?: number;
  /** Milliseconds one attempt may run. */
  timeout?: number;
  /**
   * A tenant (or any key to share fairly by): claims rotate across the
   * groups with due work, and a group holding more than its share of the
   * queue's running jobs is served after the others.
   */
  group?: string;
  /** At most one job of this key runs at a time, across instances; the others wait in enqueue order. */
  serialKey?: string;
  /** One job per key at a time: a duplicate enqueue returns the existing job instead. */
  unique?: UniqueOptions;
  /** Past this, the job does not start or retry: it fails with a DeadlineExceededError. */
  deadline?: Date;
}

/** A unique key for a job: while a job holds it, another enqueue of the key returns that job instead. */
export interface UniqueOptions {
  /** The key (at most 256 characters); jobs of any name share the key space. */
  key: string;
  /**
   * How long the key is held, by the job's state: while it is queued or
   * waiting ('queued'), also while it runs ('queued-or-active', the
   * default), or until it succeeded ('until-succeeded': a failed job holds
   * it until retried or pruned).
   */
  while?: UniqueWhile;
  /**
   * Instead of by state: one job per key per window of this many ms
   * (windows aligned to the clock, as a throttle). Not with `while`.
   */
  for?: number;
  /**
   * A duplicate replaces the payload and run time of the waiting job
   * holding the key (a debounce), unless that job already runs.
   */
  replace?: boolean;
}

/** What a `@Job` class implements: `run` for each attempt, and optionally `onFailure` once the job has failed for good. */
export interface JobHandler<Payload = unknown, Result = unknown> {
  run(payload: Payload, ctx: JobContext): Promise<Result> | Result;
  /** Runs once, when the job has failed for good (no attempt left, or a PermanentJobError). */
  onFailure?(payload: Payload, error: Error, ctx: JobContext): Promise<void> | void;
}

/** The payload type a handler class accepts, read from its `run` signature. */
export type PayloadOf<H> = H extends { run(payload: infer P, ...rest: never[]): unknown } ? P : never;
