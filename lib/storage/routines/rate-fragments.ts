/**
 * The rate-limit parts of `claim_controlled`, as PL/pgSQL text: the time a
 * claim counts its windows at, the queue's window, and the keyed limits
 * (JobsModule's `rateLimits`) that the job names of several queues share.
 * They are spliced into its body: under the queue's lock LOCK_RATE_KEYS then
 * RATE_TURN, in the claim block QUEUE_RATE_ROOM first and KEY_ROOM as a CTE,
 * after the claim WRITE_NAME_LOGS and WRITE_KEY_LOGS, and KEYED_RATE_WAIT
 * after the block. Between them they read p_queue, p_now, v_q, v_named,
 * v_keys, v_turn, v_room, v_wait and v_chosen_names, and write v_keys,
 * v_turn, v_room, v_wait, v_in_window and v_oldest. Each fragment says its
 * own in its comment and in its `_VARS` export, which
 * test/unit/claim-fragments.spec.ts checks against its SQL.
 */

import { inRateWindow, rateLogWrite, rateWindow } from './sql-fragments.js';

/**
 * Lock order: the queue's row, then the rows of the keyed limits its job
 * names refer to, in key order. A claim locks one queue's row, and every
 * claim takes keys in the same order, so claims of queues that share a key
 * wait for each other at the key and never deadlock; the key's lock makes
 * its count exact across queues as the queue's lock does within one.
 *
 * Reads: p_queue, v_named. Writes: v_keys.
 */
export const LOCK_RATE_KEYS = `IF v_named THEN
      SELECT coalesce(array_agg(k.key ORDER BY k.key), '{}') INTO v_keys FROM (
        SELECT k.key FROM :SCHEMA.job_rate_limit k
         WHERE k.rate_max IS NOT NULL
           AND k.key IN (SELECT l.rate_key FROM :SCHEMA.job_name_limit l WHERE l.queue = p_queue)
         ORDER BY k.key FOR UPDATE) k;
    END IF;`;

/** The variables of claim_controlled LOCK_RATE_KEYS reads and writes. */
export const LOCK_RATE_KEYS_VARS = { reads: ['p_queue', 'v_named'], writes: ['v_keys'] } as const;

/**
 * A claim is stamped with its caller's clock before it waits for the locks,
 * so one stamped earlier can take its turn after one stamped later, which
 * already dropped from the rate logs the starts it no longer needed. Starts
 * therefore count no earlier than the latest one a rate log holds: the
 * starts a claim counts, those it records and its jobs' started_at follow
 * the order of the turns, across instances whose clocks differ too. Which
 * jobs are due (run_at, deadline), the lease and the wait still go by the
 * caller's clock.
 *
 * Reads: p_now, p_queue, v_keys, v_named, v_q. Writes: v_turn.
 */
export const RATE_TURN = `IF v_q.rate_max IS NOT NULL OR v_named THEN
      v_turn := greatest(p_now,
        (SELECT max(l.at) FROM unnest(v_q.rate_log_at) AS l(at) WHERE v_q.rate_max IS NOT NULL),
        (SELECT max(x.at) FROM :SCHEMA.job_name_limit n CROSS JOIN LATERAL unnest(n.rate_log_at) AS x(at)
          WHERE v_named AND n.queue = p_queue AND n.rate_max IS NOT NULL),
        (SELECT max(x.at) FROM :SCHEMA.job_rate_limit k CROSS JOIN LATERAL unnest(k.rate_log_at) AS x(at)
          WHERE k.key = ANY(v_keys)));
    END IF;`;

/** The variables of claim_controlled RATE_TURN reads and writes. */
export const RATE_TURN_VARS = {
  reads: ['p_now', 'p_queue', 'v_keys', 'v_named', 'v_q'],
  writes: ['v_turn'],
} as const;

/**
 * The queue's own rate limit: no more jobs than its window has room for, and
 * when the next may start. Leaves the claim block (EXIT claim) when the
 * window is full.
 *
 * Reads: p_now, v_in_window, v_oldest, v_q, v_room, v_turn. Writes:
 * v_in_window, v_oldest (its own scratch), v_room, v_wait.
 */
export const QUEUE_RATE_ROOM = `IF v_q.rate_max IS NOT NULL THEN
      SELECT coalesce(sum(l.n), 0), min(l.at) INTO v_in_window, v_oldest
        FROM unnest(v_q.rate_log_at, v_q.rate_log_n) AS l(at, n)
       WHERE ${inRateWindow('l', 'v_q', 'v_turn')};
      IF v_q.rate_max - v_in_window < v_room THEN
        v_room := v_q.rate_max - v_in_window;
        -- Waited by the caller's own clock: one behind the log's waits the longer.
        v_wait := greatest(1, extract(epoch FROM v_oldest + ${rateWindow('v_q')} - p_now) * 1000);
      END IF;
      IF v_room <= 0 THEN
        EXIT claim;
      END IF;
    END IF;`;

