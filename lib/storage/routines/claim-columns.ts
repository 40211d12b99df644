/**
 * What the parts of `claim_controlled` share, as SQL text over the
 * routine's parameters (p_queue, p_now, p_names, p_worker, p_lease_ms) and
 * its turn (v_turn): the due-job inputs, the claim write, the due job of a
 * group, the columns a claim returns, and the plain claim of a queue
 * limited as a whole. They read only those, and write no variable (the
 * claims among them write job rows and return them). Each fragment says its
 * own in its comment and in its `_VARS` export, which
 * test/unit/claim-fragments.spec.ts checks against its SQL.
 */

import { activeInQueue, claimOrder, plainClaim, type ClaimInputs, type ClaimWrite } from './sql-fragments.js';

/**
 * The due-job inputs of the routine's claims (duePlainJob's).
 *
 * Reads: p_names, p_now, p_queue. Writes: none.
 */
export const DUE: ClaimInputs = { queue: 'p_queue', now: 'p_now', names: 'p_names' };
/** The variables of claim_controlled DUE reads and writes. */
export const DUE_VARS = { reads: ['p_names', 'p_now', 'p_queue'], writes: [] } as const;
/**
 * Starts are stamped with the claim's turn (RATE_TURN); leases run from the caller's clock.
 *
 * Reads: p_lease_ms, p_now, p_worker, v_turn. Writes: none.
 */
export const WRITE: ClaimWrite = { worker: 'p_worker', startedAt: 'v_turn', now: 'p_now', leaseMs: 'p_lease_ms' };
/** The variables of claim_controlled WRITE reads and writes. */
export const WRITE_VARS = { reads: ['p_lease_ms', 'p_now', 'p_worker', 'v_turn'], writes: [] } as const;
/**
 * The queue's jobs a concurrency limit counts (alias `a`).
 *
 * Reads: p_queue. Writes: none.
 */
export const ACTIVE = activeInQueue('a', 'p_queue');
/** The variables of claim_controlled ACTIVE reads and writes. */
export const ACTIVE_VARS = { reads: ['p_queue'], writes: [] } as const;
/**
 * A job of group `group` (alias `j`) the claimer may take now.
 *
 * Reads: p_names, p_now, p_queue. Writes: none.
 */
export const dueInGroup = (
  group: string,
) => `j.state = 'queued' AND j.queue = p_queue AND j.group_key = ${group} AND j.run_at <= p_now
                 AND j.name = ANY(p_names) AND (j.deadline IS NULL OR j.deadline > p_now)`;
/** The variables of claim_controlled dueInGroup reads and writes of its own, its argument aside. */
export const DUE_IN_GROUP_VARS = { reads: ['p_names', 'p_now', 'p_queue'], writes: [] } as const;
/**
 * The columns a claim returns of its UPDATE's rows (alias `u`), before `reserved` and `context`.
 *
 * Reads: none. Writes: none.
 */
export const CLAIMED_COLUMNS = `u.id, u.name, u.queue, u.payload, u.attempt, u.max_attempts, u.timeout_ms, u.batch_id, u.trace_context,
             u.deadline, u.run_at, NULL::float8`;
/** The variables of claim_controlled CLAIMED_COLUMNS reads and writes. */
export const CLAIMED_COLUMNS_VARS = { reads: [], writes: [] } as const;
/**
 * The RETURNING list of a claim's UPDATE of row `j`.
 *
 * Reads: none. Writes: none.
 */
export const RETURNED = `j.id, j.name, j.queue, j.payload, j.attempt, j.max_attempts, j.timeout_ms, j.batch_id,
                  j.trace_context, j.deadline, j.run_at, j.context`;
/** The variables of claim_controlled RETURNED reads and writes. */
export const RETURNED_VARS = { reads: [], writes: [] } as const;
/**
 * The plain claim of the queue's next jobs, counted or (claimAhead) claimed ahead, in claim order:
 * one statement (the routine reads its ROW_COUNT), returning rows (RETURN QUERY).
 *
 * Reads: p_lease_ms, p_names, p_now, p_queue, p_worker, v_turn. Writes: none.
 */
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
/** The variables of claim_controlled limitedClaim reads and writes of its own, its arguments aside. */
export const LIMITED_CLAIM_VARS = {
  reads: ['p_lease_ms', 'p_names', 'p_now', 'p_queue', 'p_worker', 'v_turn'],
  writes: [],
} as const;
