/**
 * The PgBouncer of a JOBS_TEST_POOLER run, started from a process of its own for the reason the
 * embedded server is (Jest loads its globalSetup as CommonJS, which cannot load these ES modules).
 * Prints "url <url>" once it accepts connections; stops it when told (SIGTERM) or when its parent
 * is gone (stdin closes). If this process itself dies, PgBouncer gets its parent-death signal.
 */
import { testPooler } from '../support/database.js';
import { startPgBouncer } from '../support/pgbouncer.js';

const mode = testPooler();
const upstream = process.env.DATABASE_URL;
if (!mode || !upstream) throw new Error('pgbouncer-server needs JOBS_TEST_POOLER and DATABASE_URL');
const bouncer = await startPgBouncer({ mode, upstream });
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await bouncer.stop();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.stdin.on('end', () => void stop());
process.stdin.resume();
process.stdout.write(`url ${bouncer.url}\n`);
