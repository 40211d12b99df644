import { fixedStatement, statement, type Placeholders } from '../sql/named-params.js';
import { quoteIdent } from '../sql/sql-identifiers.js';
import { notifySql } from '../sql/notification-topics.js';

/**
 * A run-time change of a queue's or a job name's limits: `setsConcurrency` / `setsRate` say whether
 * the concurrency / the rate changes.
 */
export interface LimitsParams {
  queue: string;
  setsConcurrency: boolean;
  setsRate: boolean;
  channel: string;
  concurrency: number | null;
  rateMax: number | null;
  ratePer: number | null;
  now: Date;
}

const LIMITS = ['queue', 'setsConcurrency', 'setsRate', 'channel', 'concurrency', 'rateMax', 'ratePer', 'now'] as const;

/** The SET list of a run-time change of limits (row alias q). */
const runtimeLimitsSet = (
  p: Placeholders<LimitsParams>,
) => `SET concurrency = CASE WHEN ${p.setsConcurrency} THEN ${p.concurrency} ELSE q.concurrency END,
            concurrency_source = CASE WHEN ${p.setsConcurrency} THEN 'runtime' ELSE q.concurrency_source END,
            rate_max = CASE WHEN ${p.setsRate} THEN ${p.rateMax} ELSE q.rate_max END,
            rate_per_ms = CASE WHEN ${p.setsRate} THEN ${p.ratePer} ELSE q.rate_per_ms END,
            rate_source = CASE WHEN ${p.setsRate} THEN 'runtime' ELSE q.rate_source END,
            updated_at = ${p.now}`;

/**
 * The SQL of queue settings. Each limit is stored three ways: the value in
 * force, the value the code declared (`*_code`), and where the value in
 * force came from; a start applies the code's value only where it differs
 * from the last declared one, so a run-time change outlives restarts of the
 * same code. Every write announces the queue on the 'queues' topic.
 */
