import type { Logger } from '@nestjs/common';
import type { ClaimStorage } from '../storage/jobs/claim/claim-storage.interface.js';

/**
 * The queues a worker claims from, in the order it asks them: the configured
 * list in its priority order, or else every queue it has heard of (its
 * handlers', notifications', and those holding work at each poll), starting
 * one further on each pass so no queue is always asked last.
 */
export class WorkerQueues {
  private readonly known = new Set<string>();
  private rotate = 0;

  constructor(
    private readonly configured: readonly string[] | null,
    private readonly storage: ClaimStorage,
    private readonly logger: Logger,
  ) {}

  /** A queue heard of; ignored when a configured list leaves it out. */
  add(queue: string): void {
    if (!this.configured || this.configured.includes(queue)) this.known.add(queue);
  }

  /** Adds the queues that hold work now (nothing to learn with a configured list). */
  async refresh(): Promise<void> {
    if (this.configured) return;
    try {
      for (const q of await this.storage.queuesWithWork()) this.known.add(q);
    } catch (error) {
      this.logger.warn(`Listing queues failed: ${(error as Error).message}`);
    }
  }

  /** This pass's order. */
  order(): readonly string[] {
    if (this.configured) return this.configured;
    const all = [...this.known];
    const start = this.rotate++ % Math.max(1, all.length);
    return [...all.slice(start), ...all.slice(0, start)];
  }
}
