import { RATE_START_LAG_MS, type ClaimedJob, type Clock } from '../../model/index.js';

/**
 * The latest time each claimed job of a rate-limited queue may start. A
 * rate window counts a claim from its recorded time for `per` plus
 * RATE_START_LAG_MS, and that time is no earlier than the claimer's clock
 * when it sent the claim; a job that has not started by then plus the lag
 * would start outside what its window counted, so it is handed back unspent
 * instead. That is what makes a limit hold at the handlers' starts.
 */
export class StartDeadlines {
  private readonly byId = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  /** Jobs of a rate-limited queue that a claim sent at `sentAt` got. */
  claimed(jobs: readonly ClaimedJob[], sentAt: Date): void {
    const by = sentAt.getTime() + RATE_START_LAG_MS;
    for (const job of jobs) this.byId.set(job.id, by);
  }

  /** Whether the job may start now; it is forgotten either way. */
  mayStart(id: string): boolean {
    const by = this.byId.get(id);
    if (by === undefined) return true;
    this.byId.delete(id);
    return this.clock.now().getTime() <= by;
  }

  /** The job leaves this worker's hands without starting. */
  forget(id: string): void {
    this.byId.delete(id);
  }

  clear(): void {
    this.byId.clear();
  }
}
