// The large-history script's SQL: the bulk fill of finished jobs, and what it
// reads back about the job table (sizes, dead rows, autovacuum).
//
// The rows follow the library's current schema (lib/storage/migrations): change
// the INSERT here when a column the finished rows carry changes.

export const DAY = 86_400_000;

/**
 * Writes `n` finished jobs, rows g = from..to of a history that spans `spanMs`
 * and ends at `endMs`: row g completed at endMs - spanMs + g * spanMs / total.
 * Ids are UUIDv7 of that time, as the library makes them (time-ordered, so old
 * rows sit at the cold end of the key range). The mix, by g mod 100:
 *   0-87 succeeded at the first attempt: no execution row;
 *   88-91 succeeded at the second: one failed execution row;
 *   92-97 failed for good after 3 attempts: three failed execution rows;
 *   98-99 cancelled while queued: no attempt, no execution row.
 * Four queues, three job names each, payloads of ~70 bytes.
 */
export function fillStatement(schema) {
  return `WITH src AS (
      SELECT g, ($3::float8 - $4::float8 + g * ($4::float8 / $5::float8)) AS t_ms, g % 100 AS h, md5(g::text) AS r
        FROM generate_series($1::bigint, $2::bigint) g
    ), rows AS (
      SELECT (substr(lpad(to_hex(floor(t_ms)::bigint), 12, '0'), 1, 8) || '-' || substr(lpad(to_hex(floor(t_ms)::bigint), 12, '0'), 9, 4)
              || '-7' || substr(r, 1, 3) || '-' || substr('89ab', 1 + (g % 4)::int, 1) || substr(r, 4, 3)
              || '-' || substr(r, 7, 12))::uuid AS id,
             (ARRAY['default', 'emails', 'reports', 'webhooks'])[1 + (g % 4)::int] AS queue,
             (ARRAY['send', 'sync', 'render'])[1 + ((g / 4) % 3)::int] AS verb,
             g, h, to_timestamp(t_ms / 1000.0) AS done_at,
             CASE WHEN h < 92 THEN 'succeeded' WHEN h < 98 THEN 'failed' ELSE 'cancelled' END AS state,
             CASE WHEN h < 88 THEN 1 WHEN h < 92 THEN 2 WHEN h < 98 THEN 3 ELSE 0 END AS attempt
        FROM src
    ), ins AS (
      INSERT INTO ${schema}.job (id, name, queue, payload, state, priority, run_at, attempt, max_attempts,
                                 last_error, result, created_at, started_at, completed_at, handler_started_at)
      SELECT id, queue || '-' || verb, queue,
             jsonb_build_object('orderId', g, 'to', 'user' || g || '@example.com', 'locale', 'en'),
             state, 0, done_at - interval '2 seconds', attempt, 3,
             CASE WHEN state = 'failed' THEN jsonb_build_object('name', 'Error', 'message', 'upstream answered 503') END,
             CASE WHEN state = 'succeeded' THEN '{"ok":true}'::jsonb END,
             done_at - interval '2 seconds',
             CASE WHEN attempt > 0 THEN done_at - interval '40 milliseconds' END,
             done_at,
             CASE WHEN state = 'succeeded' THEN done_at - interval '38 milliseconds' END
        FROM rows
      RETURNING id, state, attempt, completed_at
    )
    INSERT INTO ${schema}.job_execution (job_id, attempt, worker_id, state, started_at, ended_at, error, claimed_at)
    SELECT ins.id, a, 'bench-history-worker', 'failed', ins.completed_at - (interval '1 second' * (ins.attempt - a + 1)),
           ins.completed_at - (interval '1 second' * (ins.attempt - a)) - interval '900 milliseconds',
           jsonb_build_object('name', 'Error', 'message', 'upstream answered 503'),
           ins.completed_at - (interval '1 second' * (ins.attempt - a + 1))
      FROM ins, generate_series(1, ins.attempt - (ins.state = 'succeeded')::int) a
     WHERE ins.state <> 'cancelled'`;
}

/** Each relation of the schema's job tables: its own size, and its indexes'. */
export async function relationSizes(c, schema) {
  const { rows } = await c.query(
    `SELECT c.relname AS name, c.relkind AS kind, t.relname AS "table",
            pg_relation_size(c.oid) AS bytes,
            CASE WHEN c.relkind = 'r' THEN pg_total_relation_size(c.oid) END AS total
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_index i ON i.indexrelid = c.oid
       LEFT JOIN pg_class t ON t.oid = coalesce(i.indrelid, c.oid)
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'i') AND t.relname IN ('job', 'job_execution')
      ORDER BY t.relname, c.relkind DESC, pg_relation_size(c.oid) DESC`,
    [schema],
  );
  return rows.map((r) => ({ ...r, bytes: Number(r.bytes), total: r.total === null ? null : Number(r.total) }));
}

/** pg_stat_user_tables for the job tables: live and dead rows, and when (auto)vacuum last ran. */
export async function tableStats(c, schema) {
  const { rows } = await c.query(
    `SELECT relname AS name, n_live_tup AS live, n_dead_tup AS dead, last_vacuum, last_autovacuum,
            vacuum_count, autovacuum_count, last_analyze, last_autoanalyze, autoanalyze_count
       FROM pg_stat_user_tables WHERE schemaname = $1 AND relname IN ('job', 'job_execution') ORDER BY relname`,
    [schema],
  );
  return rows.map((r) => ({ ...r, live: Number(r.live), dead: Number(r.dead) }));
}

/** The server's autovacuum settings, and the job table's own (reloptions). */
export async function autovacuumSettings(c, schema) {
  const { rows } = await c.query(
    `SELECT name, setting FROM pg_settings
      WHERE name IN ('autovacuum', 'autovacuum_naptime', 'autovacuum_vacuum_scale_factor', 'autovacuum_vacuum_threshold',
                     'autovacuum_vacuum_insert_scale_factor', 'autovacuum_analyze_scale_factor',
                     'autovacuum_vacuum_cost_limit', 'autovacuum_vacuum_cost_delay', 'shared_buffers', 'server_version')
      ORDER BY name`,
  );
  const { rows: rel } = await c.query(
    `SELECT c.relname, c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname IN ('job', 'job_execution')`,
    [schema],
  );
  return {
    server: Object.fromEntries(rows.map((r) => [r.name, r.setting])),
    tables: Object.fromEntries(rel.map((r) => [r.relname, r.reloptions ?? []])),
  };
}
