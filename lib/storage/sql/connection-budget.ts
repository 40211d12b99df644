import { checkInteger, JobsError } from '../../model/index.js';

/** What decides how an instance's connections are shared out. */
export interface BudgetRequest {
  /** `maxConnections`, if the app set it. */
  maxConnections: unknown;
  /** True when the module opens its own DataSource (`connection`, embedded), false for the app's. */
  owned: boolean;
  /** The pool size the app gave its `connection` options (`poolSize`), if any. */
  appPoolSize?: number;
  /** Whether this instance runs a worker. */
  worker: boolean;
  /** Whether this instance keeps a LISTEN connection (not behind a transaction pooler without `directConnection`). */
  listening: boolean;
}

/**
 * How many connections one instance opens to PostgreSQL (or to its pooler),
 * by use. `max` bounds their sum. When the app shares its DataSource, `app`
 * is 0: the app sizes its own pool, and the library borrows from it for
 * enqueues, reads and ctx.transaction().
 */
export interface ConnectionBudget {
  max: number;
  /** The module's own DataSource: enqueues, reads, admin, ctx.transaction(). */
  app: number;
  /** The worker's claims, outcome writes and step records. */
  worker: number;
  /** Kept for lease renewals alone, so a renewal never waits behind claims, steps or enqueues. */
  renewals: number;
  /** The LISTEN connection. */
  listener: number;
}

/** An instance's connections: open now (null: not counted), and at most. */
export type ConnectionGauge = () => { open: number | null; max: number };

/** The most the module opens when it owns its connection and the app says nothing. */
export const DEFAULT_MAX_CONNECTIONS = 10;
/** The worker's claims, up to three outcome writes in flight and step records. */
const WORKER_CONNECTIONS = { least: 2, most: 8 };

/**
 * Shares `maxConnections` out. The worker's connections take half of what
 * the fixed ones leave (2 to 8), the module's own DataSource the rest.
 * Throws a JobsError naming the setting when the budget cannot hold the
 * least each use needs.
 */
export function connectionBudget(r: BudgetRequest): ConnectionBudget {
  const renewals = r.worker ? 1 : 0;
  const listener = r.listening ? 1 : 0;
  const fixed = renewals + listener;
  const leastWorker = r.worker ? WORKER_CONNECTIONS.least : 0;
  const leastApp = r.owned ? (r.appPoolSize ?? 1) : 0;
  const least = fixed + leastWorker + leastApp;
  const fallback = r.owned
    ? Math.max(DEFAULT_MAX_CONNECTIONS, least)
    : fixed + (r.worker ? WORKER_CONNECTIONS.most / 2 : 0);
  const max =
    r.maxConnections === undefined
      ? fallback
      : checkInteger('JobsModule', 'maxConnections', r.maxConnections, 1, 10_000, fallback);
  if (max < least) {
    const parts = [
      listener && '1 for the LISTEN connection',
      renewals && '1 kept for lease renewals',
      leastWorker && `${leastWorker} for the worker's claims, outcome writes and step records`,
      leastApp && `${leastApp} for the module's own pool (enqueues, reads, ctx.transaction())`,
    ].filter(Boolean);
    throw new JobsError(
      `JobsModule: "maxConnections" is ${max}, but this instance needs at least ${least}: ${parts.join(', ')}. ` +
        `Potential fix: maxConnections: ${least} or more${r.owned ? ` (the default is ${DEFAULT_MAX_CONNECTIONS})` : ''}` +
        `${r.appPoolSize !== undefined ? ', or a smaller connection.poolSize' : ''}` +
        `${r.worker ? ', or worker: { enabled: false } on instances that only enqueue' : ''}.`,
    );
  }
  const rest = max - fixed;
  let worker = 0;
  if (r.worker) {
    worker = r.owned
      ? r.appPoolSize !== undefined
        ? rest - r.appPoolSize
        : Math.min(WORKER_CONNECTIONS.most, Math.max(WORKER_CONNECTIONS.least, Math.floor(rest / 2)))
      : Math.min(WORKER_CONNECTIONS.most, rest);
  }
  const app = r.owned ? rest - worker : 0;
  return { max, app, worker, renewals, listener };
}