/** The variables of claim_controlled QUEUE_RATE_ROOM reads and writes. */
export const QUEUE_RATE_ROOM_VARS = {
  reads: ['p_now', 'v_in_window', 'v_oldest', 'v_q', 'v_room', 'v_turn'],
  writes: ['v_in_window', 'v_oldest', 'v_room', 'v_wait'],
} as const;

/**
 * A CTE body: each locked key's room in its window at the turn.
 *
 * Reads: v_keys, v_turn. Writes: none.
 */
export const KEY_ROOM = `SELECT k.key, k.rate_max - coalesce((SELECT sum(x.n) FROM unnest(k.rate_log_at, k.rate_log_n) AS x(at, n)
                                   WHERE ${inRateWindow('x', 'k', 'v_turn')}), 0) AS room
        FROM :SCHEMA.job_rate_limit k WHERE k.key = ANY(v_keys)`;

/** The variables of claim_controlled KEY_ROOM reads and writes. */
export const KEY_ROOM_VARS = { reads: ['v_keys', 'v_turn'], writes: [] } as const;

const nameLog = rateLogWrite(
  'l',
  'v_turn',
  '(SELECT count(*)::int FROM unnest(v_chosen_names) AS c(n) WHERE c.n = l.name)',
);

/**
 * Records the chosen jobs of each job name with a rate limit of its own in its log, at the turn.
 *
 * Reads: p_queue, v_chosen_names, v_named, v_turn. Writes: none (the job_name_limit rows).
 */
export const WRITE_NAME_LOGS = `IF v_named THEN
      UPDATE :SCHEMA.job_name_limit l
         SET rate_log_at = ${nameLog.at},
             rate_log_n = ${nameLog.n}
       WHERE l.queue = p_queue AND l.rate_max IS NOT NULL AND l.name = ANY(v_chosen_names);
    END IF;`;

/** The variables of claim_controlled WRITE_NAME_LOGS reads and writes. */
export const WRITE_NAME_LOGS_VARS = {
  reads: ['p_queue', 'v_chosen_names', 'v_named', 'v_turn'],
  writes: [],
} as const;

const keyLog = rateLogWrite('k', 'v_turn', 'used.started');

/**
 * Records the chosen jobs of each key in its log, at the turn.
 *
 * Reads: p_queue, v_chosen_names, v_keys, v_turn. Writes: none (the job_rate_limit rows).
 */
export const WRITE_KEY_LOGS = `IF cardinality(v_keys) > 0 THEN
      UPDATE :SCHEMA.job_rate_limit k
         SET rate_log_at = ${keyLog.at},
             rate_log_n = ${keyLog.n}
        FROM (SELECT l.rate_key, count(*)::int AS started
                FROM unnest(v_chosen_names) AS c(name)
                JOIN :SCHEMA.job_name_limit l ON l.queue = p_queue AND l.name = c.name
               WHERE l.rate_key = ANY(v_keys) GROUP BY l.rate_key) used
       WHERE k.key = used.rate_key;
    END IF;`;

/** The variables of claim_controlled WRITE_KEY_LOGS reads and writes. */
export const WRITE_KEY_LOGS_VARS = {
  reads: ['p_queue', 'v_chosen_names', 'v_keys', 'v_turn'],
  writes: [],
} as const;

/**
 * A key whose window is full says when its next start is allowed, as the queue's own limit does.
 *
 * Reads: p_now, v_keys, v_turn, v_wait. Writes: v_wait.
 */
export const KEYED_RATE_WAIT = `IF cardinality(v_keys) > 0 THEN
    v_wait := least(v_wait, (
      SELECT min(greatest(1, extract(epoch FROM w.oldest + ${rateWindow('k')} - p_now) * 1000))
        FROM :SCHEMA.job_rate_limit k CROSS JOIN LATERAL (
          SELECT sum(x.n) AS used, min(x.at) AS oldest FROM unnest(k.rate_log_at, k.rate_log_n) AS x(at, n)
           WHERE ${inRateWindow('x', 'k', 'v_turn')}) w
       WHERE k.key = ANY(v_keys) AND w.used >= k.rate_max));
  END IF;`;

/** The variables of claim_controlled KEYED_RATE_WAIT reads and writes. */
export const KEYED_RATE_WAIT_VARS = { reads: ['p_now', 'v_keys', 'v_turn', 'v_wait'], writes: ['v_wait'] } as const;
