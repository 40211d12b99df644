import { FRESH_GROUPS, FULL_GROUPS, GROUP_WALK } from './group-ring.js';
import { GROUP_RATE_TURN, groupRateRoom, RATE_FULL_GROUPS, WRITE_GROUP_LOGS } from './group-rates.js';
import {
  KEY_ROOM,
  KEYED_RATE_WAIT,
  LOCK_RATE_KEYS,
  QUEUE_RATE_ROOM,
  RATE_TURN,
  WRITE_KEY_LOGS,
  WRITE_NAME_LOGS,
} from './rate-fragments.js';
import { claimAhead, COUNT_OWN_AHEAD } from './claim-ahead.js';
import { ACTIVE, CLAIMED_COLUMNS, DUE, dueInGroup, limitedClaim, RETURNED, WRITE } from './claim-columns.js';
import { LIMIT_SHARE, RECORD_WAIT } from './limit-shares.js';
import { CLAIM_CONTROLLED_SIGNATURE } from './claim-controlled-signature.js';
import { defineRoutine } from './routine.js';
import { claimOrder, claimSet, duePlainJob, inRateWindow, rateLogWrite } from './sql-fragments.js';

/** The queue's own rate log written after a claim: reads v_turn and v_claimed, writes no variable. */
const queueLog = rateLogWrite('jq', 'v_turn', 'v_claimed');

/**
 * Claims up to p_limit due jobs of a controlled queue for p_worker (and up
 * to p_ahead more claimed ahead: claimAhead). Where
 * something must be counted (a concurrency or rate limit, the queue's or a
 * job name's, a group's concurrency or rate, or serial keys), the queue's row lock makes the
 * claims of this queue take turns across instances (a keyed rate limit's row
 * lock, taken after it, those of every queue sharing the key:
 * LOCK_RATE_KEYS), and each statement below reads a fresh snapshot, so the
 * counts it enforces limits with include every claim committed before it. A
 * queue with unlimited groups alone needs no count to be exact: its claims
 * run side by side, skipping each other's rows, and the rotation's cursor
 * moves when its row is free. Returns the claimed jobs; when a rate limit
 * held jobs back, also a row with id NULL whose wait_ms says when the next
 * start is allowed.
 *
 * Its statements are planned once per connection (force_generic_plan): with
 * the job table's statistics the generic plans use the same indexes as the
 * custom ones, and spare planning on every call (in pgbench a grouped claim
 * of 20 jobs took 1.65 ms planned each time and 1.1 ms with the generic
 * plans). Without statistics (a new schema before its first ANALYZE) the
 * group walk may pick the arrival index and read every queued row: see the
 * operating guide's "Planner statistics".
 *
 * Its body is spliced from pieces, each a PL/pgSQL statement (or an
 * expression, or a CTE body) over the variables DECLAREd below and the
 * parameters, which states in its comment and in its `_VARS` export which of
 * them it reads and writes (test/unit/claim-fragments.spec.ts checks both
 * against its SQL). In the order they run: under the queue's lock
 * LOCK_RATE_KEYS, RATE_TURN (rate-fragments.ts) and GROUP_RATE_TURN
 * (group-rates.ts); in the claim block QUEUE_RATE_ROOM, LIMIT_SHARE
 * (limit-shares.ts), then for a queue limited as a whole COUNT_OWN_AHEAD,
 * limitedClaim (claim-columns.ts) and claimAhead (claim-ahead.ts), for a
 * queue with groups FULL_GROUPS, RATE_FULL_GROUPS, FRESH_GROUPS and
 * GROUP_WALK (group-ring.ts, group-rates.ts), in the counted claim KEY_ROOM
 * and groupRateRoom, after it WRITE_NAME_LOGS, WRITE_KEY_LOGS and
 * WRITE_GROUP_LOGS; after the block RECORD_WAIT and KEYED_RATE_WAIT. The
 * shared conditions and columns (DUE, WRITE, ACTIVE, dueInGroup, RETURNED,
 * CLAIMED_COLUMNS) come from claim-columns.ts, the SQL the TypeScript
 * statements say too from sql-fragments.ts. The whole text as installed is
 * test/fixtures/sql/routines/claim_controlled.sql.
 */
