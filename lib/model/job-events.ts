import type { AttemptOutcome, ClaimedJob } from './records.js';

/** One attempt that ended on this instance, with an outcome to record. */
export interface AttemptEnded {
  job: ClaimedJob;
  outcome: AttemptOutcome['kind'];
  /** From the handler's start to its outcome, in ms. */
  durationMs: number;
}

/**
 * In-process notifications from this instance's worker, for observers such
 * as metrics. With no listener the worker does not even take the time, so
 * the hot path pays for observation only where someone observes.
 */
export class JobEvents {
  private readonly listeners: Array<(event: AttemptEnded) => void> = [];

  get observed(): boolean {
    return this.listeners.length > 0;
  }

  /** Returns the unsubscribe function. A listener that throws is ignored: it must not fail a job. */
  onAttemptEnded(listener: (event: AttemptEnded) => void): () => void {
    this.listeners.push(listener);
    return () => {
      const at = this.listeners.indexOf(listener);
      if (at >= 0) this.listeners.splice(at, 1);
    };
  }

  attemptEnded(event: AttemptEnded): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // An observer's bug is the observer's; the job's outcome stands.
      }
    }
  }
}
