import { fixedStatement, statement } from '../sql/named-params.js';
import { JOB_DEFAULTS, LIVE_JOB_STATES } from '../../model/index.js';
import { quoteIdent, sqlLiterals } from '../sql/sql-identifiers.js';
import { notifySql } from '../sql/notification-topics.js';

/** Columns of a schedule definition, as the JSON record set the writes take. */
const DEFINITION_RECORD = `(name text, job_name text, cron text, time_zone text, payload jsonb, options jsonb,
  catch_up text, overlap text, next_run_at timestamptz, definition_hash text)`;

/**
 * Keeps the stored next tick unless the timing changed: a restart after
 * downtime must still see the ticks it missed, or catch-up has nothing to do.
 */
const KEEP_NEXT_RUN = `CASE WHEN r.cron = EXCLUDED.cron AND r.time_zone = EXCLUDED.time_zone AND r.next_run_at IS NOT NULL
            THEN r.next_run_at ELSE EXCLUDED.next_run_at END`;

/** A tick's job options, from the schedule row `r`'s stored options (defaults where they are left out). */
const TICK_JOB = {
  queue: (r: string) => `coalesce(${r}.options->>'queue', ${sqlLiterals([JOB_DEFAULTS.queue])})`,
  serialKey: (r: string) => `${r}.options->>'serialKey'`,
  groupKey: (r: string) => `${r}.options->>'groupKey'`,
  priority: (r: string) => `coalesce((${r}.options->>'priority')::int, ${JOB_DEFAULTS.priority})`,
  maxAttempts: (r: string) => `coalesce((${r}.options->>'maxAttempts')::int, ${JOB_DEFAULTS.maxAttempts})`,
  timeoutMs: (r: string) => `(${r}.options->>'timeoutMs')::int`,
};

/**
 * The CTE `flagged`: the queue of a tick's job with a serial key or group,
 * marked as holding them (as an enqueue marks it: see enqueue's
 * flagQueues), so only the controlled claim serves it from then on. The
 * rows it returns are the queues newly marked, to announce.
 */
const flagQueue = (s: string, inserted: string, now: string) => `flagged AS (
      INSERT INTO ${s}.job_queue AS jq (name, has_groups, has_serial, updated_at)
      SELECT i.queue, bool_or(i.group_key IS NOT NULL), bool_or(i.serial_key IS NOT NULL), ${now}
        FROM ${inserted} i WHERE i.group_key IS NOT NULL OR i.serial_key IS NOT NULL GROUP BY i.queue
      ON CONFLICT (name) DO UPDATE SET has_groups = jq.has_groups OR EXCLUDED.has_groups,
                                       has_serial = jq.has_serial OR EXCLUDED.has_serial, updated_at = EXCLUDED.updated_at
       WHERE (EXCLUDED.has_groups AND NOT jq.has_groups) OR (EXCLUDED.has_serial AND NOT jq.has_serial)
      RETURNING jq.name
    )`;

const SCHEDULE_COLUMNS = `r.name, r.job_name, r.cron, r.time_zone, r.payload, r.source, r.service, r.catch_up, r.overlap, r.paused,
  r.next_run_at, r.last_run_at, r.last_job_id, r.skipped_count, r.last_skipped_at, r.updated_at`;

/**
 * The SQL of recurring schedules for one schema. Every write that changes
 * what instances must arm sends `s:<name>` on the schema's channel, so the
 * other instances re-read the table without waiting for their poll.
 */
