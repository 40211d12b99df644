/**
 * The grouped claim's choice of groups, as PL/pgSQL statements of
 * `claim_controlled` (its variables: p_queue, p_now, v_q, v_walk, v_groups,
 * v_full, v_fresh, v_arrived, v_last_arrival, v_seen): the groups at their
 * concurrency limit, the groups returning with new work, and the walk of the
 * rotation that skips both.
 */

/** The most arriving jobs one claim reads: a flood of them is read over several claims, in order. */
const ARRIVALS_READ = 64;

/**
 * Into v_full, the groups of the queue with as many running jobs as their
 * limit allows: a group's own limit (job_group_limit) or the queue's
 * default. Counted from the lease index, under the queue's row lock.
 */
export const FULL_GROUPS = `SELECT coalesce(array_agg(a.g), '{}') INTO v_full
      FROM (SELECT a.group_key AS g, count(*) AS n FROM :SCHEMA.job a
             WHERE a.lease_expires_at IS NOT NULL AND a.state = 'active' AND a.queue = p_queue AND a.group_key IS NOT NULL
             GROUP BY a.group_key) a
     WHERE a.n >= coalesce((SELECT l.concurrency FROM :SCHEMA.job_group_limit l
                             WHERE l.queue = p_queue AND l.group_key = a.g), v_q.group_concurrency);`;

/**
 * Into v_fresh, the groups whose due work all arrived since the last claim
 * looked (group_seen_at), in the order they arrived: their backlog had
 * drained, so they are served at this claim instead of when the rotation
 * reaches them. Reads the arrivals in order from the arrival index, at most
 * ARRIVALS_READ of them; v_seen is where the next claim reads on from.
 *
 * Arrival is by run_at, the enqueuer's clock: a group's first job committed
 * after a claim's snapshot but stamped before that claim's clock (a race of
 * the two, or an enqueuer's clock behind) is not an arrival, and that group
 * waits for the rotation as every group did before it returned.
 */
export const FRESH_GROUPS = `IF v_q.group_seen_at IS NOT NULL THEN
      SELECT coalesce(array_agg(f.g ORDER BY f.first_at, f.g) FILTER (WHERE f.fresh), '{}'), max(f.last_at),
             coalesce(sum(f.n), 0)
        INTO v_fresh, v_last_arrival, v_arrived
        FROM (SELECT a.group_key AS g, min(a.run_at) AS first_at, max(a.run_at) AS last_at, count(*) AS n,
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
    -- A full read leaves the rest of the arrivals for the next claim.
    v_seen := CASE WHEN v_arrived >= ${ARRIVALS_READ} THEN v_last_arrival ELSE greatest(v_q.group_seen_at, p_now) END;`;

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
 */
export const GROUP_WALK = `${walk("coalesce(v_q.group_cursor, '')", undefined, 'v_full || v_fresh')}
      IF cardinality(v_groups) < v_walk AND v_q.group_cursor IS NOT NULL THEN
        ${walk("''", 'v_q.group_cursor', 'v_full || v_fresh')}
      END IF;`;
