import { quoteIdent } from '../../sql/sql-identifiers.js';
import { notifySql } from '../../sql/notification-topics.js';
import { NEW_JOB_COLUMN_NAMES } from '../job-encoding.js';
import {
  NEW_JOB_PARAMS,
  UNIFORM_JOB_PARAMS,
  unnestNewJobParams,
  type NewJobParams,
  type UniformJobParams,
} from '../new-job-params.js';
import { statement, type Placeholders } from '../../sql/named-params.js';

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

/** What every insert takes besides its jobs: `due`, the queues that got work due now, are woken. */
interface InsertParams {
  now: Date;
  channel: string;
  due: readonly string[];
}

/** The jobs as one array literal per column (encodeNewJobColumns). */
export type InsertJobsParams = NewJobParams & InsertParams;
/** Jobs that share all but id and payload (encodeUniformJobs). */
export type InsertUniformParams = UniformJobParams & InsertParams;

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
   * are woken if any row was written: returning each row's queue, state and run time to find
   * them cost ~7% of the statement.
   */
  const uniqueInsertEnd = (p: Placeholders<InsertParams>) => `RETURNING id
    ), n AS (
      SELECT ${notifySql('queue', p.channel, 'q')} FROM unnest(${p.due}::text[]) q WHERE EXISTS (SELECT 1 FROM ins)
    )
    SELECT (SELECT count(*)::int FROM ins) AS written, (SELECT count(*)::int FROM n) AS woken`;
  /**
   * The visible holders of the call's `keys`, by key and way of holding it (a unique_while, or
   * "w" and the window): one branch per way, each with its unique index's predicate and one probe
   * per key. `only(way)` may switch a branch off (uniform jobs all hold their keys one way). Read
   * once, before the insert: as a probe per new row, a job table the planner thought empty was
   * scanned for each new row (10k rows: 0.5 s, measured).
   */
  const heldKeys = (keys: string, only: (way: string | null) => string) =>
    `held AS MATERIALIZED (
      ${HOLDING_WAYS.map(
        (h) => `SELECT j.unique_key, j.unique_while AS way FROM ${s}.job j
       WHERE ${only(h.way)} j.unique_key = ANY(${keys}::text[]) AND ${holdsWhile(h)}`,
      )
        .concat(
          `SELECT j.unique_key, 'w' || j.unique_window FROM ${s}.job j
       WHERE ${only(null)} j.unique_key = ANY(${keys}::text[]) AND j.unique_window IS NOT NULL`,
        )
        .join('\n      UNION ALL ')}
    )`;
  /** This row's key is not in held, for the way it holds the key. */
  const notHeld = (key: string, while_: string, window_: string) =>
    `NOT EXISTS (SELECT 1 FROM held h WHERE h.unique_key = ${key}
       AND h.way = CASE WHEN ${window_} IS NULL THEN ${while_} ELSE 'w' || ${window_} END)`;
  /** The uniform jobs' columns (see insertUniform), each job's key (`unique_key`, an array here) its own. */
  const uniformUnique = (
    p: Placeholders<InsertUniformParams>,
    where = '',
  ) => `SELECT t.id, ${p.name}::text, ${p.queue}::text, t.payload, ${p.state}::text, ${p.priority}::int, ${p.run_at}::timestamptz, ${p.max_attempts}::int, ${p.timeout_ms}::int, ${p.batch_id}::uuid,
             ${p.group_key}::text, t.key, ${p.remaining_dependencies}::int, ${p.trace_context}::jsonb, ${p.serial_key}::text, ${p.deadline}::timestamptz, ${p.unique_while}::text, ${p.unique_window}::bigint, ${p.context}::jsonb, ${p.now}
        FROM unnest(${p.ids}::uuid[], ${p.payloads}::jsonb[], ${p.unique_key}::text[]) AS t(id, payload, key) ${where}`;
  const INSERT = [...NEW_JOB_PARAMS, 'now', 'channel', 'due'] as const;
  const UNIFORM = [...UNIFORM_JOB_PARAMS, 'now', 'channel', 'due'] as const;
  return {
    // Columns as arrays (NEW_JOB_COLUMNS), then now, the channel
    // and the queues that got work due now. The caller knows those queues
    // already; finding them with RETURNING kept every inserted row in a
    // tuplestore first (~7% of PostgreSQL's time on a 20k insert, measured).
    insert: statement<InsertJobsParams>()(
      INSERT,
      (p) => `WITH ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      SELECT t.*, ${p.now} FROM ${unnestNewJobParams(p)}
    )
    SELECT ${notifySql('queue', p.channel, 'q')} FROM unnest(${p.due}::text[]) q`,
    ),

    // The common bulk call: jobs that differ only in id and payload. The
    // shared columns go once as scalars (UniformJobParams),
    // which spares PostgreSQL parsing sixteen arrays (~25% of an insert's time).
    insertUniform: statement<InsertUniformParams>()(
      UNIFORM,
      (p) => `WITH ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      SELECT t.id, ${p.name}::text, ${p.queue}::text, t.payload, ${p.state}::text, ${p.priority}::int, ${p.run_at}::timestamptz, ${p.max_attempts}::int, ${p.timeout_ms}::int, ${p.batch_id}::uuid,
             ${p.group_key}::text, ${p.unique_key}::text, ${p.remaining_dependencies}::int, ${p.trace_context}::jsonb, ${p.serial_key}::text, ${p.deadline}::timestamptz, ${p.unique_while}::text, ${p.unique_window}::bigint, ${p.context}::jsonb, ${p.now}
        FROM unnest(${p.ids}::uuid[], ${p.payloads}::jsonb[]) AS t(id, payload)
    )
    SELECT ${notifySql('queue', p.channel, 'q')} FROM unnest(${p.due}::text[]) q`,
    ),

    // Jobs with unique keys: a key already held makes the row a no-op (the
    // unique indexes decide, whichever instance writes first). Returns how many
    // were written; the caller looks up the holders of the others.
    insertUnique: statement<InsertJobsParams>()(
      INSERT,
      (p) => `WITH ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      SELECT t.*, ${p.now} FROM ${unnestNewJobParams(p)}
      ON CONFLICT DO NOTHING
      ${uniqueInsertEnd(p)}`,
    ),

    // insertUnique without ON CONFLICT, for keys nobody else is writing: the rows whose key a visible
    // job holds are left out, and a key that another transaction takes meanwhile fails the statement
    // with a unique violation (the caller, in a savepoint, then runs insertUnique). ON CONFLICT's
    // speculative insertion, a check of every unique index and a second WAL record per row, cost
    // ~30% more than this on 10k new keys, measured.
    insertFresh: statement<InsertJobsParams>()(
      INSERT,
      (p) => `WITH ${heldKeys(p.unique_key, () => '')}, ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      SELECT t.*, ${p.now} FROM ${unnestNewJobParams(p)}
       WHERE ${notHeld('t.unique_key', 't.unique_while', 't.unique_window')}
      ${uniqueInsertEnd(p)}`,
    ),

    // One job with a unique key (its columns as scalars; `ttl`: its key's): the
    // insert, and when its key is held, the holder, in one round trip. The holder is read in the
    // statement's snapshot: one that committed after it began is not seen (no row then, and the
    // caller looks it up), nor one past the ttl (uniqueHolders gives its key up). The parameters
    // switch the branches (HOLDING_WAYS) on or off, even in a generic plan.
    insertUniqueOne: statement<InsertJobsParams & { ttl: number | null }>()(
      [...INSERT, 'ttl'],
      (p) => `WITH ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      VALUES (${p.id}::uuid, ${p.name}::text, ${p.queue}::text, ${p.payload}::jsonb, ${p.state}::text, ${p.priority}::int, ${p.run_at}::timestamptz, ${p.max_attempts}::int, ${p.timeout_ms}::int,
              ${p.batch_id}::uuid, ${p.group_key}::text, ${p.unique_key}::text, ${p.remaining_dependencies}::int, ${p.trace_context}::jsonb, ${p.serial_key}::text, ${p.deadline}::timestamptz, ${p.unique_while}::text,
              ${p.unique_window}::bigint, ${p.context}::jsonb, ${p.now}::timestamptz)
      ON CONFLICT DO NOTHING
      RETURNING id
    ), n AS (
      SELECT ${notifySql('queue', p.channel, 'q')} FROM unnest(${p.due}::text[]) q WHERE EXISTS (SELECT 1 FROM ins)
    ), held AS (
      ${HOLDING_WAYS.map(
        (h) => `SELECT j.id, j.created_at FROM ${s}.job j
       WHERE ${p.unique_window}::bigint IS NULL AND ${p.unique_while}::text = ${h.way} AND j.unique_key = ${p.unique_key}::text AND ${holdsWhile(h)}`,
      ).join('\n      UNION ALL ')}
      UNION ALL
      SELECT j.id, j.created_at FROM ${s}.job j
       WHERE j.unique_key = ${p.unique_key}::text AND j.unique_window = ${p.unique_window}::bigint AND j.unique_window IS NOT NULL
    )
    SELECT id, true AS written FROM ins
    UNION ALL SELECT NULL, NULL FROM n
    UNION ALL SELECT h.id, false FROM held h
     WHERE NOT EXISTS (SELECT 1 FROM ins)
       AND (${p.ttl}::bigint IS NULL OR h.created_at > ${p.now}::timestamptz - make_interval(secs => ${p.ttl}::bigint / 1000.0))`,
    ),

    // insertUnique for jobs that share all but id, payload and key (see encodeUniformJobs): three
    // arrays instead of eighteen, as insertUniform does for plain jobs.
    insertUniqueUniform: statement<InsertUniformParams>()(
      UNIFORM,
      (p) => `WITH ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      ${uniformUnique(p)}
      ON CONFLICT DO NOTHING
      ${uniqueInsertEnd(p)}`,
    ),

    // insertFresh for uniform jobs.
    insertFreshUniform: statement<InsertUniformParams>()(
      UNIFORM,
      (
        p,
      ) => `WITH ${heldKeys(p.unique_key, (way) => (way ? `${p.unique_window}::bigint IS NULL AND ${p.unique_while}::text = ${way} AND` : `${p.unique_window}::bigint IS NOT NULL AND`))}, ins AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, created_at)
      ${uniformUnique(p, `WHERE ${notHeld('t.key', `${p.unique_while}::text`, `${p.unique_window}::bigint`)}`)}
      ${uniqueInsertEnd(p)}`,
    ),

    // Which of these new jobs' rows a unique insert wrote, when it did not write them all.
    writtenOf: statement<{ ids: readonly string[] }>()(
      ['ids'],
      (p) => `SELECT id FROM ${s}.job WHERE id = ANY(${p.ids}::uuid[])`,
    ),

    // The jobs holding these keys now, in the way each holds it (while and window, per key). A
    // holder enqueued longer ago than the key's ttl (of the enqueue that finds it, at `now`) gives
    // the key up and runs on without it: a stuck job does not hold its key for ever. One branch per
    // way of holding a key (HOLDING_WAYS).
    uniqueHolders: statement<{
      keys: readonly (string | null | undefined)[];
      whiles: readonly (string | null)[];
      windows: readonly (number | null)[];
      ttls: readonly (number | null)[];
      now: Date;
    }>()(
      ['keys', 'whiles', 'windows', 'ttls', 'now'],
      (p) => `WITH k AS (
      SELECT * FROM unnest(${p.keys}::text[], ${p.whiles}::text[], ${p.windows}::bigint[], ${p.ttls}::bigint[]) AS k(key, while_, window_, ttl)
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
             coalesce(f.created_at <= ${p.now}::timestamptz - make_interval(secs => f.ttl / 1000.0), false) AS stale
        FROM found f
    ), released AS (
      UPDATE ${s}.job j SET unique_key = NULL FROM held h
       WHERE h.stale AND j.id = h.id AND j.unique_key = h.unique_key
      RETURNING j.id
    )
    SELECT h.id, h.unique_key, h.unique_while, h.unique_window FROM held h WHERE NOT h.stale`,
    ),

    // A debounce: the waiting (or queued) job holding the key takes the new payload, run time and context.
    replaceUnique: statement<{
      holder: string;
      key: string | null | undefined;
      channel: string;
      payload: string;
      runAt: Date;
      now: Date;
      context: string | null;
    }>()(
      ['holder', 'key', 'channel', 'payload', 'runAt', 'now', 'context'],
      (p) => `WITH u AS (
      UPDATE ${s}.job j SET payload = ${p.payload}::jsonb, run_at = ${p.runAt}, context = ${p.context}::jsonb
       WHERE j.id = ${p.holder} AND j.unique_key = ${p.key} AND j.state IN ('waiting', 'queued')
      RETURNING j.id, j.queue, j.state, j.run_at
    )
    SELECT id, CASE WHEN state = 'queued' AND run_at <= ${p.now} THEN ${notifySql('queue', p.channel, 'queue')} END FROM u`,
    ),

    // Queues that just got their first job with a group or a serial key: from
    // now on only the controlled claim may serve them, and every instance
    // hears of it. A queue already flagged is neither locked nor written.
    flagQueues: statement<{
      queues: readonly string[];
      groups: readonly boolean[];
      serial: readonly boolean[];
      now: Date;
      channel: string;
    }>()(
      ['queues', 'groups', 'serial', 'now', 'channel'],
      (p) => `WITH f AS (
      SELECT t.q, bool_or(t.g) AS g, bool_or(t.sr) AS sr FROM unnest(${p.queues}::text[], ${p.groups}::boolean[], ${p.serial}::boolean[]) AS t(q, g, sr)
       GROUP BY t.q
    ), ins AS (
      INSERT INTO ${s}.job_queue (name, has_groups, has_serial, updated_at)
      SELECT f.q, f.g, f.sr, ${p.now} FROM f
      ON CONFLICT (name) DO NOTHING
      RETURNING name
    ), upd AS (
      UPDATE ${s}.job_queue jq SET has_groups = jq.has_groups OR f.g, has_serial = jq.has_serial OR f.sr, updated_at = ${p.now}
        FROM f WHERE jq.name = f.q AND ((f.g AND NOT jq.has_groups) OR (f.sr AND NOT jq.has_serial))
      RETURNING jq.name
    )
    SELECT ${notifySql('queues', p.channel, 'x.name')} FROM (SELECT name FROM ins UNION SELECT name FROM upd) x`,
    ),
  };
}

export type EnqueueStatements = ReturnType<typeof enqueueStatements>;
