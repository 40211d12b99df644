import { checkInteger, checkOptions, INT4_MAX, optionShape } from '../../model/index.js';

/** How long the library waits on PostgreSQL, in ms. */
export interface DatabaseTimeouts {
  /**
   * Server-side limit on each statement of the library's own sessions (the
   * connection it owns, the worker's pool); default 30 000. Migrations run
   * without it.
   */
  statement?: number;
  /**
   * Client-side limit on each query the library sends, on any connection
   * (the app's DataSource included): a database that stops answering with
   * its sockets open fails the call instead of hanging it; default 35 000.
   */
  query?: number;
  /** Limit on opening a connection; default 10 000. */
  connect?: number;
}

export type ResolvedTimeouts = Required<DatabaseTimeouts>;

export const TIMEOUTS_SHAPE = optionShape<DatabaseTimeouts>({ statement: true, query: true, connect: true });

export function resolveTimeouts(given: DatabaseTimeouts | undefined): ResolvedTimeouts {
  const t = checkOptions('JobsModule "timeouts"', given, 'timeouts: { query: 10_000 }', TIMEOUTS_SHAPE) ?? {};
  const field = (name: keyof DatabaseTimeouts, fallback: number) =>
    t[name] === undefined ? fallback : checkInteger('JobsModule "timeouts"', name, t[name], 1, INT4_MAX, fallback);
  const statement = field('statement', 30_000);
  return { statement, query: field('query', Math.max(35_000, statement + 5_000)), connect: field('connect', 10_000) };
}

/** What every connection the library opens carries, so operators can find them in pg_stat_activity. */
const APPLICATION_NAME = 'nestjs-durable-jobs';

/**
 * Settings for a `pg` client or pool of the library's own: client-side
 * timeouts, TCP keepalive, a name. The server-side statement timeout is no
 * startup parameter (poolers refuse those): see SessionSettings.
 */
export function pgSessionSettings(timeouts: ResolvedTimeouts, role: string) {
  return {
    application_name: `${APPLICATION_NAME} ${role}`.trim(),
    query_timeout: timeouts.query,
    connectionTimeoutMillis: timeouts.connect,
    // A peer that vanished without a FIN (a cut network) is noticed by the kernel, not never.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  };
}