export function scheduleStatements(schema: string) {
  const s = quoteIdent(schema);
  const sched = `${s}.recurring_schedule`;
  return {
    // A service's code-defined rows follow its deployed code: written, taken over from a dynamic
    // row of the same name, or removed when their @Cron is gone. Another service's rows are left
    // alone (`service` is this service); a row written before rows had owners is this service's unless
    // its job is in `foreignJobs` (this app's externalJobs: the code of the service that runs it owns it).
    syncCode: statement<{
      definitions: string;
      now: Date;
      channel: string;
      foreignJobs: readonly string[];
      service: string;
    }>()(
      ['definitions', 'now', 'channel', 'foreignJobs', 'service'],
      (p) => `WITH d AS (
      SELECT * FROM jsonb_to_recordset(${p.definitions}::jsonb) AS d${DEFINITION_RECORD}
    ), up AS (
      INSERT INTO ${sched} AS r (name, job_name, cron, time_zone, payload, source, options, catch_up, overlap,
                                 next_run_at, service, definition_hash, created_at, updated_at)
      SELECT name, job_name, cron, time_zone, payload, 'code', options, catch_up, overlap, next_run_at,
             ${p.service}, definition_hash, ${p.now}, ${p.now}
        FROM d
      ON CONFLICT (name) DO UPDATE
        SET job_name = EXCLUDED.job_name, cron = EXCLUDED.cron, time_zone = EXCLUDED.time_zone,
            payload = EXCLUDED.payload, source = 'code', options = EXCLUDED.options, catch_up = EXCLUDED.catch_up,
            overlap = EXCLUDED.overlap, next_run_at = ${KEEP_NEXT_RUN}, service = EXCLUDED.service,
            definition_hash = EXCLUDED.definition_hash, updated_at = ${p.now}
        WHERE r.source = 'dynamic' OR r.service IS NULL OR r.service = EXCLUDED.service
      RETURNING r.name
    ), del AS (
      DELETE FROM ${sched} r
       WHERE r.source = 'code' AND NOT EXISTS (SELECT 1 FROM d WHERE d.name = r.name)
         AND (r.service = ${p.service} OR (r.service IS NULL AND NOT r.job_name = ANY(${p.foreignJobs}::text[])))
      RETURNING r.name
    ), n AS (
      SELECT ${notifySql('schedules', p.channel, "''")}
    )
    SELECT (SELECT count(*) FROM up)::int AS written,
           (SELECT coalesce(array_agg(name ORDER BY name), '{}') FROM del) AS removed,
           (SELECT count(*) FROM n)::int AS notified`,
    ),

    /** `hashes` [{ name, definition_hash }], `service` this service: another service's code-defined rows that differ. */
    codeConflicts: statement<{ hashes: string; service: string }>()(
      ['hashes', 'service'],
      (p) => `SELECT d.name, r.service
      FROM jsonb_to_recordset(${p.hashes}::jsonb) AS d(name text, definition_hash text)
      JOIN ${sched} r ON r.name = d.name
     WHERE r.source = 'code' AND r.service <> ${p.service} AND r.definition_hash IS DISTINCT FROM d.definition_hash
     ORDER BY d.name`,
    ),

    // The DO UPDATE's WHERE leaves a code-defined row alone: no row comes back.
    upsertDynamic: statement<{ definitions: string; now: Date; channel: string }>()(
      ['definitions', 'now', 'channel'],
      (p) => `WITH d AS (
      SELECT * FROM jsonb_to_recordset(${p.definitions}::jsonb) AS d${DEFINITION_RECORD}
    ), up AS (
      INSERT INTO ${sched} AS r (name, job_name, cron, time_zone, payload, source, options, catch_up, overlap,
                                 next_run_at, created_at, updated_at)
      SELECT name, job_name, cron, time_zone, payload, 'dynamic', options, catch_up, overlap, next_run_at, ${p.now}, ${p.now} FROM d
      ON CONFLICT (name) DO UPDATE
        SET job_name = EXCLUDED.job_name, cron = EXCLUDED.cron, time_zone = EXCLUDED.time_zone,
            payload = EXCLUDED.payload, options = EXCLUDED.options, catch_up = EXCLUDED.catch_up,
            overlap = EXCLUDED.overlap, next_run_at = ${KEEP_NEXT_RUN}, updated_at = ${p.now}
        WHERE r.source = 'dynamic'
      RETURNING r.name
    ), n AS (
      SELECT ${notifySql('schedules', p.channel, 'name')} FROM up
    )
    SELECT (SELECT count(*) FROM up)::int AS written, (SELECT count(*) FROM n)::int AS notified`,
    ),

    pause: statement<{ name: string; now: Date; channel: string }>()(
      ['name', 'now', 'channel'],
      (p) => `WITH u AS (
      UPDATE ${sched} SET paused = true, updated_at = ${p.now} WHERE name = ${p.name} RETURNING name
    ), n AS (
      SELECT ${notifySql('schedules', p.channel, 'name')} FROM u
    )
    SELECT (SELECT count(*) FROM u)::int AS updated, (SELECT count(*) FROM n)::int AS notified`,
    ),

    // Resuming starts from now, not from the ticks that passed while paused.
    // The cron/time-zone fence keeps a concurrent redefinition's next tick.
    resume: statement<{ name: string; now: Date; next: Date; cron: string; timeZone: string; channel: string }>()(
      ['name', 'now', 'next', 'cron', 'timeZone', 'channel'],
      (p) => `WITH u AS (
      UPDATE ${sched} SET paused = false, next_run_at = ${p.next}, updated_at = ${p.now}
       WHERE name = ${p.name} AND paused AND cron = ${p.cron} AND time_zone = ${p.timeZone}
      RETURNING name
    ), n AS (
      SELECT ${notifySql('schedules', p.channel, 'name')} FROM u
    )
    SELECT (SELECT count(*) FROM u)::int AS updated, (SELECT count(*) FROM n)::int AS notified`,
    ),

    // The subselect reads the snapshot from before the DELETE: it tells a
    // code-defined row (kept) from a missing one.
    removeDynamic: statement<{ name: string; channel: string }>()(
      ['name', 'channel'],
      (p) => `WITH d AS (
      DELETE FROM ${sched} WHERE name = ${p.name} AND source = 'dynamic' RETURNING name
    ), n AS (
      SELECT ${notifySql('schedules', p.channel, 'name')} FROM d
    )
    SELECT (SELECT count(*) FROM d)::int AS removed, (SELECT count(*) FROM n)::int AS notified,
           (SELECT source FROM ${sched} WHERE name = ${p.name}) AS source`,
    ),

    list: fixedStatement(`SELECT ${SCHEDULE_COLUMNS}, j.state AS last_job_state
      FROM ${sched} r LEFT JOIN ${s}.job j ON j.id = r.last_job_id
     ORDER BY r.name`),

    get: statement<{ name: string }>()(
      ['name'],
      (p) => `SELECT ${SCHEDULE_COLUMNS}, j.state AS last_job_state
      FROM ${sched} r LEFT JOIN ${s}.job j ON j.id = r.last_job_id
     WHERE r.name = ${p.name}`,
    ),

    /** What the timers arm: small, read on every change notification and poll. */
    timings: fixedStatement(`SELECT name, cron, time_zone, paused FROM ${sched}`),

    due: statement<{ now: Date }>()(
      ['now'],
      (p) => `SELECT name, cron, time_zone, catch_up, next_run_at FROM ${sched}
     WHERE NOT paused AND next_run_at <= ${p.now} ORDER BY next_run_at, name`,
    ),

    /**
     * Exactly once per tick (DESIGN rule 6): the compare-and-set on
     * next_run_at and the job insert are one statement, so of any number of
     * instances that saw the same due tick, one moves next_run_at and writes
     * the job(s); the others match no row (after waiting on its lock, the
     * re-check sees the new next_run_at) and write nothing.
     *
     * `due`: the next_run_at read as due; `next`: the new one; `ticks`: the
     * ticks to run, `jobIds` their job ids.
     *
     * With overlap 'skip', a tick whose previous run is still waiting, queued
     * or active becomes a job row in state 'skipped', so the skip shows in the
     * job history and in the schedule's counters.
     */
    fire: statement<{
      name: string;
      due: Date;
      next: Date;
      ticks: readonly string[];
      jobIds: readonly string[];
      now: Date;
      channel: string;
    }>()(
      ['name', 'due', 'next', 'ticks', 'jobIds', 'now', 'channel'],
      (p) => `WITH t AS (
      SELECT x.tick, x.id, x.ord FROM unnest(${p.ticks}::timestamptz[], ${p.jobIds}::uuid[]) WITH ORDINALITY AS x(tick, id, ord)
    ), cur AS (
      SELECT r.overlap,
             coalesce((SELECT j.state IN (${sqlLiterals(LIVE_JOB_STATES)}) FROM ${s}.job j WHERE j.id = r.last_job_id), false) AS busy
        FROM ${sched} r WHERE r.name = ${p.name} AND r.next_run_at = ${p.due} AND NOT r.paused
    ), plan AS (
      SELECT t.tick, t.id, t.ord,
             CASE WHEN cur.overlap = 'skip' AND (cur.busy OR t.ord > 1) THEN 'skipped' ELSE 'queued' END AS state
        FROM t CROSS JOIN cur
    ), won AS (
      UPDATE ${sched} r
         SET next_run_at = ${p.next},
             last_run_at = coalesce((SELECT max(p.tick) FROM plan p WHERE p.state = 'queued'), r.last_run_at),
             last_job_id = coalesce((SELECT p.id FROM plan p WHERE p.state = 'queued' ORDER BY p.ord DESC LIMIT 1), r.last_job_id),
             skipped_count = r.skipped_count + (SELECT count(*) FROM plan p WHERE p.state = 'skipped'),
             last_skipped_at = coalesce((SELECT max(p.tick) FROM plan p WHERE p.state = 'skipped'), r.last_skipped_at)
       WHERE r.name = ${p.name} AND r.next_run_at = ${p.due} AND NOT r.paused
      RETURNING r.name, r.job_name, r.payload, r.options
    ), ins AS (
      INSERT INTO ${s}.job (id, name, queue, payload, state, priority, run_at, max_attempts, timeout_ms, serial_key,
                            group_key, unique_key, unique_while, created_at, completed_at, last_error)
      SELECT p.id, w.job_name, ${TICK_JOB.queue('w')}, w.payload, p.state, ${TICK_JOB.priority('w')}, p.tick,
             ${TICK_JOB.maxAttempts('w')}, ${TICK_JOB.timeoutMs('w')}, ${TICK_JOB.serialKey('w')}, ${TICK_JOB.groupKey('w')},
             'schedule:' || w.name || ':' || to_char(p.tick AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'queued-or-active', ${p.now},
             CASE WHEN p.state = 'skipped' THEN ${p.now}::timestamptz END,
             CASE WHEN p.state = 'skipped' THEN jsonb_build_object(
               'name', 'ScheduleOverlapSkipped',
               'message', format('Schedule "%s" skipped this tick: its previous run was still queued or active (overlap: skip)', w.name))
             END
        FROM won w CROSS JOIN plan p
      RETURNING id, state, queue, serial_key, group_key
    ), ${flagQueue(s, 'ins', p.now)}, n AS (
      SELECT ${notifySql('queue', p.channel, 'queue')} FROM (SELECT DISTINCT queue FROM ins WHERE state = 'queued') q
    ), fn AS (
      SELECT ${notifySql('queues', p.channel, 'name')} FROM flagged
    )
    SELECT (SELECT count(*) FROM won)::int AS won,
           (SELECT count(*) FROM ins WHERE state = 'queued')::int AS queued,
           (SELECT count(*) FROM ins WHERE state = 'skipped')::int AS skipped,
           (SELECT count(*) FROM n)::int + (SELECT count(*) FROM fn)::int AS notified`,
    ),

    lockSchedule: statement<{ name: string }>()(
      ['name'],
      (p) => `SELECT name FROM ${sched} WHERE name = ${p.name} FOR UPDATE`,
    ),

    /**
     * One run outside the timing (run after lockSchedule, in its
     * transaction, so a tick firing meanwhile is seen). It becomes the
     * schedule's last run, which is what overlap 'skip' looks at; with
     * 'skip' it is refused while that run is still live.

     */
    runNow: statement<{ name: string; jobId: string; now: Date; channel: string }>()(
      ['name', 'jobId', 'now', 'channel'],
      (p) => `WITH r AS (
      SELECT name, job_name, payload, options, overlap, last_job_id FROM ${sched} WHERE name = ${p.name}
    ), busy AS (
      SELECT j.id, j.state FROM r JOIN ${s}.job j ON j.id = r.last_job_id
       WHERE r.overlap = 'skip' AND j.state IN (${sqlLiterals(LIVE_JOB_STATES)})
    ), ins AS (
      INSERT INTO ${s}.job (id, name, queue, payload, state, priority, run_at, max_attempts, timeout_ms, serial_key,
                            group_key, created_at)
      SELECT ${p.jobId}, r.job_name, ${TICK_JOB.queue('r')}, r.payload, 'queued', ${TICK_JOB.priority('r')}, ${p.now},
             ${TICK_JOB.maxAttempts('r')}, ${TICK_JOB.timeoutMs('r')}, ${TICK_JOB.serialKey('r')}, ${TICK_JOB.groupKey('r')}, ${p.now}
        FROM r WHERE NOT EXISTS (SELECT 1 FROM busy)
      RETURNING id, queue, serial_key, group_key
    ), ${flagQueue(s, 'ins', p.now)}, fn AS (
      SELECT ${notifySql('queues', p.channel, 'name')} FROM flagged
    ), u AS (
      UPDATE ${sched} w SET last_run_at = ${p.now}, last_job_id = ins.id FROM ins WHERE w.name = ${p.name} RETURNING w.name
    ), n AS (
      SELECT ${notifySql('queue', p.channel, 'ins.queue')} FROM ins
    )
    SELECT (SELECT queue FROM ins) AS queue, (SELECT id FROM busy) AS busy_id, (SELECT state FROM busy) AS busy_state,
           (SELECT count(*) FROM u)::int AS updated, (SELECT count(*) FROM n)::int + (SELECT count(*) FROM fn)::int AS notified`,
    ),
  };
}

export type ScheduleStatements = ReturnType<typeof scheduleStatements>;
