/**
 * Gives every test worker a DATABASE_URL: the one already set, else the machine's PostgreSQL on
 * 127.0.0.1:5432, else an embedded PostgreSQL kept in .jobs-data/test (stopped in globalTeardown).
 * JOBS_TEST_PG_PROBE=host:port moves the probe, e.g. to a closed port to exercise the embedded path.
 * JOBS_TEST_POOLER=transaction|session puts a PgBouncer in that mode in front of DATABASE_URL (stopped
 * in globalTeardown) and gives its URL as JOBS_TEST_POOLED_URL: the workers, spawned after this
 * returns, inherit both, as do the processes they start.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import pg from 'pg';

export type GlobalWithEmbedded = typeof globalThis & {
  __jobsEmbeddedPostgres?: ChildProcess;
  __jobsPgBouncer?: ChildProcess;
};

export default async function globalSetup(): Promise<void> {
  await settleDatabaseUrl();
  const mode = process.env.JOBS_TEST_POOLER;
  if (!mode) return;
  const child = serverProcess('test/setup/pgbouncer-server.ts');
  (globalThis as GlobalWithEmbedded).__jobsPgBouncer = child;
  process.env.JOBS_TEST_POOLED_URL = await readyUrl(child, `The PgBouncer (${mode} mode) for the tests`);
  console.log(`\nTests reach PostgreSQL through PgBouncer in ${mode} mode: ${process.env.JOBS_TEST_POOLED_URL}`);
}

async function settleDatabaseUrl(): Promise<void> {
  if (process.env.DATABASE_URL) return;
  const probe = process.env.JOBS_TEST_PG_PROBE ?? '127.0.0.1:5432';
  const url = `postgres://postgres@${probe}/postgres`;
  if (await answers(url)) {
    process.env.DATABASE_URL = url;
    return;
  }
  const child = serverProcess('test/setup/embedded-server.ts');
  (globalThis as GlobalWithEmbedded).__jobsEmbeddedPostgres = child;
  process.env.DATABASE_URL = await readyUrl(child, 'The embedded PostgreSQL for the tests');
  console.log(`\nNo PostgreSQL on ${probe}: tests use an embedded one (data in .jobs-data/test)`);
}

/** A server for the tests in a process of its own, loaded through SWC; it stops when its stdin closes. */
function serverProcess(script: string): ChildProcess {
  return spawn(process.execPath, ['--import', './test/support/register-swc.mjs', script], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
}

/** The "url <url>" line the server process prints once it accepts connections. */
function readyUrl(child: ChildProcess, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (line.startsWith('url ')) resolve(line.slice(4));
    });
    child.once('exit', (code) => reject(new Error(`${what} exited (${code})`)));
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
