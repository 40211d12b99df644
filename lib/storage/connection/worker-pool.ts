import pg from 'pg';
import type { DataSource } from 'typeorm';
import { pgPoolOf } from './pg-driver.js';
import { PoolExecutor } from './sql-executor.js';

/**
 * The connections of a worker's hot path (claims, outcomes, renewals): a
 * small pool made from the very settings of TypeORM's pool, so the worker
 * neither waits behind the app's queries nor takes the app's connections.
 * With `relaxedCommit` its sessions commit without waiting for the WAL
 * flush: a PostgreSQL crash can then undo the last moments of claims and
 * outcomes, and those jobs run again. Enqueues never go through it.
 */
export class WorkerPool {
  private readonly pool: pg.Pool;
  readonly executor: PoolExecutor;

  constructor(dataSource: DataSource, size: number, relaxedCommit: boolean) {
    // pg keeps a pool's settings as `options`; its typings leave them out.
    const base = (pgPoolOf(dataSource) as unknown as { options: pg.PoolConfig }).options;
    const options = [base.options, relaxedCommit ? '-c synchronous_commit=off' : null].filter(Boolean).join(' ');
    this.pool = new pg.Pool({
      ...base,
      max: size,
      options: options || undefined,
      application_name: 'nestjs-durable-jobs worker',
      // A worker lives as long as the app: an idle spell must not cost the
      // next job a new connection (several ms, measured) on its way to start.
      idleTimeoutMillis: 0,
    });
    // An idle connection that breaks must not crash the process; the next query reconnects.
    this.pool.on('error', () => undefined);
    this.executor = new PoolExecutor(this.pool as never);
  }

  /** Connects up to `n` sessions at once, so a burst of work finds them open. */
  async warm(n: number): Promise<void> {
    const clients = await Promise.all(Array.from({ length: n }, () => this.pool.connect()));
    for (const c of clients) c.release();
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
