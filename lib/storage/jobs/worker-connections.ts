import type { OnApplicationShutdown } from '@nestjs/common';
import type { PoolExecutor } from '../connection/sql-executor.js';
import { WorkerPool } from '../connection/worker-pool.js';
import type { StorageContext } from '../storage-context.js';

/** How long closing the worker's pool may wait for its sessions to end. */
const CLOSE_WITHIN_MS = 5_000;

/** Claims, up to three outcome writes and a renewal can be in flight at once. */
const WORKER_CONNECTIONS = 5;

/**
 * The worker's hot-path connections (claims, outcome writes, renewals),
 * shared by the claim and outcome storage and opened on first use (see
 * WorkerPool).
 */
export class WorkerConnections implements OnApplicationShutdown {
  private pool: WorkerPool | null = null;

  constructor(
    private readonly context: StorageContext,
    /**
     * Commit claims, outcomes and renewals without waiting for the WAL flush
     * (worker.synchronousCommit false). A PostgreSQL crash can then undo the
     * last moments of them: those jobs run again (at least once still holds);
     * no job is ever lost, because enqueues always wait for the flush.
     */
    private readonly relaxedCommit: boolean,
  ) {}

  /** The pool's executor, opening the pool if needed. */
  get executor(): PoolExecutor {
    return this.opened().executor;
  }

  /** Connects every session now, so the first jobs do not wait for them. */
  async open(): Promise<void> {
    await this.opened().warm(WORKER_CONNECTIONS);
  }

  private opened(): WorkerPool {
    return (this.pool ??= new WorkerPool(this.context, WORKER_CONNECTIONS, this.relaxedCommit));
  }

  /** Closes the sessions; the next use opens them again. */
  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = null;
    await pool?.close(CLOSE_WITHIN_MS);
  }

  /** Nest calls this on shutdown: the worker closes its connections itself, anything else that opened them here. */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}
