import { NOT_STARTED_STATES } from '../../model/index.js';
import { quoteIdent, sqlLiterals } from '../sql/sql-identifiers.js';
import { NEW_JOB_COLUMN_NAMES, unnestNewJobs } from '../jobs/job-encoding.js';
import { notifySql } from '../sql/notification-topics.js';
import { ROUTINE_NAMES } from '../routines/routine-catalog.js';
import { BATCH_STOPPED_JSON, batchStopping, DEPENDENCY_NOT_MET_JSON } from '../routines/sql-fragments.js';

/** SQL of batches, dependencies and their queries for one schema. */
export function workflowStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    // A whole graph in one statement: batch rows, jobs and edges commit
    // together. Batches and edges are few and go as JSON; jobs go as one
    // array per column ($6..$24: NEW_JOB_COLUMNS, then $25 has_dependents, $26 has_parents),
    // like a bulk enqueue. $2: the queues that got work due now.
    insertGraph: `WITH b AS (
      INSERT INTO ${s}.job_batch (id, name, state, total, pending, succeeded, options, created_at, completed_at)
      SELECT id, name, state, total, pending, succeeded, options, $4, CASE WHEN state <> 'executing' THEN $4::timestamptz END
        FROM jsonb_to_recordset($1::jsonb)
          AS t(id uuid, name text, state text, total int, pending int, succeeded int, options jsonb)
    ), j AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, has_dependents, has_parents, created_at, completed_at, last_error)
      SELECT t.*, $4,
             CASE WHEN t.state IN ('skipped', 'cancelled') THEN $4::timestamptz END,
             CASE t.state WHEN 'skipped' THEN ${DEPENDENCY_NOT_MET_JSON} WHEN 'cancelled' THEN ${BATCH_STOPPED_JSON} END
        FROM ${unnestNewJobs(6, [
          ['has_dependents', 'boolean'],
          ['has_parents', 'boolean'],
        ])}
    ), d AS (
      INSERT INTO ${s}.job_dependency (child_id, parent_job_id, parent_batch_id, trigger, parent_outcome)
      SELECT child_id, parent_job_id, parent_batch_id, trigger, parent_outcome
        FROM jsonb_to_recordset($3::jsonb)
          AS t(child_id uuid, parent_job_id uuid, parent_batch_id uuid, trigger text, parent_outcome text)
    )
    SELECT ${notifySql('queue', '$5', 'q')} FROM unnest($2::text[]) q`,

    // Parents are locked so none settles between our look and our edge.
    lockParentJobs: `SELECT id, state FROM ${s}.job WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`,
    lockParentBatches: `SELECT id, state, failed FROM ${s}.job_batch WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`,
    markParents: `UPDATE ${s}.job SET has_dependents = true WHERE id = ANY($1::uuid[]) AND NOT has_dependents`,

    // Edges to jobs that exist already (their counts move apart: addDependencies).
    insertEdges: `INSERT INTO ${s}.job_dependency (child_id, parent_job_id, parent_batch_id, trigger, parent_outcome)
      SELECT child_id, parent_job_id, parent_batch_id, trigger, parent_outcome
        FROM jsonb_to_recordset($1::jsonb)
          AS t(child_id uuid, parent_job_id uuid, parent_batch_id uuid, trigger text, parent_outcome text)`,

    // Jobs written already settled (members of a graph skipped at its dispatch) settle their workflow rows.
    settle: `SELECT ${s}.${ROUTINE_NAMES.settleJobs}($1::uuid[], $2::text[], $3, $4)`,

    // A job ending with continuations, under its outcome's fence, locked before anything else of its
    // outcome (job, then batch, then dependents: the order every settle takes them in).
    lockFinishing: `SELECT batch_id FROM ${s}.job
      WHERE id = $1 AND worker_id = $2 AND attempt = $3 AND state = 'active' FOR UPDATE`,
    lockBatch: `SELECT ${batchStopping('b')} AS stopping FROM ${s}.job_batch b
      WHERE b.id = $1 AND b.state = 'executing' FOR UPDATE`,
    // New members: counted pending, or cancelled at once ($3 of the $2) when the batch was stopping.
    joinBatch: `UPDATE ${s}.job_batch SET total = total + $2, pending = pending + $3, cancelled = cancelled + ($2 - $3)
      WHERE id = $1`,
    // The jobs still waiting on job $1 through an edge it has not settled: a job added before them
    // (beforeDependents) becomes their parent too. Locked in id order, as release_children does.
    waitingDependents: `SELECT c.id, d.trigger FROM ${s}.job_dependency d JOIN ${s}.job c ON c.id = d.child_id
      WHERE d.parent_job_id = $1 AND d.parent_outcome IS NULL AND c.state = 'waiting'
      ORDER BY c.id FOR UPDATE OF c`,
    addDependencies: `UPDATE ${s}.job j SET remaining_dependencies = j.remaining_dependencies + x.n
      FROM unnest($1::uuid[], $2::int[]) AS x(id, n) WHERE j.id = x.id`,

    // One job ($5..$19) joins a running batch ($1) that is not stopping, or nothing happens;
    // $20: it has dependents (it was added before its adder's).
    addToBatch: `WITH b AS (
      UPDATE ${s}.job_batch b SET total = total + 1, pending = pending + 1
       WHERE b.id = $1 AND b.state = 'executing' AND NOT ${batchStopping('b')} RETURNING b.id
    ), j AS (
      INSERT INTO ${s}.job (id, name, queue, payload, state, priority, run_at, max_attempts, timeout_ms, batch_id, created_at,
                            group_key, serial_key, deadline, unique_key, unique_while, unique_window, context, has_dependents)
      SELECT $5::uuid, $6::text, $7::text, $8::jsonb, 'queued', $9::int, $10::timestamptz, $11::int, $12::int, b.id, $2,
             $13::text, $14::text, $15::timestamptz, $16::text, $17::text, $18::bigint, $19::jsonb, $20::boolean
        FROM b
      RETURNING id, queue
    )
    SELECT id, CASE WHEN $4::boolean THEN ${notifySql('queue', '$3', 'queue')} END FROM j`,

    batch: `SELECT b.*, (SELECT min(started_at) FROM ${s}.job WHERE batch_id = b.id) AS first_started_at
      FROM ${s}.job_batch b WHERE b.id = $1`,
    batchMembers: `SELECT id, name, queue, state, priority, attempt, max_attempts, run_at, created_at, started_at,
                          completed_at, progress, worker_id, batch_id, last_error
      FROM ${s}.job WHERE batch_id = $1 AND ($2::text IS NULL OR state = $2)
     ORDER BY created_at, id OFFSET $3 LIMIT $4`,
    batchCallbacks: `SELECT d.child_id AS id, d.trigger, j.name, j.state FROM ${s}.job_dependency d
      JOIN ${s}.job j ON j.id = d.child_id WHERE d.parent_batch_id = $1 ORDER BY j.created_at, j.id`,
    // Edges from a member, and edges into a member from a job outside the batch.
    memberEdges: `SELECT d.parent_job_id, d.child_id, d.trigger FROM ${s}.job_dependency d
      JOIN ${s}.job p ON p.id = d.parent_job_id WHERE p.batch_id = $1
    UNION ALL
    SELECT d.parent_job_id, d.child_id, d.trigger FROM ${s}.job_dependency d
      JOIN ${s}.job c ON c.id = d.child_id JOIN ${s}.job p ON p.id = d.parent_job_id
     WHERE c.batch_id = $1 AND p.batch_id IS DISTINCT FROM $1`,

    flagBatchCancelled: `UPDATE ${s}.job_batch SET options = options || '{"cancelRequested": true}'::jsonb
      WHERE id = $1 AND state = 'executing' RETURNING id`,
    cancelBatchMembers: `WITH u AS (
      UPDATE ${s}.job SET state = 'cancelled', completed_at = $2, cancel_requested = true
       WHERE batch_id = $1 AND state IN (${sqlLiterals(NOT_STARTED_STATES)}) RETURNING id, batch_id, has_dependents
    ), w AS (
      SELECT array_agg(id) AS ids FROM u
    )
    SELECT ${s}.${ROUTINE_NAMES.settleJobs}(w.ids, array_fill('cancelled'::text, ARRAY[array_length(w.ids, 1)]), $2, $3)
      FROM w WHERE w.ids IS NOT NULL`,
    requestCancelActiveMembers: `WITH u AS (
      UPDATE ${s}.job SET cancel_requested = true WHERE batch_id = $1 AND state = 'active' RETURNING id
    )
    SELECT id, ${notifySql('cancel', '$2', 'id')} FROM u`,
    deleteBatch: `DELETE FROM ${s}.job_batch WHERE id = $1 AND state <> 'executing' RETURNING id`,
    batchState: `SELECT state FROM ${s}.job_batch WHERE id = $1`,
  };
}

export type WorkflowStatements = ReturnType<typeof workflowStatements>;
