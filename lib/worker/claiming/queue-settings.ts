import type { Logger } from '@nestjs/common';
import type { QueueConfig, QueueStorage } from '../../storage/queues/queue-storage.interface.js';

/**
 * The worker's copy of the queues' settings: which queues the plain claim
 * may serve, which are paused, and which must go through the controlled
 * claim (limits, groups, serial keys). Refreshed at start, on every 'queues'
 * notification and at each poll; the controlled claim itself re-reads the
 * settings under its lock, so a stale copy can only delay, never break, a
 * limit.
 */
export class QueueSettings {
  private readonly byQueue = new Map<string, QueueConfig>();
  private loading: Promise<void> | null = null;
  /** A read asked for while one is under way: that one may have started before the change. */
  private next: Promise<void> | null = null;

  constructor(
    private readonly storage: QueueStorage,
    private readonly logger: Logger,
  ) {}

  /**
   * Re-reads the settings. A call while a read is under way gets one more read after it (calls
   * meanwhile share that one): the read under way may predate the change a notification announced.
   */
  refresh(): Promise<void> {
    if (!this.loading) return this.start();
    this.next ??= this.loading.then(() => {
      this.next = null;
      return this.start();
    });
    return this.next;
  }

  private start(): Promise<void> {
    const read = this.load().finally(() => {
      if (this.loading === read) this.loading = null;
    });
    this.loading = read;
    return read;
  }

  private async load(): Promise<void> {
    try {
      const configs = await this.storage.configs();
      this.byQueue.clear();
      for (const c of configs) this.byQueue.set(c.queue, c);
    } catch (error) {
      this.logger.warn(`Reading the queues' settings failed: ${(error as Error).message}`);
    }
  }

  /** Whether the queue is paused: neither claim asks for its jobs. */
  paused(queue: string): boolean {
    return this.byQueue.get(queue)?.paused ?? false;
  }

  /** Whether a concurrency limit counts the queue's claimed jobs (its own, a job name's or a group's in it). */
  limited(queue: string): boolean {
    const c = this.byQueue.get(queue);
    return (
      !!c &&
      (c.concurrency !== null ||
        c.names.some((n) => n.concurrency !== null) ||
        (c.hasGroups && (c.groupConcurrency !== null || c.groupLimits > 0)))
    );
  }

  /**
   * Whether the queue is limited as a whole and by nothing else (no groups, serial keys, job-name
   * limits or rate, its own or its groups'): the queue whose jobs a claim may take ahead
   * (claim_controlled's p_ahead).
   */
  limitedAsAWhole(queue: string): boolean {
    const c = this.byQueue.get(queue);
    return (
      !!c &&
      c.concurrency !== null &&
      c.rateLimit === null &&
      c.groupRateLimit === null &&
      !c.hasGroups &&
      !c.hasSerial &&
      !c.names.length
    );
  }

  /** Whether the queue needs the controlled claim. */
  controlled(queue: string): boolean {
    const c = this.byQueue.get(queue);
    return (
      !!c &&
      (c.paused ||
        c.concurrency !== null ||
        c.rateLimit !== null ||
        c.groupRateLimit !== null ||
        c.hasGroups ||
        c.hasSerial ||
        c.names.some((n) => n.concurrency !== null || n.rateLimit !== null || n.rateKey !== null))
    );
  }

  /**
   * Whether a rate limit counts the queue's starts: its own, its groups' (`groups.rateLimit`), a job
   * name's in it, or a key one of its names refers to. Its claimed jobs must start within the lag
   * their window counted (StartDeadlines), and none is held here beyond the free slots.
   */
  rated(queue: string): boolean {
    const c = this.byQueue.get(queue);
    return (
      !!c &&
      (c.rateLimit !== null ||
        c.groupRateLimit !== null ||
        c.names.some((n) => n.rateLimit !== null || n.rateKey !== null))
    );
  }
}
