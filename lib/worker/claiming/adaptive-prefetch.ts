/**
 * How many jobs to claim ahead of free slots when the user did not fix it:
 * enough to cover ~100 ms at the rate jobs are finishing now. Fast no-op jobs
 * get large batched claims; slow jobs get none, so that instances share a
 * slow queue instead of one of them holding it in its buffer.
 */
export class AdaptivePrefetch {
  private completed = 0;
  private windowStart: number;
  private rate = -1;

  constructor(
    /** Before the first measurement: one claim fills the slots and as many again. */
    private readonly initial: number,
    private readonly max = 500,
    private readonly horizonMs = 100,
    /** Milliseconds since the epoch; tests pass their own. */
    private readonly now: () => number = Date.now,
  ) {
    this.windowStart = now();
  }

  /** Starts the first window now: the time before the worker starts says nothing of the rate. */
  begin(): void {
    this.completed = 0;
    this.windowStart = this.now();
  }

  /** A job ended here: the rate is measured over windows of at least 100 ms. */
  recordCompletion(): void {
    this.completed++;
    const now = this.now();
    const elapsed = now - this.windowStart;
    if (elapsed >= 100) {
      const current = (this.completed * 1000) / elapsed;
      this.rate = this.rate < 0 ? current : this.rate * 0.5 + current * 0.5;
      this.completed = 0;
      this.windowStart = now;
    }
  }

  /** How many jobs finish in `ms` at the current rate (0 before the first measurement). */
  jobsWithin(ms: number): number {
    return this.rate <= 0 ? 0 : Math.round((this.rate * ms) / 1000);
  }

  /** Jobs to claim ahead of free slots now. */
  get value(): number {
    if (this.rate < 0) return Math.min(this.max, this.initial);
    // A long quiet spell: the last rate says nothing about the next job.
    if (this.now() - this.windowStart > 1000 && this.completed === 0) this.rate = 0;
    return Math.min(this.max, Math.round((this.rate * this.horizonMs) / 1000));
  }
}
