// nestjs-durable-jobs as built from this checkout (npm run build → dist/lib).
import { oursAdapter } from './ours-app.mjs';

export const { create, settings } = await oursAdapter({
  name: 'ours',
  label: 'nestjs-durable-jobs',
  dist: new URL('../../../dist/lib/index.js', import.meta.url).href,
  schema: 'bench_jobs',
});
