import { fixedStatement, statement } from '../../sql/named-params.js';
import { quoteIdent } from '../../sql/sql-identifiers.js';
import { dueMs, LINEAGE_COLUMNS, lineageIfParents, lineageJoin } from '../job-fragments.js';
import { ROUTINE_NAMES } from '../../routines/routine-catalog.js';
import { waitingWithout } from '../../routines/limit-shares.js';
import { plainClaim } from '../../routines/sql-fragments.js';

/** What both claims take: the plain claim all but the last three. */
export interface ClaimParams {
  queue: string;
  now: Date;
  names: readonly string[];
  limit: number;
  workerId: string;
  leaseMs: number;
}

/** What the controlled claim takes besides (see claim_controlled). */
export interface ControlledClaimParams extends ClaimParams {
  channel: string;
  share: boolean;
  ahead: number;
}

/**
 * The claim SQL for one schema, built once. Both claims run as prepared
 * statements on the worker's own connections (PostgresClaimStorage).
 */
export function claimStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    // The plain claim (see plainClaim for why it reaches its rows by ctid).
    claim: statement<ClaimParams>()(
      ['queue', 'now', 'names', 'limit', 'workerId', 'leaseMs'],
      (p) => `WITH u AS (
      ${plainClaim({
        table: `${s}.job`,
        queue: p.queue,
        now: `${p.now}::timestamptz`,
        names: `${p.names}::text[]`,
        limit: p.limit,
        worker: p.workerId,
        startedAt: p.now,
        leaseMs: `${p.leaseMs}::float8`,
        returning: `j.id, j.name, j.queue, j.payload, j.attempt, j.max_attempts, j.timeout_ms, j.batch_id, j.priority, j.run_at,
                j.trace_context, j.deadline, j.has_parents, j.context`,
      })}
    )
    SELECT id, name, queue, payload, attempt, max_attempts AS "maxAttempts", timeout_ms AS "timeoutMs",
           batch_id AS "batchId", trace_context AS "traceContext", deadline, ${dueMs('run_at')} AS "runAt", context,
           ${lineageIfParents(s, 'u')}
      FROM u ORDER BY priority DESC, run_at, id`,
    ),

    // A queue with limits, groups, serial keys or a pause: see the claim_controlled routine.
    // Rows with a null id carry only wait_ms: when a rate limit lets the next job start.
    claimControlled: statement<ControlledClaimParams>()(
      ['queue', 'now', 'names', 'limit', 'workerId', 'leaseMs', 'channel', 'share', 'ahead'],
      (p) => `SELECT c.id, c.name, c.queue, c.payload, c.attempt, c.max_attempts AS "maxAttempts",
           c.timeout_ms AS "timeoutMs", c.batch_id AS "batchId", c.trace_context AS "traceContext", c.deadline,
           ${dueMs('c.run_at')} AS "runAt", c.wait_ms AS "waitMs", c.reserved, c.context, ${LINEAGE_COLUMNS}
      FROM ${s}.${ROUTINE_NAMES.claimControlled}(${p.queue}, ${p.names}::text[], ${p.limit}, ${p.now}, ${p.workerId}, ${p.leaseMs}, ${p.channel}, ${p.share}, ${p.ahead}) c ${lineageJoin(s, 'c')}`,
    ),

    // A stopping worker's waits for limited queues' slots (see limit-shares): the others need not keep
    // to their shares for it until its entries lapse.
    leaveWaits: statement<{ workerId: string }>()(
      ['workerId'],
      (p) => `UPDATE ${s}.job_queue jq SET (waiting_workers, waiting_until) = ${waitingWithout(p.workerId, 'now()')}
       WHERE ${p.workerId} = ANY(jq.waiting_workers)`,
    ),

    // The due jobs of `names`, and how many of them another transaction holds locked right now (a
    // waitFor flag, a signal): a claim skips those, so the testing kit's drain, which ends when a
    // claim finds nothing, looks again.
    dueJobs: statement<{ names: readonly string[]; now: Date }>()(
      ['names', 'now'],
      (p) => `SELECT count(*)::int AS due,
             count(*) FILTER (WHERE id NOT IN (SELECT id FROM ${s}.job
                                                 WHERE state = 'queued' AND run_at <= ${p.now} AND name = ANY(${p.names}::text[])
                                                   FOR UPDATE SKIP LOCKED))::int AS locked
        FROM ${s}.job WHERE state = 'queued' AND run_at <= ${p.now} AND name = ANY(${p.names}::text[])`,
    ),

    // A loose index scan over the claim index: one probe per distinct queue.
    queuesWithWork: fixedStatement(`WITH RECURSIVE q AS (
      (SELECT queue FROM ${s}.job WHERE state = 'queued' ORDER BY queue LIMIT 1)
      UNION ALL
      SELECT (SELECT j.queue FROM ${s}.job j WHERE j.state = 'queued' AND j.queue > q.queue ORDER BY j.queue LIMIT 1)
        FROM q WHERE q.queue IS NOT NULL
    )
    SELECT queue FROM q WHERE queue IS NOT NULL`),
  };
}

export type ClaimStatements = ReturnType<typeof claimStatements>;