export function queueStatements(schema: string) {
  const s = quoteIdent(schema);
  /** The SET list of an upsert from declared values: a limit the code changed takes the code's value. */
  const fromCode = (t: string) => `
        concurrency = CASE WHEN ${t}.concurrency_code IS DISTINCT FROM EXCLUDED.concurrency_code
                           THEN EXCLUDED.concurrency ELSE ${t}.concurrency END,
        concurrency_source = CASE WHEN ${t}.concurrency_code IS DISTINCT FROM EXCLUDED.concurrency_code
                                  THEN 'code' ELSE ${t}.concurrency_source END,
        concurrency_code = EXCLUDED.concurrency_code,
        rate_max = CASE WHEN ${t}.rate_code IS DISTINCT FROM EXCLUDED.rate_code THEN EXCLUDED.rate_max ELSE ${t}.rate_max END,
        rate_per_ms = CASE WHEN ${t}.rate_code IS DISTINCT FROM EXCLUDED.rate_code
                           THEN EXCLUDED.rate_per_ms ELSE ${t}.rate_per_ms END,
        rate_source = CASE WHEN ${t}.rate_code IS DISTINCT FROM EXCLUDED.rate_code THEN 'code' ELSE ${t}.rate_source END,
        rate_code = EXCLUDED.rate_code`;
  return {
    // `limits`: [{ queue, name (null for the queue), declared (false: a queue row only for its names' limits),
    // concurrency, rate: {max, per} | null, min_inflight, share, group_concurrency, group_rate: {max, per} | null,
    // rate_key }]; `keys`: [{ key, rate: {max, per} }], the keyed rate limits; `service`: this service.
    // The groups' settings are the code's alone. Only this service's declarations are written or
    // removed (code_service); one written before declarations had owners counts as this service's.
    syncCode: statement<{ limits: string; now: Date; channel: string; keys: string; service: string }>()(
      ['limits', 'now', 'channel', 'keys', 'service'],
      (p) => `WITH d AS (
      SELECT * FROM jsonb_to_recordset(${p.limits}::jsonb)
        AS d(queue text, name text, declared boolean, concurrency int, rate jsonb, min_inflight int, share real,
             group_concurrency int, group_rate jsonb, rate_key text)
    ), k AS (
      SELECT * FROM jsonb_to_recordset(${p.keys}::jsonb) AS k(key text, rate jsonb)
    ), krows AS (
      -- In key order: the order the controlled claim locks keys in.
      INSERT INTO ${s}.job_rate_limit AS q (key, rate_max, rate_per_ms, rate_code, code_service, updated_at)
      SELECT k.key, (k.rate ->> 'max')::int, (k.rate ->> 'per')::int, k.rate, ${p.service}, ${p.now} FROM k ORDER BY k.key
      ON CONFLICT (key) DO UPDATE SET
        rate_max = CASE WHEN q.rate_code IS DISTINCT FROM EXCLUDED.rate_code THEN EXCLUDED.rate_max ELSE q.rate_max END,
        rate_per_ms = CASE WHEN q.rate_code IS DISTINCT FROM EXCLUDED.rate_code
                           THEN EXCLUDED.rate_per_ms ELSE q.rate_per_ms END,
        rate_source = CASE WHEN q.rate_code IS DISTINCT FROM EXCLUDED.rate_code THEN 'code' ELSE q.rate_source END,
        rate_code = EXCLUDED.rate_code, code_service = EXCLUDED.code_service, updated_at = ${p.now}
        WHERE q.code_service IS NULL OR q.code_service = EXCLUDED.code_service
    ), gone_keys AS (
      DELETE FROM ${s}.job_rate_limit q
       WHERE q.rate_source = 'code' AND (q.code_service IS NULL OR q.code_service = ${p.service})
         AND NOT EXISTS (SELECT 1 FROM k WHERE k.key = q.key)
    ), bare AS (
      INSERT INTO ${s}.job_queue (name, updated_at)
      SELECT d.queue, ${p.now} FROM d WHERE d.name IS NULL AND NOT d.declared
      ON CONFLICT (name) DO NOTHING
    ), qrows AS (
      INSERT INTO ${s}.job_queue AS q (name, concurrency, concurrency_code, rate_max, rate_per_ms, rate_code,
                                        group_min_inflight, group_share, group_concurrency, group_rate_max,
                                        group_rate_per_ms, code_service, updated_at)
      SELECT d.queue, d.concurrency, d.concurrency, (d.rate ->> 'max')::int, (d.rate ->> 'per')::int, d.rate,
             coalesce(d.min_inflight, 2), coalesce(d.share, 0.5), d.group_concurrency, (d.group_rate ->> 'max')::int,
             (d.group_rate ->> 'per')::int, ${p.service}, ${p.now}
        FROM d WHERE d.name IS NULL AND d.declared
      ON CONFLICT (name) DO UPDATE SET ${fromCode('q')},
        group_min_inflight = EXCLUDED.group_min_inflight, group_share = EXCLUDED.group_share,
        group_concurrency = EXCLUDED.group_concurrency, group_rate_max = EXCLUDED.group_rate_max,
        group_rate_per_ms = EXCLUDED.group_rate_per_ms, code_service = EXCLUDED.code_service, updated_at = ${p.now}
        WHERE q.code_service IS NULL OR q.code_service = EXCLUDED.code_service
      RETURNING q.name
    ), nrows AS (
      INSERT INTO ${s}.job_name_limit AS q (queue, name, concurrency, concurrency_code, rate_max, rate_per_ms, rate_code,
                                            rate_key, code_service, updated_at)
      SELECT d.queue, d.name, d.concurrency, d.concurrency, (d.rate ->> 'max')::int, (d.rate ->> 'per')::int, d.rate,
             d.rate_key, ${p.service}, ${p.now}
        FROM d WHERE d.name IS NOT NULL
      ON CONFLICT (queue, name) DO UPDATE SET ${fromCode('q')}, rate_key = EXCLUDED.rate_key,
        code_service = EXCLUDED.code_service, updated_at = ${p.now}
        WHERE q.code_service IS NULL OR q.code_service = EXCLUDED.code_service
      RETURNING q.queue
    ), gone AS (
      -- Declared before, not any more: the code changed each such limit to "none".
      UPDATE ${s}.job_queue q
         SET concurrency = CASE WHEN q.concurrency_code IS NOT NULL THEN NULL ELSE q.concurrency END,
             concurrency_source = CASE WHEN q.concurrency_code IS NOT NULL THEN 'code' ELSE q.concurrency_source END,
             concurrency_code = NULL,
             rate_max = CASE WHEN q.rate_code IS NOT NULL THEN NULL ELSE q.rate_max END,
             rate_per_ms = CASE WHEN q.rate_code IS NOT NULL THEN NULL ELSE q.rate_per_ms END,
             rate_source = CASE WHEN q.rate_code IS NOT NULL THEN 'code' ELSE q.rate_source END,
             rate_code = NULL, group_concurrency = NULL, group_rate_max = NULL, group_rate_per_ms = NULL,
             code_service = NULL, updated_at = ${p.now}
       WHERE (q.concurrency_code IS NOT NULL OR q.rate_code IS NOT NULL OR q.group_concurrency IS NOT NULL
              OR q.group_rate_max IS NOT NULL)
         AND (q.code_service IS NULL OR q.code_service = ${p.service})
         AND NOT EXISTS (SELECT 1 FROM d WHERE d.name IS NULL AND d.declared AND d.queue = q.name)
      RETURNING q.name
    ), gone_names AS (
      DELETE FROM ${s}.job_name_limit q
       WHERE q.concurrency_source = 'code' AND q.rate_source = 'code'
         AND (q.code_service IS NULL OR q.code_service = ${p.service})
         AND NOT EXISTS (SELECT 1 FROM d WHERE d.name = q.name AND d.queue = q.queue)
      RETURNING q.queue
    )
    SELECT ${notifySql('queues', p.channel, 'x.q')}
      FROM (SELECT name AS q FROM qrows UNION SELECT queue FROM nrows UNION SELECT name FROM gone
            UNION SELECT queue FROM gone_names) x`,
    ),

    /**
     * The declarations (syncCode's `limits` and `keys`) another service owns with other values: what
     * a start must refuse rather than overwrite. kind: queue, job or key; name: the job name for a job.
     */
    codeConflicts: statement<{ limits: string; service: string; keys: string }>()(
      ['limits', 'service', 'keys'],
      (p) => `WITH d AS (
      SELECT * FROM jsonb_to_recordset(${p.limits}::jsonb)
        AS d(queue text, name text, declared boolean, concurrency int, rate jsonb, min_inflight int, share real,
             group_concurrency int, group_rate jsonb, rate_key text)
    ), k AS (
      SELECT * FROM jsonb_to_recordset(${p.keys}::jsonb) AS k(key text, rate jsonb)
    )
    SELECT 'queue' AS kind, d.queue AS target, q.code_service AS service
      FROM d JOIN ${s}.job_queue q ON q.name = d.queue
     WHERE d.name IS NULL AND d.declared AND q.code_service <> ${p.service}
       AND (q.concurrency_code IS DISTINCT FROM d.concurrency OR q.rate_code IS DISTINCT FROM d.rate
            OR q.group_min_inflight IS DISTINCT FROM coalesce(d.min_inflight, 2)
            OR q.group_share IS DISTINCT FROM coalesce(d.share, 0.5)
            OR q.group_concurrency IS DISTINCT FROM d.group_concurrency
            OR q.group_rate_max IS DISTINCT FROM (d.group_rate ->> 'max')::int
            OR q.group_rate_per_ms IS DISTINCT FROM (d.group_rate ->> 'per')::int)
    UNION ALL
    SELECT 'job', d.queue || '/' || d.name, l.code_service
      FROM d JOIN ${s}.job_name_limit l ON l.queue = d.queue AND l.name = d.name
     WHERE l.code_service <> ${p.service}
       AND (l.concurrency_code IS DISTINCT FROM d.concurrency OR l.rate_code IS DISTINCT FROM d.rate
            OR l.rate_key IS DISTINCT FROM d.rate_key)
    UNION ALL
    SELECT 'key', k.key, r.code_service
      FROM k JOIN ${s}.job_rate_limit r ON r.key = k.key
     WHERE r.code_service <> ${p.service} AND r.rate_code IS DISTINCT FROM k.rate
    ORDER BY 1, 2`,
    ),

    /** Any job at all, ended ones included: the typo check of pause and setLimits, not a hot path. */
    hasJobs: statement<{ queue: string }>()(
      ['queue'],
      (p) => `SELECT EXISTS (SELECT 1 FROM ${s}.job WHERE queue = ${p.queue}) AS found`,
    ),
    configs:
      fixedStatement(`SELECT q.name AS queue, q.concurrency, q.concurrency_source, q.rate_max, q.rate_per_ms, q.rate_source, q.paused,
             q.has_groups, q.has_serial, q.group_min_inflight, q.group_share, q.group_concurrency, q.group_rate_max,
             q.group_rate_per_ms, q.code_service,
             (SELECT count(*)::int FROM ${s}.job_group_limit g WHERE g.queue = q.name) AS group_limits,
             coalesce((SELECT jsonb_agg(jsonb_build_object('name', l.name, 'concurrency', l.concurrency,
                         'concurrency_source', l.concurrency_source, 'rate_max', l.rate_max, 'rate_per_ms', l.rate_per_ms,
                         'rate_source', l.rate_source, 'rate_key', l.rate_key, 'code_service', l.code_service) ORDER BY l.name)
                         FROM ${s}.job_name_limit l WHERE l.queue = q.name), '[]') AS names
        FROM ${s}.job_queue q ORDER BY q.name`),

    setPaused: statement<{ queue: string; paused: boolean; now: Date; channel: string }>()(
      ['queue', 'paused', 'now', 'channel'],
      (p) => `WITH u AS (
      INSERT INTO ${s}.job_queue AS q (name, paused, updated_at) VALUES (${p.queue}, ${p.paused}, ${p.now})
      ON CONFLICT (name) DO UPDATE SET paused = EXCLUDED.paused, updated_at = EXCLUDED.updated_at
      RETURNING q.name
    )
    SELECT ${notifySql('queues', p.channel, 'u.name')} FROM u`,
    ),

    setQueueLimits: statement<LimitsParams>()(
      LIMITS,
      (p) => `WITH u AS (
      INSERT INTO ${s}.job_queue AS q (name, concurrency, concurrency_source, rate_max, rate_per_ms, rate_source, updated_at)
      VALUES (${p.queue}, ${p.concurrency}, 'runtime', ${p.rateMax}, ${p.ratePer}, 'runtime', ${p.now})
      ON CONFLICT (name) DO UPDATE
        ${runtimeLimitsSet(p)}
      RETURNING q.name
    )
    SELECT ${notifySql('queues', p.channel, 'u.name')} FROM u`,
    ),

    // A job name's limits live in its queue's row's company: the queue gets a row too (the claim looks there first).
    setNameLimits: statement<LimitsParams & { name: string }>()(
      [...LIMITS, 'name'],
      (p) => `WITH qr AS (
      INSERT INTO ${s}.job_queue (name, updated_at) VALUES (${p.queue}, ${p.now}) ON CONFLICT (name) DO NOTHING
    ), u AS (
      INSERT INTO ${s}.job_name_limit AS q (queue, name, concurrency, concurrency_source, rate_max, rate_per_ms,
                                            rate_source, updated_at)
      VALUES (${p.queue}, ${p.name}, ${p.concurrency}, 'runtime', ${p.rateMax}, ${p.ratePer}, 'runtime', ${p.now})
      ON CONFLICT (queue, name) DO UPDATE
        ${runtimeLimitsSet(p)}
      RETURNING q.queue
    )
    SELECT ${notifySql('queues', p.channel, 'u.queue')} FROM u`,
    ),

    /** The groups with limits of their own, by queue and group. */
    groupLimits: fixedStatement(
      `SELECT queue, group_key, concurrency FROM ${s}.job_group_limit ORDER BY queue, group_key`,
    ),

    // A concurrency of null removes the group's own limit. The queue
    // gets a row too: the claim reads a group's limit through its queue's row.
    setGroupLimit: statement<{
      queue: string;
      group: string;
      concurrency: number | null;
      now: Date;
      channel: string;
    }>()(
      ['queue', 'group', 'concurrency', 'now', 'channel'],
      (p) => `WITH qr AS (
      INSERT INTO ${s}.job_queue (name, updated_at) VALUES (${p.queue}, ${p.now}) ON CONFLICT (name) DO NOTHING
    ), gone AS (
      DELETE FROM ${s}.job_group_limit g WHERE ${p.concurrency}::int IS NULL AND g.queue = ${p.queue} AND g.group_key = ${p.group}
      RETURNING g.queue
    ), u AS (
      INSERT INTO ${s}.job_group_limit AS g (queue, group_key, concurrency, updated_at)
      SELECT ${p.queue}, ${p.group}, ${p.concurrency}::int, ${p.now} WHERE ${p.concurrency}::int IS NOT NULL
      ON CONFLICT (queue, group_key) DO UPDATE SET concurrency = EXCLUDED.concurrency, updated_at = EXCLUDED.updated_at
      RETURNING g.queue
    )
    SELECT ${notifySql('queues', p.channel, `${p.queue}::text`)}`,
    ),

    rateLimits: fixedStatement(`SELECT k.key, k.rate_max, k.rate_per_ms, k.rate_source, k.code_service,
             coalesce((SELECT jsonb_agg(jsonb_build_object('queue', l.queue, 'name', l.name) ORDER BY l.queue, l.name)
                         FROM ${s}.job_name_limit l WHERE l.rate_key = k.key), '[]') AS jobs
        FROM ${s}.job_rate_limit k ORDER BY k.key`),

    // max and per both null: no limit. Announced on each queue referring to the key.
    setRateLimit: statement<{ key: string; max: number | null; per: number | null; now: Date; channel: string }>()(
      ['key', 'max', 'per', 'now', 'channel'],
      (p) => `WITH u AS (
      INSERT INTO ${s}.job_rate_limit AS k (key, rate_max, rate_per_ms, rate_source, updated_at)
      VALUES (${p.key}, ${p.max}, ${p.per}, 'runtime', ${p.now})
      ON CONFLICT (key) DO UPDATE
        SET rate_max = EXCLUDED.rate_max, rate_per_ms = EXCLUDED.rate_per_ms, rate_source = 'runtime', updated_at = ${p.now}
      RETURNING k.key
    )
    SELECT ${notifySql('queues', p.channel, 'q.queue')}
      FROM (SELECT DISTINCT l.queue FROM ${s}.job_name_limit l JOIN u ON l.rate_key = u.key) q`,
    ),
  };
}

export type QueueStatements = ReturnType<typeof queueStatements>;
