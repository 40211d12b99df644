import type { OnApplicationShutdown } from '@nestjs/common';
import type { PoolExecutor } from '../sql/sql-executor.js';
import { WorkerPool } from './worker-pool.js';
import type { StorageContext } from '../sql/storage-context.js';

/** How long closing the worker's pools may wait for their sessions to end. */
const CLOSE_WITHIN_MS = 5_000;

/**
 * The worker's own connections, opened on first use (see WorkerPool): one
 * pool for claims, outcome writes and step records, sized by the
 * instance's connection budget, and one kept for lease renewals alone, so
 * that a renewal never waits for a connection behind claims or steps (a
 * lease that runs out while its job still runs interrupts the job).
 */
export class WorkerConnections implements OnApplicationShutdown {
  private pool: WorkerPool | null = null;
  private renewalPool: WorkerPool | null = null;

  constructor(
    private readonly context: StorageContext,
    /**
     * Commit claims, outcomes, step records and renewals without waiting for
     * the WAL flush (worker.synchronousCommit false). A PostgreSQL crash can
     * then undo the last moments of them: those jobs run again (at least
     * once still holds); no job is ever lost, because enqueues always wait
     * for the flush.
     */
    private readonly relaxedCommit: boolean,
  ) {}

  /** Claims, outcome writes and step records, opening the pool if needed. */
  get executor(): PoolExecutor {
    return (this.pool ??= new WorkerPool(this.context, this.size, this.relaxedCommit)).executor;
  }

  /** Lease renewals' own connection, opening it if needed. */
  get renewals(): PoolExecutor {
    const size = Math.max(1, this.context.plan.budget.renewals);
    return (this.renewalPool ??= new WorkerPool(this.context, size, this.relaxedCommit, 'renewals')).executor;
  }

  /** Sessions open now on these pools. */
  get openSessions(): number {
    return (this.pool?.open ?? 0) + (this.renewalPool?.open ?? 0);
  }

  /** Sessions these pools may open at most. */
  get configured(): number {
    return this.size + this.context.plan.budget.renewals;
  }

  private get size(): number {
    // An instance without a worker of its own (the testing kit's drainer, the CLI) still claims through here.
    return Math.max(2, this.context.plan.budget.worker);
  }

  /** Connects every session now, so the first jobs do not wait for them. */
  async open(): Promise<void> {
    const pool = (this.pool ??= new WorkerPool(this.context, this.size, this.relaxedCommit));
    void this.renewals;
    await Promise.all([pool.warm(this.size), this.renewalPool!.warm(1)]);
  }

  /** Closes the sessions; the next use opens them again. */
  async close(): Promise<void> {
    const pools = [this.pool, this.renewalPool];
    this.pool = null;
    this.renewalPool = null;
    await Promise.all(pools.map((p) => p?.close(CLOSE_WITHIN_MS)));
  }

  /** Nest calls this on shutdown: the worker closes its connections itself, anything else that opened them here. */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}
