import { quoteIdent } from './sql-identifiers.js';

/** SQL of batches, dependencies and their queries for one schema. */
export function workflowStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    // A whole graph in one statement: batch rows, jobs and edges commit together.
    insertGraph: `WITH b AS (
      INSERT INTO ${s}.job_batch (id, name, state, total, pending, succeeded, options, created_at, completed_at)
      SELECT id, name, state, total, pending, succeeded, options, $4, CASE WHEN state <> 'executing' THEN $4::timestamptz END
        FROM jsonb_to_recordset($1::jsonb)
          AS t(id uuid, name text, state text, total int, pending int, succeeded int, options jsonb)
      RETURNING id
    ), j AS (
      INSERT INTO ${s}.job (id, name, queue, payload, state, priority, run_at, max_attempts, timeout_ms, batch_id,
                            group_key, unique_key, remaining_dependencies, has_dependents, trace_context, created_at,
                            completed_at, last_error)
      SELECT id, name, queue, payload, state, priority, run_at, max_attempts, timeout_ms, batch_id, group_key,
             unique_key, coalesce(remaining_dependencies, 0), coalesce(has_dependents, false), trace_context, $4,
             CASE WHEN state = 'skipped' THEN $4::timestamptz END,
             CASE WHEN state = 'skipped' THEN '{"name":"DependencyNotMet","message":"Skipped: a parent did not end the way this job waited for"}'::jsonb END
        FROM jsonb_to_recordset($2::jsonb) AS t(id uuid, name text, queue text, payload jsonb, state text,
             priority int, run_at timestamptz, max_attempts int, timeout_ms int, batch_id uuid, group_key text,
             unique_key text, remaining_dependencies int, has_dependents boolean, trace_context jsonb)
      RETURNING queue, state, run_at
    ), d AS (
      INSERT INTO ${s}.job_dependency (child_id, parent_job_id, parent_batch_id, trigger, parent_outcome)
      SELECT child_id, parent_job_id, parent_batch_id, trigger, parent_outcome
        FROM jsonb_to_recordset($3::jsonb)
          AS t(child_id uuid, parent_job_id uuid, parent_batch_id uuid, trigger text, parent_outcome text)
    )
    SELECT pg_notify($5, 'q:' || queue) FROM (SELECT DISTINCT queue FROM j WHERE state = 'queued' AND run_at <= $4) n`,

    // Parents are locked so none settles between our look and our edge.
    lockParentJobs: `SELECT id, state FROM ${s}.job WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`,
    lockParentBatches: `SELECT id, state, failed FROM ${s}.job_batch WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`,
    markParents: `UPDATE ${s}.job SET has_dependents = true WHERE id = ANY($1::uuid[]) AND NOT has_dependents`,

    addToBatch: `WITH b AS (
      UPDATE ${s}.job_batch SET total = total + 1, pending = pending + 1
       WHERE id = $2 AND state = 'executing' RETURNING id
    ), j AS (
      INSERT INTO ${s}.job (id, name, queue, payload, state, priority, run_at, max_attempts, timeout_ms, batch_id, created_at)
      SELECT t.id, t.name, t.queue, t.payload, 'queued', t.priority, t.run_at, t.max_attempts, t.timeout_ms, b.id, $3
        FROM jsonb_to_recordset($1::jsonb) AS t(id uuid, name text, queue text, payload jsonb, priority int,
             run_at timestamptz, max_attempts int, timeout_ms int), b
      RETURNING id, queue
    )
    SELECT id, pg_notify($4, 'q:' || queue) FROM j`,

    batch: `SELECT b.*, (SELECT min(started_at) FROM ${s}.job WHERE batch_id = b.id) AS first_started_at
      FROM ${s}.job_batch b WHERE b.id = $1`,
    batchMembers: `SELECT id, name, queue, state, attempt, max_attempts, progress, created_at, started_at,
                          completed_at, last_error
      FROM ${s}.job WHERE batch_id = $1 AND ($2::text IS NULL OR state = $2)
     ORDER BY created_at, id OFFSET $3 LIMIT $4`,
    batchCallbacks: `SELECT d.child_id AS id, d.trigger, j.name, j.state FROM ${s}.job_dependency d
      JOIN ${s}.job j ON j.id = d.child_id WHERE d.parent_batch_id = $1 ORDER BY j.created_at, j.id`,
    memberEdges: `SELECT d.parent_job_id, d.child_id, d.trigger FROM ${s}.job_dependency d
      JOIN ${s}.job p ON p.id = d.parent_job_id WHERE p.batch_id = $1`,

    flagBatchCancelled: `UPDATE ${s}.job_batch SET options = options || '{"cancelRequested": true}'::jsonb
      WHERE id = $1 AND state = 'executing' RETURNING id`,
    cancelBatchMembers: `WITH u AS (
      UPDATE ${s}.job SET state = 'cancelled', completed_at = $2, cancel_requested = true
       WHERE batch_id = $1 AND state IN ('queued', 'waiting') RETURNING id, batch_id, has_dependents
    ), w AS (
      SELECT array_agg(id) AS ids FROM u
    )
    SELECT ${s}.settle_jobs(w.ids, array_fill('cancelled'::text, ARRAY[array_length(w.ids, 1)]), $2, $3)
      FROM w WHERE w.ids IS NOT NULL`,
    requestCancelActiveMembers: `WITH u AS (
      UPDATE ${s}.job SET cancel_requested = true WHERE batch_id = $1 AND state = 'active' RETURNING id
    )
    SELECT id, pg_notify($2, 'c:' || id) FROM u`,
    deleteBatch: `DELETE FROM ${s}.job_batch WHERE id = $1 AND state <> 'executing' RETURNING id`,
    batchState: `SELECT state FROM ${s}.job_batch WHERE id = $1`,
  };
}

export type WorkflowStatements = ReturnType<typeof workflowStatements>;
