/**
 * What the parts of `claim_controlled` share, as SQL text over the
 * routine's parameters (p_queue, p_now, p_names, p_worker, p_lease_ms) and
 * its turn (v_turn): the due-job inputs, the claim write, the due job of a
 * group, the columns a claim returns, and the plain claim of a queue
 * limited as a whole.
 */

import { activeInQueue, claimOrder, plainClaim, type ClaimInputs, type ClaimWrite } from './sql-fragments.js';

export const DUE: ClaimInputs = { queue: 'p_queue', now: 'p_now', names: 'p_names' };
/** Starts are stamped with the claim's turn (RATE_TURN); leases run from the caller's clock. */
export const WRITE: ClaimWrite = { worker: 'p_worker', startedAt: 'v_turn', now: 'p_now', leaseMs: 'p_lease_ms' };
export const ACTIVE = activeInQueue('a', 'p_queue');
/** A job of group `group` (alias `j`) the claimer may take now. */
export const dueInGroup = (
  group: string,
) => `j.state = 'queued' AND j.queue = p_queue AND j.group_key = ${group} AND j.run_at <= p_now
                 AND j.name = ANY(p_names) AND (j.deadline IS NULL OR j.deadline > p_now)`;
export const CLAIMED_COLUMNS = `u.id, u.name, u.queue, u.payload, u.attempt, u.max_attempts, u.timeout_ms, u.batch_id, u.trace_context,
             u.deadline, u.run_at, NULL::float8`;
export const RETURNED = `j.id, j.name, j.queue, j.payload, j.attempt, j.max_attempts, j.timeout_ms, j.batch_id,
                  j.trace_context, j.deadline, j.run_at, j.context`;
/** The plain claim of the queue's next jobs, counted or (claimAhead) claimed ahead, in claim order. */
export const limitedClaim = (limit: string, reserved: 'false' | 'true') => `RETURN QUERY
      WITH u AS (
        ${plainClaim({
          ...DUE,
          ...WRITE,
          table: ':SCHEMA.job',
          limit,
          reserved,
          returning: `${RETURNED}, j.priority`,
        })}
      )
      SELECT ${CLAIMED_COLUMNS}, ${reserved}, u.context
        FROM u ORDER BY ${claimOrder('u')};`;
