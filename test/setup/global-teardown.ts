import type { GlobalWithEmbedded } from './global-setup.js';

export default async function globalTeardown(): Promise<void> {
  const holder = globalThis as GlobalWithEmbedded;
  await holder.__jobsEmbeddedPostgres?.stop();
  delete holder.__jobsEmbeddedPostgres;
}
