// nestjs-durable-jobs as built from this checkout (npm run build → dist/lib).
import { oursAdapter } from './ours-app.mjs';

export const { create, settings } = await oursAdapter({
  name: 'ours',
  label: 'nestjs-durable-jobs',
  dist: new URL('../../../dist/lib/index.js', import.meta.url).href,
  // The large-history script sets its own schema (its worker processes inherit it).
  schema: process.env.BENCH_OURS_SCHEMA ?? 'bench_jobs',
});
