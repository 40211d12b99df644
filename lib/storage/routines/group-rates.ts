/**
 * A rate limit per group (JobsModule's `queues.<q>.groups.rateLimit`, such
 * as 10/s per shop), as PL/pgSQL text spliced into `claim_controlled`. Each
 * group of the queue starts at most v_q.group_rate_max jobs in any window of
 * v_q.group_rate_per_ms, kept in a log per group (job_group_rate) in the
 * format of the queue's own (rate_log_at, rate_log_n: each claim's turn and
 * count). The claims of such a queue are counted, so they take turns on the
 * queue's row lock across instances, which makes each group's count exact.
 * GROUP_RATE_TURN runs under the queue's lock after RATE_TURN,
 * RATE_FULL_GROUPS after FULL_GROUPS (group-ring.ts), groupRateRoom in the
 * counted claim's ring, WRITE_GROUP_LOGS after the claim. Between them they
 * read p_queue, p_now, p_names, v_q, v_turn, v_full, v_wait and
 * v_chosen_groups, and write v_turn, v_full and v_wait. Each fragment says
 * its own in its comment and in its `_VARS` export, which
 * test/unit/claim-fragments.spec.ts checks against its SQL.
 */

import { dueInGroup } from './claim-columns.js';
import { rateLogWrite, rateWindowOf } from './sql-fragments.js';

/** How long a start counts in a group's window: `per` plus the start lag, as rateWindow counts a queue's. */
const WINDOW = rateWindowOf('v_q.group_rate_per_ms');

/** A group row's log written at the turn: its entries in the window, then this claim's starts of it. */
const groupLog = rateLogWrite('r', 'v_turn', 'EXCLUDED.rate_log_n[1]', WINDOW);

/** The starts (alias `x`, columns at and n) of group row `r` in its window at the turn, and the oldest of them. */
const inWindow = (r: string) => `SELECT sum(x.n) AS used, min(x.at) AS oldest
              FROM unnest(${r}.rate_log_at, ${r}.rate_log_n) AS x(at, n) WHERE x.at > v_turn - ${WINDOW}`;

/** Milliseconds from the caller's clock until a window whose oldest start is `oldest` lets one more start. */
const waitFor = (oldest: string) => `greatest(1, extract(epoch FROM ${oldest} + ${WINDOW} - p_now) * 1000)`;

/**
 * The turn (RATE_TURN) counts no earlier than the latest start a group's log
 * holds: a claim stamped earlier than one that took its turn before it must
 * not count its starts back beside those that one already dropped from the
 * log. The latest is read off the index on (queue, last_at).
 *
 * Reads: p_queue, v_q, v_turn. Writes: v_turn.
 */
export const GROUP_RATE_TURN = `IF v_q.group_rate_max IS NOT NULL THEN
      v_turn := greatest(v_turn, (SELECT max(r.last_at) FROM :SCHEMA.job_group_rate r WHERE r.queue = p_queue));
    END IF;`;

/** The variables of claim_controlled GROUP_RATE_TURN reads and writes. */
export const GROUP_RATE_TURN_VARS = { reads: ['p_queue', 'v_q', 'v_turn'], writes: ['v_turn'] } as const;

/**
 * Into v_full too, the groups whose window is full at the turn, so the walk
 * passes over them as it does the groups at their concurrency limit and they
 * do not use it up; and into v_wait, when the first of them with due work
 * may start again. Only groups that started a job within the window are
 * read, off the index on (queue, last_at).
 *
 * Reads: p_names, p_now, p_queue, v_full, v_q, v_turn, v_wait. Writes:
 * v_full (appended to), v_wait.
 */
export const RATE_FULL_GROUPS = `IF v_q.group_rate_max IS NOT NULL THEN
        SELECT v_full || coalesce(array_agg(f.g), '{}'), least(v_wait, min(${waitFor('f.oldest')}) FILTER (WHERE f.due))
          INTO v_full, v_wait
          FROM (SELECT r.group_key AS g, w.oldest, EXISTS (SELECT 1 FROM :SCHEMA.job j WHERE ${dueInGroup('r.group_key')}) AS due
                  FROM :SCHEMA.job_group_rate r CROSS JOIN LATERAL (${inWindow('r')}) w
                 WHERE r.queue = p_queue AND r.last_at > v_turn - ${WINDOW} AND w.used >= v_q.group_rate_max) f;
      END IF;`;

/** The variables of claim_controlled RATE_FULL_GROUPS reads and writes. */
export const RATE_FULL_GROUPS_VARS = {
  reads: ['p_names', 'p_now', 'p_queue', 'v_full', 'v_q', 'v_turn', 'v_wait'],
  writes: ['v_full', 'v_wait'],
} as const;

/**
 * The room group `g`'s window has left at the turn; NULL when the queue's groups have no rate limit.
 *
 * Reads: p_queue, v_q, v_turn. Writes: none.
 */
export const groupRateRoom = (g: string) => `CASE WHEN v_q.group_rate_max IS NOT NULL THEN
               v_q.group_rate_max - coalesce((SELECT w.used FROM :SCHEMA.job_group_rate gr CROSS JOIN LATERAL (${inWindow('gr')}) w
                                               WHERE gr.queue = p_queue AND gr.group_key = ${g}), 0) END`;

/** The variables of claim_controlled groupRateRoom reads and writes of its own, its argument aside. */
export const GROUP_RATE_ROOM_VARS = { reads: ['p_queue', 'v_q', 'v_turn'], writes: [] } as const;

/**
 * After the claim: each chosen group's starts go into its log at the turn
 * (its entries past the window dropped, a row made for a group new to it),
 * in group order. A group whose window this claim filled and that has due
 * work left says, in v_wait, when its next start is allowed, so the worker
 * looks again then rather than at its next poll.
 *
 * Reads: p_names, p_now, p_queue, v_chosen_groups, v_q, v_turn, v_wait.
 * Writes: v_wait (and the job_group_rate rows).
 */
export const WRITE_GROUP_LOGS = `IF v_q.group_rate_max IS NOT NULL THEN
    WITH logged AS (
      INSERT INTO :SCHEMA.job_group_rate AS r (queue, group_key, rate_log_at, rate_log_n, last_at)
      SELECT p_queue, c.g, ARRAY[v_turn], ARRAY[count(*)::int], v_turn
        FROM unnest(v_chosen_groups) AS c(g) WHERE c.g IS NOT NULL GROUP BY c.g ORDER BY c.g
      ON CONFLICT ON CONSTRAINT job_group_rate_pkey DO UPDATE
        SET rate_log_at = ${groupLog.at},
            rate_log_n = ${groupLog.n},
            last_at = greatest(r.last_at, v_turn)
      RETURNING r.group_key, r.rate_log_at, r.rate_log_n
    )
    SELECT least(v_wait, min(${waitFor('w.oldest')})) INTO v_wait
      FROM logged l CROSS JOIN LATERAL (${inWindow('l')}) w
     WHERE w.used >= v_q.group_rate_max AND EXISTS (SELECT 1 FROM :SCHEMA.job j WHERE ${dueInGroup('l.group_key')});
  END IF;`;

/** The variables of claim_controlled WRITE_GROUP_LOGS reads and writes. */
export const WRITE_GROUP_LOGS_VARS = {
  reads: ['p_names', 'p_now', 'p_queue', 'v_chosen_groups', 'v_q', 'v_turn', 'v_wait'],
  writes: ['v_wait'],
} as const;
