/**
 * How many connections the enqueuer and each worker may open through the
 * chaos' PgBouncer (--pooler session); kept apart from chaos/pooler.ts so
 * that options.ts can check --workers without loading pg.
 */

/** PgBouncer's default_pool_size, which the harness leaves as it is: server connections per database and user. */
export const PGBOUNCER_POOL_SIZE = 20;

/**
 * The enqueuer's maxConnections in session mode: its pool of one (enqueueMany
 * calls are serial) and the LISTEN connection, which goes to directConnection.
 */
export const SESSION_ENQUEUER_MAX_CONNECTIONS = 2;

/** The fewest connections a worker opens through the pooler: claims and outcomes 2, renewals 1, its own pool 1. */
const LEAST_POOLED_PER_WORKER = 4;

/**
 * A worker's maxConnections behind a session pooler. A session holds its
 * server connection from connect to close, so the sessions every instance
 * keeps open must fit in PgBouncer's pool of 20 together, or a session past
 * them waits (query_wait_timeout, 120 s by default) for a server connection
 * that an idle session of another process never gives back: a lease renewal
 * among them would be late and the lease lost. The direct run's poolSize of
 * concurrency + 5 (18 connections a worker) would need 54. So each worker
 * gets an equal share of what the enqueuer leaves, plus the LISTEN
 * connection, which goes to directConnection and not through PgBouncer; the
 * library shares it out (the worker's claims and outcomes 2, renewals 1, the
 * rest its own pool, which the handlers' ctx.transaction() and inserts
 * queue for). A worker's start also opens two short probe sessions, before
 * its pool; they close within a second, so a wait for them is short.
 *
 * A transaction pooler needs none of this: a client holds a server
 * connection only for a transaction, and the workers keep the direct run's
 * pool (see chaos/worker.ts).
 */
export function sessionWorkerMaxConnections(workers: number): number {
  const share = Math.floor((PGBOUNCER_POOL_SIZE - (SESSION_ENQUEUER_MAX_CONNECTIONS - 1)) / workers);
  return share + 1;
}

/** The most workers a session pooler run can have; parseOptions refuses more. */
export const SESSION_MAX_WORKERS = Math.floor(
  (PGBOUNCER_POOL_SIZE - (SESSION_ENQUEUER_MAX_CONNECTIONS - 1)) / LEAST_POOLED_PER_WORKER,
);
