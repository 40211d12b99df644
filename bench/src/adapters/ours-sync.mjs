// nestjs-durable-jobs with worker.synchronousCommit: claims and outcomes wait for
// the WAL flush, as every peer's do: the comparison at equal durability.
import { oursAdapter } from './ours-app.mjs';

export const { create, settings } = await oursAdapter({
  name: 'ours-sync',
  label: 'nestjs-durable-jobs (synchronous commit)',
  dist: new URL('../../../dist/lib/index.js', import.meta.url).href,
  schema: 'bench_jobs_sync',
  synchronousCommit: true,
});
