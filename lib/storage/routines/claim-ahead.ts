/**
 * Claiming ahead for a queue limited as a whole, as PL/pgSQL text spliced
 * into `claim_controlled`'s plain limited branch. A slot's turn otherwise
 * waits for the outcome write that frees it: one round trip and one commit
 * between a job's end and the next start, which with 10 ms jobs kept a
 * quarter of a limit of 10 idle (bench/RESULTS.md). LIMIT_SHARE
 * (limit-shares.ts) counts the worker's jobs, counted and claimed ahead,
 * before the claim: COUNT_OWN_AHEAD then claimAhead run after it, in the
 * branch of a queue limited as a whole. Between them they read p_queue,
 * p_worker, p_ahead, p_share, v_q, v_room, v_active, v_mine, v_waiting,
 * v_claimed, v_held_ahead and v_ahead, and write v_mine and v_ahead (the
 * routine's body counts their rows into v_claimed, v_room and
 * v_held_ahead). Each fragment says its own in its comment and in its
 * `_VARS` export, which test/unit/claim-fragments.spec.ts checks against its
 * SQL.
 */

import { claimOrder, heldInQueue } from './sql-fragments.js';

/**
 * Where a claim finds room in the limit, this worker's own jobs claimed ahead
 * come first: counted from now on, returned as their id with `reserved`
 * null, for the worker to start (a job claimed ahead whose turn never came,
 * because the jobs it was to follow failed, would otherwise wait for the
 * worker's shutdown). Rows another write of the worker has locked (a success
 * moving its successor into the count) are skipped, not waited for.
 *
 * One statement (the routine reads its ROW_COUNT), returning rows (RETURN
 * QUERY). Reads: p_queue, p_worker, v_room. Writes: none.
 */
export const COUNT_OWN_AHEAD = `RETURN QUERY
        WITH u AS (
          UPDATE :SCHEMA.job j SET reserved = false
           WHERE j.id = ANY(ARRAY(
             SELECT r.id FROM :SCHEMA.job r
              WHERE ${heldInQueue('r', 'p_queue')} AND r.worker_id = p_worker AND r.reserved
              ORDER BY ${claimOrder('r')} LIMIT v_room
              FOR UPDATE SKIP LOCKED))
          RETURNING j.id
        )
        SELECT u.id, NULL::text, NULL::text, NULL::jsonb, NULL::int, NULL::int, NULL::int, NULL::uuid, NULL::jsonb,
               NULL::timestamptz, NULL::timestamptz, NULL::float8, NULL::boolean, NULL::jsonb
          FROM u;`;

/** The variables of claim_controlled COUNT_OWN_AHEAD reads and writes. */
export const COUNT_OWN_AHEAD_VARS = { reads: ['p_queue', 'p_worker', 'v_room'], writes: [] } as const;

/**
 * Jobs claimed ahead for a worker of a queue limited as a whole (p_ahead):
 * when one of its running jobs of the queue succeeds, it starts one of these
 * in its place at once, and the success's write moves the job into the count
 * (OutcomeStorage's successor). So a slot's turn no longer waits for the
 * outcome's round trip and commit. The limit does not count them; the worker
 * may hold no more of them than it runs counted jobs of the queue, so what
 * runs never exceeds what is counted. None while the queue is past its limit
 * (it was lowered), nor for a worker past its share while others wait for
 * slots: their slots pass on as their jobs end. Not for a rate-limited queue,
 * whose window counts starts. `claim` claims v_ahead of them.
 *
 * Reads: p_ahead, p_share, v_active, v_ahead, v_claimed, v_held_ahead,
 * v_mine, v_q, v_waiting. Writes: v_ahead, v_mine. `claim` (limitedClaim)
 * adds its own.
 */
export const claimAhead = (claim: string) => `IF p_ahead > 0 AND v_q.concurrency IS NOT NULL AND v_q.rate_max IS NULL
         AND v_active + v_claimed <= v_q.concurrency THEN
        -- Counted before this claim, plus what it counted (its own jobs ahead among them).
        v_mine := v_mine + v_claimed;
        IF p_share AND v_waiting > 0 AND v_mine > ceil(v_q.concurrency::float8 / (v_waiting + 1)) THEN
          v_mine := 0;
        END IF;
        v_ahead := least(p_ahead, v_mine - v_held_ahead);
        IF v_ahead > 0 THEN
          ${claim}
        END IF;
      END IF;`;

/** The variables of claim_controlled claimAhead reads and writes of its own, its `claim` aside. */
export const CLAIM_AHEAD_VARS = {
  reads: ['p_ahead', 'p_share', 'v_active', 'v_ahead', 'v_claimed', 'v_held_ahead', 'v_mine', 'v_q', 'v_waiting'],
  writes: ['v_ahead', 'v_mine'],
} as const;
