import pg from 'pg';

export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: the Jest globalSetup should have set it');
  return url;
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
