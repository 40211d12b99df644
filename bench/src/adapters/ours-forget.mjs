// nestjs-durable-jobs at synchronous commit, forgetting its successes (retention.succeeded: 0):
// each success deletes its job, as graphile-worker's does and BullMQ's removeOnComplete. The
// comparison at equal durability and equal work with the peers that keep no successes.
import { oursAdapter } from './ours-app.mjs';

export const { create, settings } = await oursAdapter({
  name: 'ours-forget',
  label: 'nestjs-durable-jobs (sync commit, forgetting successes)',
  dist: new URL('../../../dist/lib/index.js', import.meta.url).href,
  schema: 'bench_jobs_forget',
  synchronousCommit: true,
  forget: true,
});
