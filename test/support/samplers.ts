import { sql } from './database.js';
import { sleep } from './wait.js';

/** Samples `query` (one row, a column n) every 10 ms until stopped; returns the largest value seen. */
export function sampler(query: string, values: unknown[] = []) {
  let max = 0;
  let running = true;
  const done = (async () => {
    while (running) {
      const [row] = await sql<{ n: number }>(query, values);
      max = Math.max(max, row?.n ?? 0);
      await sleep(10);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done;
      return max;
    },
  };
}

/**
 * The most runs that overlapped in time, from the run table's database
 * timestamps (test/support/flow.jobs.ts): of the queue, or of one tag in it.
 */
export async function maxOverlap(schema: string, queue: string, tag?: string): Promise<number> {
  const runs = `"${schema}".fc_run WHERE queue = $1 AND ($2::text IS NULL OR tag = $2)`;
  const [row] = await sql<{ n: number }>(
    `SELECT coalesce(max(n), 0)::int AS n FROM (
       SELECT sum(d) OVER (ORDER BY at, d) AS n FROM (
         SELECT started_at AS at, 1 AS d FROM ${runs}
         UNION ALL SELECT ended_at, -1 FROM ${runs}) e) s`,
    [queue, tag ?? null],
  );
  return row!.n;
}

/** How many of the schema's jobs have succeeded. */
export async function succeededCount(schema: string): Promise<number> {
  const [row] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".job WHERE state = 'succeeded'`);
  return row!.n;
}
