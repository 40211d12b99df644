/**
 * How many due jobs are looked at for names no live worker handles, per queue and per part of the
 * claim index (jobs with a group or serial key, and plain jobs), in claim order. Claims pass over
 * a job whose name they lack, so such jobs stay at the head of that order: a bounded look finds
 * them and keeps the read cheap under a backlog, and keeps the plan's estimated cost under
 * PostgreSQL's default jit_above_cost (compiling it would cost more than running it).
 */
export const UNHANDLED_SCAN = 100;

/** Live: not stopped, its heartbeat at or after `liveSince`. Serves a queue: `queues` empty (every queue) or naming it. */
function liveServing(w: string, queue: string, liveSince: string): string {
  return `${w}.stopped_at IS NULL AND ${w}.last_heartbeat >= ${liveSince}
             AND (cardinality(${w}.queues) = 0 OR ${queue} = ANY(${w}.queues))`;
}

/**
 * The CTEs (after `WITH RECURSIVE`) that end in `up`: the (queue, name) pairs of due jobs that no
 * live worker handles. `now` and `liveSince` are SQL expressions: the time due is judged at, and
 * the oldest heartbeat of a live worker.
 *
 * - `uq`: the queues that hold queued jobs, one probe of the claim index per queue.
 * - `uh`: of those, each with the names its live workers handle. A live worker of a build before
 *   version 4 recorded no `job_names`: it counts as handling every name, so an upgrade raises no
 *   alarm; such a queue is left out.
 * - `up`: the names among the first due jobs of each queue (UNHANDLED_SCAN per part) that none of
 *   its live workers handles.
 */
export function unhandledPairs(s: string, now: string, liveSince: string): string {
  return `uq AS (
      (SELECT queue FROM ${s}.job WHERE state = 'queued' ORDER BY queue LIMIT 1)
      UNION ALL
      SELECT (SELECT j.queue FROM ${s}.job j WHERE j.state = 'queued' AND j.queue > uq.queue ORDER BY j.queue LIMIT 1)
        FROM uq WHERE uq.queue IS NOT NULL
    ), uh AS (
      SELECT uq.queue, h.names
        FROM uq CROSS JOIN LATERAL (
          SELECT coalesce(array_agg(DISTINCT n.name) FILTER (WHERE n.name IS NOT NULL), '{}') AS names,
                 bool_or(w.job_names IS NULL) AS every_name
            FROM ${s}.worker w LEFT JOIN LATERAL unnest(w.job_names) AS n(name) ON true
           WHERE ${liveServing('w', 'uq.queue', liveSince)}
        ) h
       WHERE uq.queue IS NOT NULL AND h.every_name IS NOT TRUE
    ), up AS (
      SELECT DISTINCT uh.queue, head.name
        FROM uh CROSS JOIN (VALUES (false), (true)) AS part(plain) CROSS JOIN LATERAL (
          SELECT j.name FROM ${s}.job j
           WHERE j.state = 'queued' AND j.queue = uh.queue
             AND (coalesce(j.group_key, j.serial_key) IS NULL) = part.plain AND j.run_at <= ${now}
           ORDER BY j.priority DESC, j.run_at, j.id
           LIMIT ${UNHANDLED_SCAN}
        ) head
       WHERE head.name <> ALL(uh.names)
    )`;
}

/** No live worker serves `queue` and handles `name` (a worker without `job_names` handles every name). */
export function noLiveHandler(s: string, queue: string, name: string, liveSince: string): string {
  return `NOT EXISTS (
      SELECT 1 FROM ${s}.worker w
       WHERE ${liveServing('w', queue, liveSince)}
         AND (w.job_names IS NULL OR ${name} = ANY(w.job_names)))`;
}