export const CLAIM_CONTROLLED = defineRoutine(
  'claim_controlled',
  `${CLAIM_CONTROLLED_SIGNATURE}
BEGIN
  SELECT * INTO v_q FROM :SCHEMA.job_queue jq WHERE jq.name = p_queue;
  IF NOT FOUND OR v_q.paused OR (p_limit < 1 AND p_ahead < 1) THEN
    RETURN;
  END IF;
  v_named := EXISTS (SELECT 1 FROM :SCHEMA.job_name_limit l WHERE l.queue = p_queue);
  v_group_limited := v_q.has_groups AND (v_q.group_concurrency IS NOT NULL
    OR EXISTS (SELECT 1 FROM :SCHEMA.job_group_limit l WHERE l.queue = p_queue));
  -- A rate limit per group counts each group's starts (group-rates.ts).
  v_counted := v_q.concurrency IS NOT NULL OR v_q.rate_max IS NOT NULL OR v_q.has_serial OR v_named OR v_group_limited
    OR (v_q.has_groups AND v_q.group_rate_max IS NOT NULL);
  IF v_counted THEN
    -- Re-read under the lock: the settings as the claim before this one left them.
    SELECT * INTO v_q FROM :SCHEMA.job_queue jq WHERE jq.name = p_queue FOR UPDATE;
    IF v_q.paused THEN
      RETURN;
    END IF;
    ${LOCK_RATE_KEYS}
    ${RATE_TURN}
    ${GROUP_RATE_TURN}
  END IF;

  -- Every way out of this block that held jobs back for a rate limit ends below it, with the row
  -- that says when the next start is allowed.
  <<claim>>
  BEGIN
    ${QUEUE_RATE_ROOM}

    -- Counted after the lock: each statement's snapshot holds every claim before this one.
    ${LIMIT_SHARE}

    -- A queue limited as a whole and nothing else: its plain jobs in claim order, no more than its
    -- concurrency (or this worker's share of it) leaves room for, then those claimed ahead.
    IF NOT (v_q.has_groups OR v_q.has_serial OR v_named) THEN
      IF v_room > 0 AND v_held_ahead > 0 THEN
        ${COUNT_OWN_AHEAD}
        GET DIAGNOSTICS v_claimed = ROW_COUNT;
        v_room := v_room - v_claimed;
        v_held_ahead := v_held_ahead - v_claimed;
      END IF;
      IF v_room > 0 THEN
        ${limitedClaim('v_room', 'false')}
        GET DIAGNOSTICS v_ahead = ROW_COUNT;
        v_claimed := v_claimed + v_ahead;
        IF v_q.rate_max IS NOT NULL AND v_claimed > 0 THEN
          UPDATE :SCHEMA.job_queue jq
             SET rate_log_at = ${queueLog.at},
                 rate_log_n = ${queueLog.n}
           WHERE jq.name = p_queue;
        END IF;
      END IF;
      ${claimAhead(limitedClaim('v_ahead', 'true'))}
      EXIT claim;
    END IF;
    IF v_room <= 0 THEN
      EXIT claim;
    END IF;

    -- Groups with queued work: first those returning with new work, then in rotation order from the one
    -- after the last served, passing over groups at their limit. One index probe each, so a queue with
    -- thousands of tenants costs what its claim needs. A claim of up to 20 jobs walks as many groups and
    -- takes one job from each; a larger one takes up to four a group (a quarter as many groups): each
    -- group costs an index descent, each further job of it a step.
    v_walk := greatest(least(v_room, 20), ceil(v_room / 4.0)::int);
    IF v_q.has_groups THEN
      IF v_group_limited THEN
        ${FULL_GROUPS}
      END IF;
      ${RATE_FULL_GROUPS}
      ${FRESH_GROUPS}
      ${GROUP_WALK}
      v_groups := v_fresh || v_groups;
    END IF;
    v_per_group := greatest(1, ceil(v_room::float8 / greatest(1, cardinality(v_groups))))::int;

    -- A queue with groups and nothing to count (no limit, no serial key): the groups' next jobs and
    -- the queue's jobs of no group are chosen, claimed, and the rotation moved in one statement. The
    -- order is the one below: noisy groups last, then each group's first job, then its second, and
    -- the queue's plain jobs take their turns as one more group at the front of the ring.
    IF NOT v_counted THEN
      RETURN QUERY
      WITH act AS (
        SELECT a.group_key FROM :SCHEMA.job a WHERE ${ACTIVE}
      ), group_load AS (
        SELECT act.group_key AS g, count(*) AS n, sum(count(*)) OVER () AS total FROM act GROUP BY act.group_key
      ), pool AS (
        SELECT x.id, x.t, x.turn, 0::bigint AS pos, NULL::text AS grp, false AS noisy
          FROM (SELECT y.id, y.ctid AS t, row_number() OVER (ORDER BY ${claimOrder('y')}) AS turn FROM (
                  SELECT j.id, j.ctid, j.priority, j.run_at FROM :SCHEMA.job j
                   WHERE ${duePlainJob('j', DUE)}
                   ORDER BY ${claimOrder('j')} LIMIT v_room FOR UPDATE SKIP LOCKED) y) x
        UNION ALL
        SELECT x.id, x.t, x.turn, r.pos, r.g,
               -- Noisy: at least group_min_inflight in flight and more than group_share of the queue's.
               coalesce(gl.n >= v_q.group_min_inflight AND gl.n > v_q.group_share * gl.total, false)
          FROM unnest(v_groups) WITH ORDINALITY AS r(g, pos)
          LEFT JOIN group_load gl ON gl.g = r.g
          CROSS JOIN LATERAL (
            SELECT y.id, y.ctid AS t, row_number() OVER (ORDER BY ${claimOrder('y')}) AS turn FROM (
              SELECT j.id, j.ctid, j.priority, j.run_at FROM :SCHEMA.job j
               WHERE ${dueInGroup('r.g')}
               ORDER BY ${claimOrder('j')} LIMIT v_per_group FOR UPDATE SKIP LOCKED) y) x
      ), chosen AS (
        SELECT p.id, p.t, p.grp, row_number() OVER (ORDER BY p.noisy, p.turn, p.pos) AS ord
          FROM pool p ORDER BY p.noisy, p.turn, p.pos LIMIT v_room
      ), u AS (
        -- By ctid, as the plain claim: the rows are locked by this statement, so none has a newer version.
        UPDATE :SCHEMA.job j
           SET ${claimSet('j', WRITE)}
         WHERE j.ctid = ANY(ARRAY(SELECT c.t FROM chosen c))
        RETURNING ${RETURNED}
      ), turned AS (
        -- Where the rotation stands, when no other claim holds the row: a cursor a step behind costs nothing.
        -- Returning groups were served ahead of the rotation: they do not move it.
        UPDATE :SCHEMA.job_queue jq
           SET group_cursor = coalesce((SELECT c.grp FROM chosen c WHERE c.grp IS NOT NULL AND NOT (c.grp = ANY(v_fresh))
                                         ORDER BY c.ord DESC LIMIT 1), jq.group_cursor),
               group_seen_at = greatest(jq.group_seen_at, v_seen)
         WHERE jq.name = p_queue
           AND (v_seen IS DISTINCT FROM v_q.group_seen_at OR EXISTS (SELECT 1 FROM chosen c WHERE c.grp IS NOT NULL))
           AND jq.ctid = (SELECT k.ctid FROM :SCHEMA.job_queue k WHERE k.name = p_queue FOR UPDATE SKIP LOCKED)
      )
      SELECT ${CLAIMED_COLUMNS}, false, u.context
        FROM u JOIN chosen c ON c.id = u.id
       ORDER BY c.ord;
      RETURN;
    END IF;

    WITH act AS (
      SELECT a.name, a.group_key, a.serial_key FROM :SCHEMA.job a WHERE ${ACTIVE}
    ), inflight AS (
      SELECT count(*)::int AS total FROM act
    ), group_load AS (
      SELECT act.group_key, count(*) AS n FROM act WHERE act.group_key IS NOT NULL GROUP BY act.group_key
    ), names AS (
      SELECT l.name, l.rate_key,
             l.concurrency - (SELECT count(*) FROM act WHERE act.name = l.name) AS room_c,
             l.rate_max - coalesce((SELECT sum(x.n) FROM unnest(l.rate_log_at, l.rate_log_n) AS x(at, n)
                                     WHERE ${inRateWindow('x', 'l', 'v_turn')}), 0) AS room_r
        FROM :SCHEMA.job_name_limit l WHERE v_named AND l.queue = p_queue
    ), key_room AS (
      ${KEY_ROOM}
    ), ring AS (
      -- With group limits, the room each group has left, of its concurrency and its rate (NULL: no limit).
      SELECT r.g, r.pos,
             least(coalesce((SELECT l.concurrency FROM :SCHEMA.job_group_limit l WHERE v_group_limited AND l.queue = p_queue
                              AND l.group_key = r.g), v_q.group_concurrency) - coalesce(gl.n, 0), ${groupRateRoom('r.g')}) AS room
        FROM unnest(v_groups) WITH ORDINALITY AS r(g, pos) LEFT JOIN group_load gl ON gl.group_key = r.g
    ), plain AS (
      -- Jobs of no group and no serial key, in claim order.
      SELECT j.id, j.name, j.priority, j.run_at, NULL::text AS grp, 0::bigint AS pos
        FROM :SCHEMA.job j
       WHERE ${duePlainJob('j', DUE)}
       ORDER BY ${claimOrder('j')} LIMIT v_room FOR UPDATE SKIP LOCKED
    ), grouped AS (
      -- Each group's next jobs.
      SELECT g.id, g.name, g.priority, g.run_at, ring.g AS grp, ring.pos
        FROM ring CROSS JOIN LATERAL (
          SELECT j.id, j.name, j.priority, j.run_at FROM :SCHEMA.job j
           WHERE ${dueInGroup('ring.g')}
           ORDER BY ${claimOrder('j')} LIMIT CASE WHEN ring.room < 1 THEN 0 ELSE least(v_per_group, ring.room) END
           FOR UPDATE SKIP LOCKED) g
    ), pool AS (
      SELECT * FROM plain
      UNION ALL
      SELECT * FROM grouped
      UNION ALL
      -- Each serial key's next job, if it is due and no job of the key is active.
      SELECT h.id, h.name, h.priority, h.run_at, NULL::text, 0::bigint
        FROM (SELECT DISTINCT ON (s.serial_key) s.id, s.name, s.priority, s.run_at, s.serial_key, s.deadline
                FROM :SCHEMA.job s
               WHERE v_q.has_serial AND s.state = 'queued' AND s.queue = p_queue AND s.serial_key IS NOT NULL
               ORDER BY s.serial_key, s.priority DESC, s.id) h
       WHERE h.run_at <= p_now AND h.name = ANY(p_names) AND (h.deadline IS NULL OR h.deadline > p_now)
         AND NOT EXISTS (SELECT 1 FROM act WHERE act.serial_key = h.serial_key)
    ), ranked AS (
      SELECT p.*,
             row_number() OVER (PARTITION BY p.name ORDER BY ${claimOrder('p')}) AS name_rank,
             row_number() OVER (PARTITION BY p.grp ORDER BY ${claimOrder('p')}) AS group_rank,
             -- A key's jobs in claim order, across the job names sharing it.
             row_number() OVER (PARTITION BY kn.rate_key ORDER BY ${claimOrder('p')}) AS key_rank, kn.rate_key,
             -- Noisy: at least group_min_inflight in flight and more than group_share of the queue's.
             (p.grp IS NOT NULL AND coalesce(gl.n, 0) >= v_q.group_min_inflight
                AND coalesce(gl.n, 0) > v_q.group_share * (SELECT total FROM inflight)) AS noisy
        FROM pool p LEFT JOIN group_load gl ON gl.group_key = p.grp LEFT JOIN names kn ON kn.name = p.name
    ), chosen AS (
      SELECT r.id, r.grp, r.name, row_number() OVER (ORDER BY r.noisy, r.group_rank, r.pos, ${claimOrder('r')}) AS ord
        FROM ranked r LEFT JOIN names n ON n.name = r.name LEFT JOIN key_room k ON k.key = r.rate_key
       WHERE (n.room_c IS NULL OR r.name_rank <= n.room_c) AND (n.room_r IS NULL OR r.name_rank <= n.room_r)
         AND (k.room IS NULL OR r.key_rank <= k.room)
       ORDER BY r.noisy, r.group_rank, r.pos, ${claimOrder('r')}
       LIMIT v_room
    )
    SELECT array_agg(c.id ORDER BY c.ord), array_agg(c.grp ORDER BY c.ord), array_agg(c.name ORDER BY c.ord)
      INTO v_ids, v_chosen_groups, v_chosen_names FROM chosen c;

    IF v_ids IS NULL THEN
      EXIT claim;
    END IF;

    -- The claim, rechecking each row: a job cancelled or claimed by the plain path meanwhile is skipped.
    RETURN QUERY
    WITH u AS (
      UPDATE :SCHEMA.job j
         SET ${claimSet('j', WRITE)}
       WHERE j.id = ANY(v_ids) AND j.state = 'queued'
      RETURNING ${RETURNED}
    )
    SELECT ${CLAIMED_COLUMNS}, false, u.context
      FROM u JOIN unnest(v_ids) WITH ORDINALITY AS o(id, ord) ON o.id = u.id
     ORDER BY o.ord;
    GET DIAGNOSTICS v_claimed = ROW_COUNT;

    -- Bookkeeping for the next claim: the rate window and where the group rotation stands. Without
    -- the lock, only where no other claim holds the row (SKIP LOCKED passes over another's lock, not
    -- this claim's own): a cursor a step behind costs nothing.
    IF v_q.rate_max IS NOT NULL OR v_q.has_groups THEN
      UPDATE :SCHEMA.job_queue jq
         SET rate_log_at = CASE WHEN jq.rate_max IS NULL THEN '{}' ELSE ${queueLog.at} END,
             rate_log_n = CASE WHEN jq.rate_max IS NULL THEN '{}' ELSE ${queueLog.n} END,
             group_cursor = coalesce((SELECT g FROM unnest(v_chosen_groups) WITH ORDINALITY AS c(g, o)
                                       WHERE g IS NOT NULL AND NOT (g = ANY(v_fresh)) ORDER BY o DESC LIMIT 1),
                                     jq.group_cursor),
             group_seen_at = greatest(jq.group_seen_at, v_seen)
       WHERE jq.name = p_queue
         AND jq.ctid = (SELECT k.ctid FROM :SCHEMA.job_queue k WHERE k.name = p_queue FOR UPDATE SKIP LOCKED);
    END IF;

    ${WRITE_NAME_LOGS}
    ${WRITE_KEY_LOGS}
    ${WRITE_GROUP_LOGS}
  END claim;

  ${RECORD_WAIT}

  ${KEYED_RATE_WAIT}

  IF v_wait IS NOT NULL THEN
    RETURN QUERY SELECT NULL::uuid, NULL::text, NULL::text, NULL::jsonb, NULL::int, NULL::int, NULL::int,
                        NULL::uuid, NULL::jsonb, NULL::timestamptz, NULL::timestamptz, v_wait, false, NULL::jsonb;
  END IF;
END $fn$`,
);
