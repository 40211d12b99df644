import pg from 'pg';
import { settlesWithin } from '../../model/index.js';
import type { StorageContext } from '../sql/storage-context.js';
import { ownSessionSettings } from '../sql/connection-plan.js';
import { pgPoolOf } from '../sql/pg-driver.js';
import type { ServerSetting, SessionSettings } from '../sql/session-settings.js';
import { PoolExecutor } from '../sql/sql-executor.js';
import { pgSessionSettings } from '../sql/timeouts.js';

/**
 * The worker's sessions plan without bitmap scans and sequential scans, so
 * that its statements walk their indexes in order and stop at their limit
 * whatever the statistics say. The claim's estimate of due jobs multiplies
 * the selectivities of state, queue and name as if they were independent;
 * in a table that keeps a large finished history they are far from it
 * (queued rows are few, of few queues), so the planner expects about one row
 * and may pick a bitmap heap scan that reads and sorts every due job of the
 * queue on each claim. Measured with 300,000 finished jobs kept and 5,000
 * due: a claim of 10 took 3.9 ms (p50) against 0.6 ms on an empty table, and
 * grows with the backlog. A table with no statistics yet (a new schema,
 * before autovacuum's first round) looks a few pages long, and the plain
 * claim then found its ctids by reading the whole table: 30,000 queued jobs
 * drained at about 2,000 jobs/s instead of over 14,000. Nothing on this path
 * needs to read a table through: the outcome writes and renewals find their
 * rows by id, the claims by their indexes.
 * Generic plans: the statements are prepared, and planned once per
 * connection; a custom plan re-planned each claim, which with a large
 * history's statistics cost 0.2 ms of a 0.5 ms claim (0.82 ms against 0.51
 * ms, p50, 300,000 kept).
 */
export const WORKER_PLANNER_SETTINGS: readonly ServerSetting[] = [
  ['enable_bitmapscan', 'off'],
  ['enable_seqscan', 'off'],
  ['plan_cache_mode', 'force_generic_plan'],
];

/** Claims, outcomes and step records commit without waiting for the WAL flush (worker.synchronousCommit false). */
const RELAXED_COMMIT: ServerSetting = ['synchronous_commit', 'off'];

/** The settings of a worker's sessions, applied as the module's pooler allows. */
export function workerSessionSettings(context: StorageContext, relaxedCommit: boolean): SessionSettings {
  return ownSessionSettings(context.plan.pooler, context.timeouts).with([
    ...WORKER_PLANNER_SETTINGS,
    ...(relaxedCommit ? [RELAXED_COMMIT] : []),
  ]);
}

/**
 * Connections of a worker's own (claims, outcomes, step records; renewals
 * on a pool of their own): a small pool made from the very settings of
 * TypeORM's pool, so the worker neither waits behind the app's queries nor
 * takes the app's connections. With `relaxedCommit` its sessions commit
 * without waiting for the WAL flush: a PostgreSQL crash can then undo the
 * last moments of claims and outcomes, and those jobs run again. Enqueues
 * never go through it.
 */
export class WorkerPool {
  private readonly pool: pg.Pool;
  readonly executor: PoolExecutor;

  constructor(context: StorageContext, size: number, relaxedCommit: boolean, role = 'worker') {
    // pg keeps a pool's settings as `options`; its typings leave them out.
    const { onConnect: _appHook, ...base } = (pgPoolOf(context.dataSource) as unknown as { options: pg.PoolConfig })
      .options as pg.PoolConfig & { onConnect?: unknown };
    const session = workerSessionSettings(context, relaxedCommit);
    this.pool = new pg.Pool({
      ...base,
      ...pgSessionSettings(context.timeouts, role),
      ...session.poolHook(),
      max: size,
      // A worker lives as long as the app: an idle spell must not cost the
      // next job a new connection (several ms, measured) on its way to start.
      idleTimeoutMillis: 0,
      // Behind a transaction pooler each lone statement travels with its BEGIN and COMMIT in one
      // round trip (PoolExecutor.alone).
      pipeline: session.wrapsStatements,
    } as pg.PoolConfig);
    // An idle connection that breaks must not crash the process; the next query reconnects.
    this.pool.on('error', () => undefined);
    // The pool's own settings bound connects and queries: no timer of ours on the hot path.
    this.executor = new PoolExecutor(this.pool as never, { queryMs: 0, connectMs: 0, session });
  }

  /** Sessions open now (connected or connecting). */
  get open(): number {
    return this.pool.totalCount;
  }

  /** Connects up to `n` sessions at once, so a burst of work finds them open. */
  async warm(n: number): Promise<void> {
    const clients = await Promise.all(Array.from({ length: n }, () => this.pool.connect()));
    for (const c of clients) c.release();
  }

  /** Ends the pool; past `withinMs` (a silent database) the sockets are dropped instead. */
  async close(withinMs: number): Promise<void> {
    const ended = await settlesWithin(this.pool.end(), withinMs);
    if (!ended) {
      // pg keeps its clients as `_clients`; each holds its socket as `connection.stream`.
      const clients = (this.pool as unknown as { _clients?: Array<{ connection?: { stream?: { destroy(): void } } }> })
        ._clients;
      for (const c of clients ?? []) c.connection?.stream?.destroy();
    }
  }
}
