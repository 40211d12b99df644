import { LIVE_JOB_STATES } from '../../model/index.js';
import { sqlLiterals } from '../sql/sql-identifiers.js';
import { ROUTINE_NAMES } from '../routines/routine-catalog.js';

/**
 * SQL shared by the job statements of more than one concern (claim,
 * outcomes, maintenance, control), each a function of the quoted schema.
 */

/**
 * A CTE pair named "w" and "settled" that settles the workflow rows of `source` (columns id,
 * batch_id, has_dependents). It hands settle_jobs the batches itself: a forgotten success's row is
 * gone by the time the routine runs.
 */
export function settleCte(s: string, source: string, state: string, now: string, channel: string): string {
  return `w AS (
      SELECT array_agg(id) AS ids, array_agg(${state}::text) AS states, array_agg(batch_id) AS batches FROM ${source} src
       WHERE batch_id IS NOT NULL OR has_dependents
    ), settled AS (
      SELECT ${s}.${ROUTINE_NAMES.settleJobs}(w.ids, w.states, w.batches, ${now}, ${channel}) FROM w WHERE w.ids IS NOT NULL
    )`;
}

/**
 * The parents of a claimed job (`alias`): the jobs it waited on or continued from, and the batch
 * whose callback it is, for ctx.parentIds and ctx.batchId. The controlled claim's rows do not say
 * whether a job has parents, so each costs a probe of the child index (~2 us a job, measured on
 * the plain claim before has_parents); the plain claim reads it only for jobs with has_parents.
 */
export function lineageJoin(s: string, alias: string): string {
  return `LEFT JOIN LATERAL (
      SELECT array_agg(d.parent_job_id ORDER BY d.parent_job_id) FILTER (WHERE d.parent_job_id IS NOT NULL) AS parent_ids,
             (array_agg(d.parent_batch_id) FILTER (WHERE d.parent_batch_id IS NOT NULL))[1] AS parent_batch_id
        FROM ${s}.job_dependency d WHERE d.child_id = ${alias}.id
    ) p ON true`;
}

/**
 * A claimed row's due time, `column` (a timestamptz), as ms since the epoch (ClaimedRow.runAt): a
 * float8 the driver reads with parseFloat, where a timestamptz costs the server its text formatting
 * and the worker a regular expression per row (see bench/RESULTS.md, 2026-12-07, evening).
 */
export function dueMs(column: string): string {
  return `date_part('epoch', ${column}) * 1000`;
}

/** The columns lineageJoin adds, named as ClaimedJob's fields. */
export const LINEAGE_COLUMNS = `p.parent_ids AS "parentIds", p.parent_batch_id AS "parentBatchId"`;

/** lineageJoin for a row that carries has_parents: a job without parents costs one test of a flag. */
export function lineageIfParents(s: string, alias: string): string {
  return `CASE WHEN ${alias}.has_parents THEN (
        SELECT array_agg(d.parent_job_id ORDER BY d.parent_job_id) FROM ${s}.job_dependency d
         WHERE d.child_id = ${alias}.id AND d.parent_job_id IS NOT NULL) END AS "parentIds",
      CASE WHEN ${alias}.has_parents THEN (
        SELECT d.parent_batch_id FROM ${s}.job_dependency d
         WHERE d.child_id = ${alias}.id AND d.parent_batch_id IS NOT NULL LIMIT 1) END AS "parentBatchId"`;
}

/** No live job waits on `alias` as its parent: what retention and purge keep a parent for. */
export function noLiveChildren(s: string, alias: string): string {
  return `NOT (${alias}.has_dependents AND EXISTS (
      SELECT 1 FROM ${s}.job_dependency d JOIN ${s}.job c ON c.id = d.child_id
       WHERE d.parent_job_id = ${alias}.id AND c.state IN (${sqlLiterals(LIVE_JOB_STATES)})))`;
}

/** An onFailure hook that has not ended yet needs its job's row. */
export function noPendingHook(alias: string): string {
  return `(${alias}.failure_hook IS NULL OR ${alias}.failure_hook IN ('done', 'failed'))`;
}
