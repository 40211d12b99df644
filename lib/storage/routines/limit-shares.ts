/**
 * The shares of a queue's concurrency limit, as PL/pgSQL text spliced into
 * `claim_controlled`. Without them the worker whose outcome write frees a
 * slot refills it in the same statement (finishAndClaim), so whichever
 * instance held the slots first keeps all of them: with 10 ms jobs one of
 * two processes ran every job of a queue limited to 10. A worker that asks
 * for more than the limit leaves it is recorded as waiting on the queue's
 * row (held by the claim's lock); while another worker waits, a claim that
 * asks for shares (p_share: its worker's handlers of the queue run long
 * enough, see HandlerTimes) takes no more than its share, ceil(limit /
 * workers wanting), and when it leaves free slots to the waiting it wakes
 * them. Where nobody else waits, a worker takes every free slot, so a limit
 * is never left idle for a share no one claims.
 *
 * LIMIT_SHARE runs in the claim block before any claim, RECORD_WAIT after
 * the block. Between them they read p_queue, p_worker, p_now, p_limit,
 * p_channel, p_share, p_ahead, v_q, v_room and v_claimed, and write v_room
 * and the share's own v_active, v_mine, v_held_ahead, v_free, v_bound,
 * v_waiting, v_until and v_wants (claimAhead reads several of them). Each
 * fragment says its own in its comment and in its `_VARS` export, which
 * test/unit/claim-fragments.spec.ts checks against its SQL.
 */

import { notifySql } from '../sql/notification-topics.js';
import { activeInQueue, heldInQueue } from './sql-fragments.js';

/**
 * How long a worker counts as waiting after its last claim that wanted more.
 * A waiting worker asks again on every wake-up and at least at each poll
 * (1 s by default), and its entry is renewed once it is half spent. A worker
 * that shuts down drops its entries (leaveWaits); one that stopped asking
 * otherwise (it crashed, or its slots are busy with other queues) holds the
 * others at their share no longer than this.
 */
const WAIT_LAPSES = `interval '3 seconds'`;
const RENEW_WITHIN = `interval '1500 milliseconds'`;

/** The queue row's waiting entries, in PL/pgSQL's own loop: no query for what is nearly always empty. */
const READ_WAITING = `v_waiting := 0;
      v_until := NULL;
      FOR i IN 1 .. coalesce(array_length(v_q.waiting_workers, 1), 0) LOOP
        IF v_q.waiting_workers[i] = p_worker THEN
          v_until := v_q.waiting_until[i];
        ELSIF v_q.waiting_until[i] > p_now THEN
          v_waiting := v_waiting + 1;
        END IF;
      END LOOP;`;

/**
 * After the queue's lock: the free slots, and the most this claim may take
 * of them (v_bound), into v_room.
 *
 * Reads: p_ahead, p_now, p_queue, p_share, p_worker, v_active, v_bound,
 * v_free, v_mine, v_q, v_room, v_waiting. Writes: v_active, v_bound, v_free,
 * v_held_ahead, v_mine, v_room, v_until, v_waiting.
 */
export const LIMIT_SHARE = `IF v_q.concurrency IS NOT NULL THEN
      ${READ_WAITING}
      IF (p_share AND v_waiting > 0) OR p_ahead > 0 THEN
        -- This worker's counted jobs, and (claimAhead) those it holds claimed ahead, in the same scan.
        SELECT (count(*) FILTER (WHERE NOT a.reserved))::int,
               (count(*) FILTER (WHERE NOT a.reserved AND a.worker_id = p_worker))::int,
               (count(*) FILTER (WHERE a.reserved AND a.worker_id = p_worker))::int
          INTO v_active, v_mine, v_held_ahead
          FROM :SCHEMA.job a WHERE ${heldInQueue('a', 'p_queue')};
      ELSE
        SELECT count(*)::int INTO v_active FROM :SCHEMA.job a WHERE ${activeInQueue('a', 'p_queue')};
      END IF;
      v_free := greatest(0, v_q.concurrency - v_active);
      v_bound := v_free;
      IF p_share AND v_waiting > 0 THEN
        v_bound := greatest(0, least(v_free, ceil(v_q.concurrency::float8 / (v_waiting + 1))::int - v_mine));
      END IF;
      v_room := least(v_room, v_bound);
    END IF;`;

/** The variables of claim_controlled LIMIT_SHARE reads and writes. */
export const LIMIT_SHARE_VARS = {
  reads: [
    'p_ahead',
    'p_now',
    'p_queue',
    'p_share',
    'p_worker',
    'v_active',
    'v_bound',
    'v_free',
    'v_mine',
    'v_q',
    'v_room',
    'v_waiting',
  ],
  writes: ['v_active', 'v_bound', 'v_free', 'v_held_ahead', 'v_mine', 'v_room', 'v_until', 'v_waiting'],
} as const;

/**
 * The waiting entries of the queue row `jq` but `worker`'s and those lapsed
 * by `now`, and the rows `extra` adds (a UNION ALL branch of worker and
 * until), as the two arrays a SET of (waiting_workers, waiting_until) takes.
 * The claim renews or clears its worker's entry with it; a stopping worker
 * drops its own (leaveWaits).
 *
 * Reads: none of its own (only what its arguments name). Writes: none.
 */
export function waitingWithout(worker: string, now: string, extra = ''): string {
  return `(SELECT coalesce(array_agg(w.worker), '{}'), coalesce(array_agg(w.until), '{}') FROM (
                 SELECT w.worker, w.until FROM unnest(jq.waiting_workers, jq.waiting_until) AS w(worker, until)
                  WHERE w.worker <> ${worker} AND w.until > ${now}
                 ${extra}) w)`;
}

/** The variables of claim_controlled waitingWithout reads and writes of its own, its arguments aside. */
export const WAITING_WITHOUT_VARS = { reads: [], writes: [] } as const;

/**
 * After the claim: this worker waits when the limit (or its share) stopped
 * it short of what it asked for. The row is written only when that changes
 * or the entry is half spent, so a steady drain does not rewrite it on every
 * claim; lapsed entries go whenever it is. Slots left free for the waiting
 * wake them.
 *
 * Reads: p_channel, p_limit, p_now, p_queue, p_share, p_worker, v_bound,
 * v_claimed, v_free, v_until, v_waiting, v_wants. Writes: v_wants.
 */
export const RECORD_WAIT = `IF v_bound IS NOT NULL THEN
    v_wants := v_claimed < p_limit AND v_claimed >= v_bound;
    IF (v_wants AND (v_until IS NULL OR v_until < p_now + ${RENEW_WITHIN})) OR (NOT v_wants AND v_until IS NOT NULL) THEN
      UPDATE :SCHEMA.job_queue jq
         SET (waiting_workers, waiting_until) = ${waitingWithout(
           'p_worker',
           'p_now',
           `UNION ALL SELECT p_worker, p_now + ${WAIT_LAPSES} WHERE v_wants`,
         )}
       WHERE jq.name = p_queue;
    END IF;
    IF p_share AND v_waiting > 0 AND v_bound < v_free AND v_claimed >= v_bound THEN
      PERFORM ${notifySql('queue', 'p_channel', 'p_queue')};
    END IF;
  END IF;`;

/** The variables of claim_controlled RECORD_WAIT reads and writes. */
export const RECORD_WAIT_VARS = {
  reads: [
    'p_channel',
    'p_limit',
    'p_now',
    'p_queue',
    'p_share',
    'p_worker',
    'v_bound',
    'v_claimed',
    'v_free',
    'v_until',
    'v_waiting',
    'v_wants',
  ],
  writes: ['v_wants'],
} as const;
