/**
 * The tests' embedded PostgreSQL, in a process of its own: Jest loads its
 * globalSetup as CommonJS, which cannot import the library's ES modules, so
 * globalSetup starts this with the SWC loader instead. Prints "url <url>"
 * once ready; stops the server when told (SIGTERM) or when its parent is
 * gone (stdin closes).
 */
import { startEmbeddedPostgres } from '../../lib/storage/embedded/embedded-postgres.js';

const quiet = { log: () => undefined, warn: (msg: string) => process.stderr.write(`${msg}\n`) };
const handle = await startEmbeddedPostgres({ dataDir: '.jobs-data/test', logger: quiet });
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await handle.stop();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.stdin.on('end', () => void stop());
process.stdin.resume();
process.stdout.write(`url ${handle.url}\n`);
