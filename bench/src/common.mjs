// Shared settings and small helpers used by the orchestrator, the worker child and the adapters.
import pg from 'pg';

const SERVER_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const DATABASE_URL =
  process.env.BENCH_DATABASE_URL ?? withDatabase(SERVER_URL, process.env.BENCH_DB ?? 'bench');
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

// The bench never writes into the database named by DATABASE_URL: it swaps the
// database name so dropping schemas between runs cannot hurt anything else.
function withDatabase(url, db) {
  const u = new URL(url);
  u.pathname = '/' + db;
  return u.toString();
}

export async function ensureDatabase() {
  const name = new URL(DATABASE_URL).pathname.slice(1);
  const c = new pg.Client({ connectionString: SERVER_URL });
  await c.connect();
  try {
    const { rowCount } = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  } finally {
    await c.end();
  }
}

// One short-lived connection per helper call keeps the orchestrator's own
// footprint out of the libraries' pools.
export async function withPg(fn) {
  const c = new pg.Client({ connectionString: DATABASE_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

export const sql = (text, params) => withPg((c) => c.query(text, params));

export async function dropSchema(schema) {
  await sql(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`);
}

// Planner statistics on a freshly created, freshly filled table are missing
// until autovacuum gets round to it; every PostgreSQL library gets the same
// explicit ANALYZE so none is measured with a stale plan.
export async function analyzeSchema(schema) {
  await withPg(async (c) => {
    const { rows } = await c.query(
      `SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) AS t
         FROM pg_tables WHERE schemaname = $1`,
      [schema],
    );
    for (const { t } of rows) await c.query(`ANALYZE ${t}`);
  });
}

// Flushes the dirty pages left by a pre-fill so a checkpoint does not land in
// the middle of the next measurement.
export async function checkpoint() {
  try {
    await sql('CHECKPOINT');
  } catch {
    // needs superuser or pg_checkpoint; the figures are only noisier without it
  }
}

export const now = () => process.hrtime.bigint(); // CLOCK_MONOTONIC: comparable across processes
export const ms = (a, b) => Number(b - a) / 1e6;
export const sleep = (t) => new Promise((r) => setTimeout(r, t));

/** The p-quantile of an ascending array, interpolated between its two nearest ranks; NaN when empty. */
export function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const k = (sorted.length - 1) * p;
  const lo = Math.floor(k);
  const hi = Math.ceil(k);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (k - lo);
}

export function range(n, offset = 0) {
  const out = new Array(n);
  for (let k = 0; k < n; k++) out[k] = offset + k;
  return out;
}
