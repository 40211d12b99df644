// nestjs-durable-jobs as built from another commit, for an A/B run in one
// bench: BENCH_BASE_DIR is a built checkout (run.sh makes it from BENCH_BASE).
import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { oursAdapter } from './ours-app.mjs';

const dir = process.env.BENCH_BASE_DIR;
if (!dir) throw new Error('the "base" library needs BENCH_BASE=<commit> (run.sh builds that commit)');

export const { create, settings } = await oursAdapter({
  name: 'base',
  label: 'nestjs-durable-jobs (base)',
  dist: pathToFileURL(path.join(dir, 'dist/lib/index.js')).href,
  schema: 'bench_jobs_base',
  ...(process.env.BENCH_BASE_FORGET === '1' ? { synchronousCommit: true, forget: true } : {}),
});
