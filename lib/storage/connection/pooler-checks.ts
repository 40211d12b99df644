import type pg from 'pg';
import { describeValue, JobsError, toDatabaseError } from '../../model/index.js';
import { clientSessions, sharesServerSessions, type ProbeSessions } from './pooler-probe.js';
import type { PoolerMode } from '../sql/session-settings.js';

const POOLER_FIX = `pooler: 'transaction', with directConnection: <a URL straight to the server> for LISTEN and migrations`;

/** `pooler` as given: null when absent; a JobsError for anything but the two modes. */
export function checkPooler(value: unknown): PoolerMode | null {
  if (value === undefined) return null;
  if (value === 'transaction' || value === 'session') return value;
  throw new JobsError(
    `JobsModule: "pooler" must be 'transaction' or 'session' (what sits in front of PostgreSQL), got ${describeValue(value)}. ` +
      `Potential fix: pooler: 'transaction' for PgBouncer in transaction mode, Supavisor's or Neon's pooled URL, or RDS Proxy; ` +
      `pooler: 'session' for a session pooler; leave it out for a direct connection.`,
  );
}

/** Runs the probe; a session that cannot open fails the start as a connection would. */
async function transactionPooled(sessions: ProbeSessions, what: string): Promise<boolean> {
  try {
    return await sharesServerSessions(sessions);
  } catch (error) {
    throw toDatabaseError(`JobsModule: ${what}`, error);
  }
}

/**
 * Refuses a connection that goes through a transaction pooler while the
 * options say otherwise: its named statements and session settings would
 * meet other clients' server sessions.
 */
export async function checkNotTransactionPooled(
  field: 'connection' | 'dataSource',
  pooler: PoolerMode | null,
  sessions: ProbeSessions,
): Promise<void> {
  if (!(await transactionPooled(sessions, 'connecting to PostgreSQL'))) return;
  throw new JobsError(
    `JobsModule: "${field}" goes through a transaction pooler (two of its sessions were served by one server process)` +
      `${pooler === 'session' ? `, although "pooler" is 'session'` : ''}: named prepared statements and session settings ` +
      `do not survive there. Potential fix: ${POOLER_FIX}.`,
  );
}

/** `directConnection` must reach the server itself: not the pooled URL again, nor another transaction pooler. */
export async function checkDirectConnection(direct: pg.ClientConfig, connection: unknown): Promise<void> {
  const url = typeof connection === 'string' ? connection : (connection as { url?: unknown } | undefined)?.url;
  if (url !== undefined && url === direct.connectionString) {
    throw new JobsError(
      `JobsModule: "directConnection" is the same URL as "connection", so LISTEN and migrations would go through the pooler too. ` +
        `Potential fix: directConnection: the server's own URL (Supabase's "direct connection", Neon's URL without "-pooler", the database's port rather than the pooler's).`,
    );
  }
  if (await transactionPooled(clientSessions(direct), 'connecting to "directConnection"')) {
    throw new JobsError(
      `JobsModule: "directConnection" goes through a transaction pooler (two of its sessions were served by one server process), ` +
        `where LISTEN never delivers. Potential fix: directConnection: the server's own URL, or a session pooler's.`,
    );
  }
}
