/**
 * Gives every test worker a DATABASE_URL: the one already set, else the machine's PostgreSQL on
 * 127.0.0.1:5432, else an embedded PostgreSQL kept in .jobs-data/test (stopped in globalTeardown).
 * JOBS_TEST_PG_PROBE=host:port moves the probe, e.g. to a closed port to exercise the embedded path.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import pg from 'pg';

export type GlobalWithEmbedded = typeof globalThis & { __jobsEmbeddedPostgres?: ChildProcess };

export default async function globalSetup(): Promise<void> {
  if (process.env.DATABASE_URL) return;
  const probe = process.env.JOBS_TEST_PG_PROBE ?? '127.0.0.1:5432';
  const url = `postgres://postgres@${probe}/postgres`;
  if (await answers(url)) {
    process.env.DATABASE_URL = url;
    return;
  }
  const child = spawn(
    process.execPath,
    ['--import', './test/support/register-swc.mjs', 'test/setup/embedded-server.ts'],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  (globalThis as GlobalWithEmbedded).__jobsEmbeddedPostgres = child;
  process.env.DATABASE_URL = await readyUrl(child);
  console.log(`\nNo PostgreSQL on ${probe}: tests use an embedded one (data in .jobs-data/test)`);
}

/** The "url <url>" line the server process prints once it accepts connections. */
function readyUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (line.startsWith('url ')) resolve(line.slice(4));
    });
    child.once('exit', (code) => reject(new Error(`The embedded PostgreSQL for the tests exited (${code})`)));
  });
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
