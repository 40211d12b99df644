import { quoteIdent } from '../../sql/sql-identifiers.js';
import { notifySql } from '../../sql/notification-topics.js';
import { NEW_JOB_COLUMN_NAMES, unnestNewJobs } from '../job-encoding.js';

/**
 * The ways a job holds its unique key without a window (its unique_while), each with the states
 * it holds the key in: the predicates of schema version 4's unique indexes. Every
 * look-up of holders has one branch per way with that predicate, so that each branch is a probe
 * of its index: one OR of them matched no index and read the whole table.
 */
const HOLDING_WAYS = [
  { way: `'queued'`, states: `('waiting', 'queued')` },
  { way: `'queued-or-active'`, states: `('waiting', 'queued', 'active')` },
  { way: `'until-succeeded'`, states: `('waiting', 'queued', 'active', 'failed')` },
] as const;

/** Job `j` holds its key the way `way` says (no window). */
const holdsWhile = ({ way, states }: (typeof HOLDING_WAYS)[number]) =>
  `j.unique_window IS NULL AND j.unique_while = ${way} AND j.state IN ${states}`;

/**
 * The enqueue SQL for one schema, built once: jobs go as column arrays, so
 * any number of them costs one round trip. The plain inserts run as
 * prepared statements (PostgresEnqueueStorage).
 */
