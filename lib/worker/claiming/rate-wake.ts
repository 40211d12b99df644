/**
 * When a rate limit said the next job of a queue may start, the claimer
 * looks again then: one timer for all queues, set to the earliest time any
 * claim was told. Unref'd: a wait for a rate window never holds the process.
 */
export class RateWake {
  private timer: NodeJS.Timeout | null = null;
  private at = 0;

  constructor(private readonly wake: () => void) {}

  /** Looks again in `ms`, unless an earlier look is set already. */
  in(ms: number): void {
    const at = Date.now() + ms;
    if (this.timer && this.at <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.at = at;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.wake();
    }, ms);
    this.timer.unref();
  }

  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
