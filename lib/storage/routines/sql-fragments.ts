/**
 * SQL that the statements sent from TypeScript and the database routines
 * both say. Each fragment takes the SQL of its inputs (a parameter such as
 * `$2`, a routine's variable such as `p_now`, a column), so the claim the
 * worker sends and the claim inside `claim_controlled` are one text: a fix
 * to either is a fix to both, and a routine's text (hence its installed
 * name) changes with it.
 *
 * None of them reads or writes a variable of `claim_controlled` of its own:
 * every variable one says is an argument its caller passes (the callers in
 * this folder say which, in their `_VARS` exports), and
 * test/unit/claim-fragments.spec.ts checks that no text here names one.
 */

import { BATCH_STOPPED, DEPENDENCY_NOT_MET, RATE_START_LAG_MS } from '../../model/index.js';

/** The last error of a job skipped because a parent did not end the way it waited for, as a jsonb literal. */
export const DEPENDENCY_NOT_MET_JSON = `'${JSON.stringify(DEPENDENCY_NOT_MET).replace(/'/g, "''")}'::jsonb`;

/** The last error of a job written cancelled into a stopping batch (BATCH_STOPPED), as a jsonb literal. */
export const BATCH_STOPPED_JSON = `'${JSON.stringify(BATCH_STOPPED).replace(/'/g, "''")}'::jsonb`;

/**
 * Whether batch `b` stops its unstarted members: a cancel was asked for, or
 * a member failed and the batch does not allow failures (settle_jobs then
 * cancelled the members it had).
 */
export function batchStopping(b: string): string {
  return `(coalesce((${b}.options ->> 'cancelRequested')::boolean, false)
           OR (${b}.failed > 0 AND NOT coalesce((${b}.options ->> 'allowFailures')::boolean, false)))`;
}

/** Claim order: what the claim index serves and every claim takes jobs in. */
export function claimOrder(alias: string): string {
  return `${alias}.priority DESC, ${alias}.run_at, ${alias}.id`;
}

/** The inputs of a claim that the due-job predicate and the claim write read. */
export interface ClaimInputs {
  /** The queue's name. */
  queue: string;
  /** The claimer's clock: what is due, and the lease. */
  now: string;
  /** The job names the claimer has handlers for (a text[]). */
  names: string;
}

/**
 * A plain job the claimer may take now (alias `a`): queued in the queue, of
 * no group and no serial key, due, of a name it handles, its deadline not
 * passed. The plain claim's partial index serves it.
 */
export function duePlainJob(a: string, c: ClaimInputs): string {
  return `${a}.state = 'queued' AND ${a}.queue = ${c.queue} AND coalesce(${a}.group_key, ${a}.serial_key) IS NULL
            AND ${a}.run_at <= ${c.now} AND ${a}.name = ANY(${c.names}) AND (${a}.deadline IS NULL OR ${a}.deadline > ${c.now})`;
}

/** What the claim write needs beyond the due-job inputs. */
export interface ClaimWrite {
  /** The worker's id. */
  worker: string;
  /** The start time the claim stamps (the controlled claim's turn, else `now`). */
  startedAt: string;
  /** The claimer's clock, a timestamptz: the lease runs from it. */
  now: string;
  /** The lease in ms, a float8. */
  leaseMs: string;
}

/**
 * The SET list of every claim of job row `a`: active, one more attempt, leased to the worker.
 * `reserved`: claimed ahead, uncounted by the queue's limit (see claim_controlled's p_ahead);
 * every claim sets it, so a flag left on a row that went back to the queue never counts.
 */
export function claimSet(a: string, w: ClaimWrite, reserved = 'false'): string {
  return `state = 'active', attempt = ${a}.attempt + 1, worker_id = ${w.worker}, started_at = ${w.startedAt},
             lease_expires_at = ${w.now} + make_interval(secs => ${w.leaseMs} / 1000), cancel_requested = false,
             reserved = ${reserved}`;
}

