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
}

export interface JobHandler<Payload = unknown, Result = unknown> {
  run(payload: Payload, ctx: JobContext): Promise<Result> | Result;
  /** Runs once, when the job has failed for good (no attempt left, or a PermanentJobError). */
  onFailure?(payload: Payload, error: Error, ctx: JobContext): Promise<void> | void;
}

/** The payload type a handler class accepts, read from its `run` signature. */
export type PayloadOf<H> = H extends { run(payload: infer P, ...rest: never[]): unknown } ? P : never;
