/**
 * Gives every test worker a DATABASE_URL: the one already set, else the machine's PostgreSQL on
 * 127.0.0.1:5432, else an embedded PostgreSQL kept in .jobs-data/test (stopped in globalTeardown).
 * JOBS_TEST_PG_PROBE=host:port moves the probe, e.g. to a closed port to exercise the embedded path.
 */
import pg from 'pg';

type EmbeddedModule = typeof import('../../lib/storage/embedded-postgres.js');
export type GlobalWithEmbedded = typeof globalThis & {
  __jobsEmbeddedPostgres?: Awaited<ReturnType<EmbeddedModule['startEmbeddedPostgres']>>;
};

export default async function globalSetup(): Promise<void> {
  if (process.env.DATABASE_URL) return;
  const probe = process.env.JOBS_TEST_PG_PROBE ?? '127.0.0.1:5432';
  const url = `postgres://postgres@${probe}/postgres`;
  if (await answers(url)) {
    process.env.DATABASE_URL = url;
    return;
  }
  // Jest loads globalSetup as CommonJS through a require hook that skips moduleNameMapper, so the
  // usual `.js` specifier would not find the source; the `.ts` path does, and stays typed above.
  const specifier = '../../lib/storage/embedded-postgres.ts';
  const { startEmbeddedPostgres } = (await import(specifier)) as EmbeddedModule;
  const quiet = { log: () => undefined, warn: (msg: string) => console.warn(msg) };
  const handle = await startEmbeddedPostgres({ dataDir: '.jobs-data/test', logger: quiet });
  (globalThis as GlobalWithEmbedded).__jobsEmbeddedPostgres = handle;
  process.env.DATABASE_URL = handle.url;
  console.log(`\nNo PostgreSQL on ${probe}: tests use an embedded one (data in .jobs-data/test)`);
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  // A refused connection can also surface as an 'error' event; the rejected connect() is enough.
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}
