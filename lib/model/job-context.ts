import type { DependencyOn } from './job-state.js';

/** What a running handler receives besides its payload. */
export interface JobLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string, trace?: string): void;
  debug(message: string): void;
}

export interface JobContext {
  readonly jobId: string;
  readonly name: string;
  readonly queue: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  /** Aborted on timeout, cancellation, lost lease and shutdown; pass it to I/O. */
  readonly signal: AbortSignal;
  readonly logger: JobLogger;
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
}

export interface JobHandler<Payload = unknown, Result = unknown> {
  run(payload: Payload, ctx: JobContext): Promise<Result> | Result;
  /** Runs once, when the job has failed for good (no attempt left, or a PermanentJobError). */
  onFailure?(payload: Payload, error: Error, ctx: JobContext): Promise<void> | void;
}

/** The payload type a handler class accepts, read from its `run` signature. */
export type PayloadOf<H> = H extends { run(payload: infer P, ...rest: never[]): unknown } ? P : never;
