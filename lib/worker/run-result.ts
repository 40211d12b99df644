import { LeaseLostError, type AttemptOutcome, type Continuation, type SerializedError } from '../model/index.js';

/** What came of one attempt: an outcome to record, or nothing (the job is no longer ours). */
export type RunResult =
  /**
   * `durationMs`: the attempt timed for job event listeners, while any listen (AttemptRunner.run).
   * `recorded`: ctx.transaction() wrote the outcome already, with the handler's own writes.
   */
  | { outcome: AttemptOutcome; continuations?: Continuation[]; durationMs?: number; recorded?: boolean }
  /** Nothing of this worker's to record; `error` is what the handler's signal aborted with. */
  | { outcome: null; reason: 'lost-lease' | 'shutdown'; error: SerializedError };

/** What a worker's attempt is stopped with, or told of, once another worker owns the job. */
export function leaseLostError(jobId: string): LeaseLostError {
  return new LeaseLostError(`Job ${jobId}: this worker lost its lease; another worker owns the job now`);
}