/** The plain claim: the table, the inputs, how many jobs at most, and what it returns. */
interface PlainClaim extends ClaimInputs, ClaimWrite {
  /** The job table, schema-qualified. */
  table: string;
  /** The most jobs to claim (an int expression). */
  limit: string;
  /** The RETURNING list, of row `j`. */
  returning: string;
  /** Claimed ahead (claimSet's `reserved`); plain claims are not. */
  reserved?: string;
}

/**
 * The plain claim: an UPDATE of row `j` that reaches the rows its own
 * subquery locked by ctid (a TID scan, ~10% cheaper per job than a
 * primary-key lookup, measured). That is safe: the FOR UPDATE lock is held
 * until commit, so no one can write a newer version of these rows in
 * between. ANY(ARRAY(...)) keeps the planner from joining the subquery
 * against a scan of the whole table.
 */
export function plainClaim(p: PlainClaim): string {
  return `UPDATE ${p.table} j
         SET ${claimSet('j', p, p.reserved)}
       WHERE j.ctid = ANY(ARRAY(
         SELECT c.ctid FROM ${p.table} c
          WHERE ${duePlainJob('c', p)}
          ORDER BY ${claimOrder('c')}
          LIMIT ${p.limit}
          FOR UPDATE SKIP LOCKED))
      RETURNING ${p.returning}`;
}

/**
 * The jobs of `queue` workers hold (alias `a`), those claimed ahead included.
 * The lease test lets the lease index serve it.
 */
export function heldInQueue(a: string, queue: string): string {
  return `${a}.lease_expires_at IS NOT NULL AND ${a}.state = 'active' AND ${a}.queue = ${queue}`;
}

/** The jobs of `queue` workers hold (alias `a`), but those claimed ahead: what a concurrency limit counts. */
export function activeInQueue(a: string, queue: string): string {
  return `${heldInQueue(a, queue)} AND NOT ${a}.reserved`;
}

/**
 * The fence of every write of a running job (row `a`): one of `ids`, held by
 * `worker`, still active, at the attempt the writer ran. A worker that lost
 * its lease matches nothing, so it cannot overwrite the one that took over.
 */
export function outcomeFence(a: string, ids: string, worker: string, attempt: string): string {
  return `${a}.id = ANY(${ids}::uuid[]) AND ${a}.worker_id = ${worker} AND ${a}.state = 'active'
         AND ${a}.attempt = ${attempt}`;
}

/**
 * How long a start counts in the rate window of row `row` (its rate_per_ms):
 * its `per`, plus the lag within which a claimed job's handler starts (or the
 * job is handed back), so the limit holds at the handlers' starts.
 */
export function rateWindow(row: string): string {
  return rateWindowOf(`${row}.rate_per_ms`);
}

/** The same window for a `per` of `perMs` (SQL) ms: a group's, whose `per` is its queue's group_rate_per_ms. */
export function rateWindowOf(perMs: string): string {
  return `make_interval(secs => (${perMs} + ${RATE_START_LAG_MS}) / 1000.0)`;
}

/**
 * A rate log entry (alias `x`, columns at and n) still inside the window of
 * row `row` at `turn`.
 */
export function inRateWindow(x: string, row: string, turn: string): string {
  return `${x}.at > ${turn} - ${rateWindow(row)}`;
}

/**
 * The new rate log of row `row` (its rate_log_at and rate_log_n arrays): the
 * entries still inside the window at `turn` (row's own, or `window`), then
 * `count` starts at `turn`. Returns the two SET values, in the log's time order.
 */
export function rateLogWrite(
  row: string,
  turn: string,
  count: string,
  window: string = rateWindow(row),
): { at: string; n: string } {
  const kept = (column: 'at' | 'n') =>
    `(SELECT coalesce(array_agg(w.${column} ORDER BY w.at), '{}') FROM unnest(${row}.rate_log_at, ${row}.rate_log_n) AS w(at, n)
                 WHERE w.at > ${turn} - ${window})`;
  return { at: `${kept('at')} || ${turn}`, n: `${kept('n')} || ${count}` };
}
