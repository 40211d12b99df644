import type { ChildProcess } from 'node:child_process';
import type { GlobalWithEmbedded } from './global-setup.js';

export default async function globalTeardown(): Promise<void> {
  const holder = globalThis as GlobalWithEmbedded;
  // The reverse of the setup's order: PgBouncer pools for the server.
  const bouncer = holder.__jobsPgBouncer;
  delete holder.__jobsPgBouncer;
  await stop(bouncer);
  const embedded = holder.__jobsEmbeddedPostgres;
  delete holder.__jobsEmbeddedPostgres;
  await stop(embedded);
}

async function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
