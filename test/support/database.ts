import pg from 'pg';

/**
 * The server itself. Test setup, DDL and assertions read it here even when the suite runs through
 * a pooler: what they see must not depend on the pooler under test.
 */
export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: the Jest globalSetup should have set it');
  return url;
}

export type PoolerMode = 'transaction' | 'session';

export interface JobsConnection {
  connection: string;
  pooler?: PoolerMode;
  directConnection?: string;
  maxConnections?: number;
}

/** JOBS_TEST_POOLER: the pooler mode the suite runs through (PgBouncer, started by the globalSetup), if any. */
export function testPooler(): PoolerMode | undefined {
  const mode = process.env.JOBS_TEST_POOLER;
  if (!mode) return undefined;
  if (mode !== 'transaction' && mode !== 'session') {
    throw new Error(`JOBS_TEST_POOLER must be "transaction" or "session", got "${mode}"`);
  }
  return mode;
}

/**
 * How the tests' apps reach the database, as JobsModule options to spread: the server itself, or,
 * with JOBS_TEST_POOLER, the PgBouncer in front of it and the server for what needs a session.
 */
export function jobsConnection(): JobsConnection {
  const pooler = testPooler();
  if (!pooler) return { connection: databaseUrl() };
  const pooled = process.env.JOBS_TEST_POOLED_URL;
  if (!pooled) throw new Error('JOBS_TEST_POOLER is set but JOBS_TEST_POOLED_URL is not: the globalSetup sets it');
  // A session pooler holds a server connection per client session: the files that run three instances
  // at once must fit PgBouncer's default pool of 20, so each instance keeps to 6.
  return {
    connection: pooled,
    pooler,
    directConnection: databaseUrl(),
    ...(pooler === 'session' ? { maxConnections: 6 } : {}),
  };
}

/** A schema name no other test file or run uses. */
export function uniqueSchema(prefix: string): string {
  return `t_${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
}

export async function sql<T = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: databaseUrl() });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}

export async function dropSchemas(...schemas: string[]): Promise<void> {
  for (const s of schemas) await sql(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
}

/** What a rescue does to a job whose lease ran out: back to the queue, no worker. */
export async function takeLeaseAway(schema: string, id: string): Promise<void> {
  await sql(`UPDATE "${schema}".job SET state = 'queued', worker_id = NULL, lease_expires_at = NULL WHERE id = $1`, [
    id,
  ]);
}
