// Adapters load lazily: a library that fails to import (ours before it is
// built, say) must not stop the others from being measured.
const modules = {
  ours: () => import('./ours.mjs'),
  // Ours at the peers' durability: claims and outcomes wait for the WAL flush.
  'ours-sync': () => import('./ours-sync.mjs'),
  // Ours at synchronous commit, forgetting successes (retention.succeeded: 0), as graphile-worker does.
  'ours-forget': () => import('./ours-forget.mjs'),
  graphile: () => import('./graphile.mjs'),
  pgboss: () => import('./pgboss.mjs'),
  bullmq: () => import('./bullmq.mjs'),
  // Another commit of ours, for A/B runs: only when asked for (BENCH_BASE).
  base: () => import('./ours-base.mjs'),
};

const aliases = {
  'nestjs-durable-jobs': 'ours',
  'graphile-worker': 'graphile',
  'pg-boss': 'pgboss',
  bull: 'bullmq',
  'ours-base': 'base',
  sync: 'ours-sync',
  forget: 'ours-forget',
};

/** The default selection: this library and its peers. */
export const ALL = Object.keys(modules).filter((m) => m !== 'base');

export function canonical(name) {
  const n = name.trim().toLowerCase();
  const c = aliases[n] ?? n;
  if (!modules[c]) throw new Error(`unknown library "${name}" (known: ${ALL.join(', ')})`);
  return c;
}

export async function load(name) {
  return modules[canonical(name)]();
}
