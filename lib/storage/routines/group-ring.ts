/**
 * The grouped claim's choice of groups, as PL/pgSQL statements of
 * `claim_controlled`: the groups at their concurrency limit, the groups
 * returning with new work, and the walk of the rotation that skips both.
 * They run in that order in the routine's group branch (RATE_FULL_GROUPS of
 * group-rates.ts between the first two), and between them they read
 * p_queue, p_now, v_q, v_walk, v_full, v_groups and v_fresh, and write
 * v_full, v_fresh, v_last_arrival, v_seen and v_groups. Each fragment says
 * its own in its comment and in its `_VARS` export, which
 * test/unit/claim-fragments.spec.ts checks against its SQL.
 */

import { activeInQueue } from './sql-fragments.js';

/** The most arriving jobs one claim reads: a flood of them is read over several claims, in order. */
const ARRIVALS_READ = 64;

/**
 * Into v_full, the groups of the queue with as many running jobs as their
 * limit allows: a group's own limit (job_group_limit) or the queue's
 * default. Counted from the lease index, under the queue's row lock.
 *
 * Reads: p_queue, v_q. Writes: v_full.
 */
export const FULL_GROUPS = `SELECT coalesce(array_agg(a.g), '{}') INTO v_full
      FROM (SELECT a.group_key AS g, count(*) AS n FROM :SCHEMA.job a
             WHERE ${activeInQueue('a', 'p_queue')} AND a.group_key IS NOT NULL
             GROUP BY a.group_key) a
     WHERE a.n >= coalesce((SELECT l.concurrency FROM :SCHEMA.job_group_limit l
                             WHERE l.queue = p_queue AND l.group_key = a.g), v_q.group_concurrency);`;

/** The variables of claim_controlled FULL_GROUPS reads and writes. */
export const FULL_GROUPS_VARS = { reads: ['p_queue', 'v_q'], writes: ['v_full'] } as const;

/**
 * Into v_fresh, the groups whose due work all arrived since the last claim
 * looked, in the order they arrived: their backlog had drained, so they are
 * served at this claim instead of when the rotation reaches them. Arrivals
 * are read in run_at order from the arrival index, at most ARRIVALS_READ
 * of them, from the latest one a claim read before (group_seen_at); v_seen
 * is the latest read now. The first claim reads none and starts from the
 * latest due one.
 *
 * Read from what was read, not from the claim's clock: a job whose enqueue
 * commits after a claim's snapshot is still an arrival for the next claim.
 * Only a job stamped earlier than one already read (two enqueues racing, or
 * an enqueuer whose clock is behind) is not, and its group waits for the
 * rotation as every group did before it returned.
 *
 * Reads: p_now, p_queue, v_full, v_last_arrival, v_q. Writes: v_fresh,
 * v_last_arrival, v_seen.
 */
export const FRESH_GROUPS = `IF v_q.group_seen_at IS NULL THEN
      SELECT max(j.run_at) INTO v_last_arrival FROM :SCHEMA.job j
       WHERE j.state = 'queued' AND j.queue = p_queue AND j.group_key IS NOT NULL AND j.run_at <= p_now;
    ELSE
      SELECT coalesce(array_agg(f.g ORDER BY f.first_at, f.g) FILTER (WHERE f.fresh), '{}'), max(f.last_at)
        INTO v_fresh, v_last_arrival
        FROM (SELECT a.group_key AS g, min(a.run_at) AS first_at, max(a.run_at) AS last_at,
                     NOT (a.group_key = ANY(v_full)) AND NOT EXISTS (
                       SELECT 1 FROM :SCHEMA.job o
                        WHERE o.state = 'queued' AND o.queue = p_queue AND o.group_key = a.group_key
                          AND o.run_at <= v_q.group_seen_at) AS fresh
                FROM (SELECT j.group_key, j.run_at FROM :SCHEMA.job j
                       WHERE j.state = 'queued' AND j.queue = p_queue AND j.group_key IS NOT NULL
                         AND j.run_at > v_q.group_seen_at AND j.run_at <= p_now
                       ORDER BY j.run_at LIMIT ${ARRIVALS_READ}) a
               GROUP BY a.group_key) f;
    END IF;
    v_seen := coalesce(v_last_arrival, v_q.group_seen_at);`;

/** The variables of claim_controlled FRESH_GROUPS reads and writes. */
export const FRESH_GROUPS_VARS = {
  reads: ['p_now', 'p_queue', 'v_full', 'v_last_arrival', 'v_q'],
  writes: ['v_fresh', 'v_last_arrival', 'v_seen'],
} as const;

/** The next group of the queue with queued work after `after` (and up to `upTo`, when given). */
function nextGroup(after: string, upTo?: string): string {
  return `(SELECT j.group_key FROM :SCHEMA.job j
                 WHERE j.state = 'queued' AND j.queue = p_queue AND j.group_key IS NOT NULL AND j.group_key > ${after}
                   ${upTo ? `AND j.group_key <= ${upTo}` : ''}
                 ORDER BY j.group_key LIMIT 1)`;
}

/**
 * One stretch of the rotation's walk, appended to v_groups: the groups with
 * queued work after `from` (up to `upTo`), one index probe each, until the
 * claim has v_walk groups. Groups in `skip` are passed over and not counted.
 */
function walk(from: string, upTo: string | undefined, skip: string): string {
  const counts = (g: string) => `CASE WHEN ${g} = ANY(${skip}) THEN 0 ELSE 1 END`;
  return `WITH RECURSIVE walk(g, n, s) AS (
        SELECT f.g, cardinality(v_groups) + ${counts('f.g')}, 1 FROM (SELECT ${nextGroup(from, upTo)} AS g) f
        UNION ALL
        SELECT x.g, w.n + ${counts('x.g')}, w.s + 1
          FROM walk w CROSS JOIN LATERAL (SELECT ${nextGroup('w.g', upTo)} AS g) x
         WHERE w.g IS NOT NULL AND w.n < v_walk
      )
      SELECT v_groups || coalesce(array_agg(w.g ORDER BY w.s), '{}') INTO v_groups
        FROM walk w WHERE w.g IS NOT NULL AND NOT (w.g = ANY(${skip}));`;
}

/**
 * The walk of the rotation: from the cursor to the end, then from the start
 * up to the cursor itself (the group served last comes last), skipping the
 * full groups and those served first as returning. Group keys are never
 * empty, so '' stands for "from the start".
 *
 * Reads: p_queue, v_fresh, v_full, v_groups, v_q, v_walk. Writes: v_groups
 * (appended to).
 */
export const GROUP_WALK = `${walk("coalesce(v_q.group_cursor, '')", undefined, 'v_full || v_fresh')}
      IF cardinality(v_groups) < v_walk AND v_q.group_cursor IS NOT NULL THEN
        ${walk("''", 'v_q.group_cursor', 'v_full || v_fresh')}
      END IF;`;

/** The variables of claim_controlled GROUP_WALK reads and writes. */
export const GROUP_WALK_VARS = {
  reads: ['p_queue', 'v_fresh', 'v_full', 'v_groups', 'v_q', 'v_walk'],
  writes: ['v_groups'],
} as const;
