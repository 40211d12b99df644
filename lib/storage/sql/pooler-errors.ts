import { JobsError } from '../../model/index.js';

/** SQLSTATEs of a named prepared statement the session does not have, or has from another client. */
const MISSING_STATEMENT = '26000';
const DUPLICATE_STATEMENT = '42P05';

/**
 * The JobsError for a driver error that says a transaction pooler sits in
 * front of the server while the module was not told so: the session that
 * prepared a named statement is not the one that runs it. Null for any
 * other error.
 */
export function poolerRefusal(error: unknown): JobsError | null {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code !== MISSING_STATEMENT && code !== DUPLICATE_STATEMENT) return null;
  if (typeof message !== 'string' || !message.includes('prepared statement')) return null;
  const refusal = new JobsError(
    `nestjs-durable-jobs: PostgreSQL answered "${message}": the connection goes through a transaction pooler ` +
      `(PgBouncer in transaction mode, Supavisor, RDS Proxy), which hands each transaction to any server session. ` +
      `Potential fix: JobsModule.forRoot({ pooler: 'transaction', directConnection: <a URL straight to the server> }); ` +
      `see the "Connection poolers and managed PostgreSQL" guide.`,
  );
  (refusal as { cause?: unknown }).cause = error;
  return refusal;
}
