import type { ClaimedJob } from '../../model/index.js';

/**
 * From this average handler time on, a worker's claims of a limited queue
 * keep to its share of the limit while another worker waits for slots.
 * Sharing costs a claim per share: two workers of 5 slots turn a queue
 * limited to 10 in twice the claims one worker of 10 does (no-op jobs: 21%
 * fewer a second in `npm run bench`, 25% at synchronous commit). It pays
 * where the handlers' time outweighs a few claim round trips (~1 ms each
 * here), which is also where running them all on one instance loads that
 * machine. The time is wall time from the start to the end of an attempt:
 * a no-op handler in a busy event loop measures 1-2 ms, which is why the
 * line is not lower.
 */
export const SHARE_FROM_MS = 5;

/** How much of the latest handler time a queue's average takes in. */
const WEIGHT = 0.2;

/** The handler time of each limited queue's attempts here, as a moving average. */
export class HandlerTimes {
  private readonly startedAt = new WeakMap<ClaimedJob, number>();
  private readonly averages = new Map<string, number>();

  started(job: ClaimedJob): void {
    this.startedAt.set(job, performance.now());
  }

  ended(job: ClaimedJob): void {
    const at = this.startedAt.get(job);
    if (at === undefined) return;
    this.startedAt.delete(job);
    const took = performance.now() - at;
    const average = this.averages.get(job.queue);
    this.averages.set(job.queue, average === undefined ? took : average + (took - average) * WEIGHT);
  }

  /** Whether the queue's handlers take SHARE_FROM_MS or more here. */
  runLong(queue: string): boolean {
    return (this.averages.get(queue) ?? 0) >= SHARE_FROM_MS;
  }
}