export function enqueueStatements(schema: string) {
  const s = quoteIdent(schema);
  /**
   * How the unique inserts end: how many rows were written (the caller reads which only when some
   * were not: returning 10k ids cost ~8% of a 20k-job call). The queues with work due in the chunk
   * ($22) are woken if any row was written: returning each row's queue, state and run time to find
   * them cost ~7% of the statement.
   */
  const uniqueInsertEnd = `RETURNING id
    ), n AS (
      SELECT ${notifySql('queue', '$21', 'q')} FROM unnest($22::text[]) q WHERE EXISTS (SELECT 1 FROM ins)
    )
    SELECT (SELECT count(*)::int FROM ins) AS written, (SELECT count(*)::int FROM n) AS woken`;
  /**
   * The visible holders of the call's keys ($12), by key and way of holding it (a unique_while, or
   * "w" and the window): one branch per way, each with its unique index's predicate and one probe
   * per key. `only(way)` may switch a branch off (uniform jobs all hold their keys one way). Read
   * once, before the insert: as a probe per new row, a job table the planner thought empty was
   * scanned for each new row (10k rows: 0.5 s, measured).
   */
  const heldKeys = (only: (way: string | null) => string) =>
    `held AS MATERIALIZED (
      ${HOLDING_WAYS.map(
        (h) => `SELECT j.unique_key, j.unique_while AS way FROM ${s}.job j
       WHERE ${only(h.way)} j.unique_key = ANY($12::text[]) AND ${holdsWhile(h)}`,
      )
        .concat(
          `SELECT j.unique_key, 'w' || j.unique_window FROM ${s}.job j
       WHERE ${only(null)} j.unique_key = ANY($12::text[]) AND j.unique_window IS NOT NULL`,
        )
        .join('\n      UNION ALL ')}
    )`;
  /** This row's key is not in held, for the way it holds the key. */
  const notHeld = (key: string, while_: string, window_: string) =>
    `NOT EXISTS (SELECT 1 FROM held h WHERE h.unique_key = ${key}
       AND h.way = CASE WHEN ${window_} IS NULL THEN ${while_} ELSE 'w' || ${window_} END)`;
  /** The uniform jobs' columns (see insertUniform), each job's key ($12) its own. */
  const uniformUnique = (
    where = '',
  ) => `SELECT t.id, $3::text, $4::text, t.payload, $5::text, $6::int, $7::timestamptz, $8::int, $9::int, $10::uuid,
             $11::text, t.key, $13::int, $14::jsonb, $15::text, $16::timestamptz, $17::text, $18::bigint, $19::jsonb, $20
        FROM unnest($1::uuid[], $2::jsonb[], $12::text[]) AS t(id, payload, key) ${where}`;
  return {
    // Columns as arrays ($1..$19, NEW_JOB_COLUMNS), then now, the channel
    // and the queues that got work due now. The caller knows those queues
    // already; finding them with RETURNING kept every inserted row in a
    // tuplestore first (~7% of PostgreSQL's time on a 20k insert, measured).
    insert: `WITH ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      SELECT t.*, $20 FROM ${unnestNewJobs(1)}
    )
    SELECT ${notifySql('queue', '$21', 'q')} FROM unnest($22::text[]) q`,

    // The common bulk call: jobs that differ only in id and payload. The
    // shared columns go once as scalars ($3..$19, in NEW_JOB_COLUMNS' order),
    // which spares PostgreSQL parsing sixteen arrays (~25% of an insert's time).
    insertUniform: `WITH ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      SELECT t.id, $3::text, $4::text, t.payload, $5::text, $6::int, $7::timestamptz, $8::int, $9::int, $10::uuid,
             $11::text, $12::text, $13::int, $14::jsonb, $15::text, $16::timestamptz, $17::text, $18::bigint, $19::jsonb, $20
        FROM unnest($1::uuid[], $2::jsonb[]) AS t(id, payload)
    )
    SELECT ${notifySql('queue', '$21', 'q')} FROM unnest($22::text[]) q`,

    // Jobs with unique keys: a key already held makes the row a no-op (the
    // unique indexes decide, whichever instance writes first). Returns how many
    // were written; the caller looks up the holders of the others.
    insertUnique: `WITH ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      SELECT t.*, $20 FROM ${unnestNewJobs(1)}
      ON CONFLICT DO NOTHING
      ${uniqueInsertEnd}`,

    // insertUnique without ON CONFLICT, for keys nobody else is writing: the rows whose key a visible
    // job holds are left out, and a key that another transaction takes meanwhile fails the statement
    // with a unique violation (the caller, in a savepoint, then runs insertUnique). ON CONFLICT's
    // speculative insertion, a check of every unique index and a second WAL record per row, cost
    // ~30% more than this on 10k new keys, measured.
    insertFresh: `WITH ${heldKeys(() => '')}, ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      SELECT t.*, $20 FROM ${unnestNewJobs(1)}
       WHERE ${notHeld('t.unique_key', 't.unique_while', 't.unique_window')}
      ${uniqueInsertEnd}`,

    // One job with a unique key ($1..$19 as scalars, NEW_JOB_COLUMNS' order; $23: its ttl): the
    // insert, and when its key is held, the holder, in one round trip. The holder is read in the
    // statement's snapshot: one that committed after it began is not seen (no row then, and the
    // caller looks it up), nor one past the ttl (uniqueHolders gives its key up). The parameters
    // switch the branches (HOLDING_WAYS) on or off, even in a generic plan.
    insertUniqueOne: `WITH ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      VALUES ($1::uuid, $2::text, $3::text, $4::jsonb, $5::text, $6::int, $7::timestamptz, $8::int, $9::int,
              $10::uuid, $11::text, $12::text, $13::int, $14::jsonb, $15::text, $16::timestamptz, $17::text,
              $18::bigint, $19::jsonb, $20::timestamptz)
      ON CONFLICT DO NOTHING
      RETURNING id
    ), n AS (
      SELECT ${notifySql('queue', '$21', 'q')} FROM unnest($22::text[]) q WHERE EXISTS (SELECT 1 FROM ins)
    ), held AS (
      ${HOLDING_WAYS.map(
        (h) => `SELECT j.id, j.created_at FROM ${s}.job j
       WHERE $18::bigint IS NULL AND $17::text = ${h.way} AND j.unique_key = $12::text AND ${holdsWhile(h)}`,
      ).join('\n      UNION ALL ')}
      UNION ALL
      SELECT j.id, j.created_at FROM ${s}.job j
       WHERE j.unique_key = $12::text AND j.unique_window = $18::bigint AND j.unique_window IS NOT NULL
    )
    SELECT id, true AS written FROM ins
    UNION ALL SELECT NULL, NULL FROM n
    UNION ALL SELECT h.id, false FROM held h
     WHERE NOT EXISTS (SELECT 1 FROM ins)
       AND ($23::bigint IS NULL OR h.created_at > $20::timestamptz - make_interval(secs => $23::bigint / 1000.0))`,

    // insertUnique for jobs that share all but id, payload and key (see encodeUniformJobs): three
    // arrays instead of eighteen, as insertUniform does for plain jobs.
    insertUniqueUniform: `WITH ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      ${uniformUnique()}
      ON CONFLICT DO NOTHING
      ${uniqueInsertEnd}`,

    // insertFresh for uniform jobs.
    insertFreshUniform: `WITH ${heldKeys((way) => (way ? `$18::bigint IS NULL AND $17::text = ${way} AND` : `$18::bigint IS NOT NULL AND`))}, ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      ${uniformUnique(`WHERE ${notHeld('t.key', '$17::text', '$18::bigint')}`)}
      ${uniqueInsertEnd}`,

    // Which of these new jobs' rows a unique insert wrote, when it did not write them all.
    writtenOf: `SELECT id FROM ${s}.job WHERE id = ANY($1::uuid[])`,

    // The jobs holding these keys now, in the way each holds it ($2: while, $3: window, per key). A
    // holder enqueued longer ago than the key's ttl ($4, of the enqueue that finds it, at $5) gives
    // the key up and runs on without it: a stuck job does not hold its key for ever. One branch per
    // way of holding a key (HOLDING_WAYS).
    uniqueHolders: `WITH k AS (
      SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS k(key, while_, window_, ttl)
    ), found AS (
      ${HOLDING_WAYS.map(
        (h) => `SELECT j.id, j.unique_key, j.unique_while, j.unique_window, j.created_at, k.ttl FROM k JOIN ${s}.job j
          ON j.unique_key = k.key AND ${holdsWhile(h)}
       WHERE k.window_ IS NULL AND k.while_ = ${h.way}`,
      ).join('\n      UNION ALL ')}
      UNION ALL
      SELECT j.id, j.unique_key, j.unique_while, j.unique_window, j.created_at, k.ttl FROM k JOIN ${s}.job j
          ON j.unique_key = k.key AND j.unique_window = k.window_ AND j.unique_key IS NOT NULL
         AND j.unique_window IS NOT NULL
    ), held AS (
      SELECT f.id, f.unique_key, f.unique_while, f.unique_window,
             coalesce(f.created_at <= $5::timestamptz - make_interval(secs => f.ttl / 1000.0), false) AS stale
        FROM found f
    ), released AS (
      UPDATE ${s}.job j SET unique_key = NULL FROM held h
       WHERE h.stale AND j.id = h.id AND j.unique_key = h.unique_key
      RETURNING j.id
    )
    SELECT h.id, h.unique_key, h.unique_while, h.unique_window FROM held h WHERE NOT h.stale`,

    // A debounce: the waiting (or queued) job holding the key takes the new payload, run time and context.
    replaceUnique: `WITH u AS (
      UPDATE ${s}.job j SET payload = $4::jsonb, run_at = $5, context = $7::jsonb
       WHERE j.id = $1 AND j.unique_key = $2 AND j.state IN ('waiting', 'queued')
      RETURNING j.id, j.queue, j.state, j.run_at
    )
    SELECT id, CASE WHEN state = 'queued' AND run_at <= $6 THEN ${notifySql('queue', '$3', 'queue')} END FROM u`,

    // Queues that just got their first job with a group or a serial key: from
    // now on only the controlled claim may serve them, and every instance
    // hears of it. A queue already flagged is neither locked nor written.
    flagQueues: `WITH f AS (
      SELECT t.q, bool_or(t.g) AS g, bool_or(t.sr) AS sr FROM unnest($1::text[], $2::boolean[], $3::boolean[]) AS t(q, g, sr)
       GROUP BY t.q
    ), ins AS (
      INSERT INTO ${s}.job_queue (name, has_groups, has_serial, updated_at)
      SELECT f.q, f.g, f.sr, $4 FROM f
      ON CONFLICT (name) DO NOTHING
      RETURNING name
    ), upd AS (
      UPDATE ${s}.job_queue jq SET has_groups = jq.has_groups OR f.g, has_serial = jq.has_serial OR f.sr, updated_at = $4
        FROM f WHERE jq.name = f.q AND ((f.g AND NOT jq.has_groups) OR (f.sr AND NOT jq.has_serial))
      RETURNING jq.name
    )
    SELECT ${notifySql('queues', '$5', 'x.name')} FROM (SELECT name FROM ins UNION SELECT name FROM upd) x`,
  };
}

export type EnqueueStatements = ReturnType<typeof enqueueStatements>;
