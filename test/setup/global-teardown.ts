import type { GlobalWithEmbedded } from './global-setup.js';

export default async function globalTeardown(): Promise<void> {
  const holder = globalThis as GlobalWithEmbedded;
  const child = holder.__jobsEmbeddedPostgres;
  delete holder.__jobsEmbeddedPostgres;
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
