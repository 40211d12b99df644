import { statement } from '../sql/named-params.js';
import { NOT_STARTED_STATES, type NewJob } from '../../model/index.js';
import { quoteIdent, sqlLiterals } from '../sql/sql-identifiers.js';
import { NEW_JOB_COLUMN_NAMES } from '../jobs/job-encoding.js';
import { NEW_JOB_PARAMS, unnestNewJobParams, type NewJobParams } from '../jobs/new-job-params.js';
import { notifySql } from '../sql/notification-topics.js';
import { ROUTINE_NAMES } from '../routines/routine-catalog.js';
import { BATCH_STOPPED_JSON, batchStopping, DEPENDENCY_NOT_MET_JSON } from '../routines/sql-fragments.js';

/** One job added to a running batch (addToBatch): the batch, the time, whether it is due now, the job. */
export interface AddToBatchParams {
  batchId: string;
  now: Date;
  channel: string;
  due: boolean;
  id: string;
  name: string;
  queue: string;
  payload: string;
  priority: number;
  runAt: Date;
  maxAttempts: number;
  timeoutMs: number | null;
  groupKey: string | null;
  serialKey: string | null;
  deadline: Date | null;
  uniqueKey: string | null;
  uniqueWhile: string | null;
  uniqueWindow: number | null;
  context: string | null;
  hasDependents: boolean;
}

/** addToBatch's arguments for `job`. */
export function addToBatchArgs(
  batchId: string,
  job: NewJob,
  now: Date,
  channel: string,
  hasDependents: boolean,
): AddToBatchParams {
  return {
    batchId,
    now,
    channel,
    due: job.runAt <= now,
    id: job.id,
    name: job.name,
    queue: job.queue,
    payload: job.payloadJson,
    priority: job.priority,
    runAt: job.runAt,
    maxAttempts: job.maxAttempts,
    timeoutMs: job.timeoutMs ?? null,
    groupKey: job.groupKey ?? null,
    serialKey: job.serialKey ?? null,
    deadline: job.deadline ?? null,
    uniqueKey: job.uniqueKey ?? null,
    uniqueWhile: job.uniqueWhile ?? null,
    uniqueWindow: job.uniqueWindow ?? null,
    context: job.contextJson ?? null,
    hasDependents,
  };
}

/** SQL of batches, dependencies and their queries for one schema. */
export function workflowStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    // A whole graph in one statement: batch rows, jobs and edges commit
    // together. Batches and edges are few and go as JSON; jobs go as one
    // array per column (NEW_JOB_COLUMNS, then has_dependents and has_parents),
    // like a bulk enqueue. `due`: the queues that got work due now.
    insertGraph: statement<
      NewJobParams & {
        batches: string;
        due: readonly string[];
        edges: string;
        now: Date;
        channel: string;
        has_dependents: string;
        has_parents: string;
      }
    >()(
      ['batches', 'due', 'edges', 'now', 'channel', ...NEW_JOB_PARAMS, 'has_dependents', 'has_parents'],
      (p) => `WITH b AS (
      INSERT INTO ${s}.job_batch (id, name, state, total, pending, succeeded, options, created_at, completed_at)
      SELECT id, name, state, total, pending, succeeded, options, ${p.now}, CASE WHEN state <> 'executing' THEN ${p.now}::timestamptz END
        FROM jsonb_to_recordset(${p.batches}::jsonb)
          AS t(id uuid, name text, state text, total int, pending int, succeeded int, options jsonb)
    ), j AS (
      INSERT INTO ${s}.job (${NEW_JOB_COLUMN_NAMES}, has_dependents, has_parents, created_at, completed_at, last_error)
      SELECT t.*, ${p.now},
             CASE WHEN t.state IN ('skipped', 'cancelled') THEN ${p.now}::timestamptz END,
             CASE t.state WHEN 'skipped' THEN ${DEPENDENCY_NOT_MET_JSON} WHEN 'cancelled' THEN ${BATCH_STOPPED_JSON} END
        FROM ${unnestNewJobParams(p, [
          ['has_dependents', 'boolean'],
          ['has_parents', 'boolean'],
        ])}
    ), d AS (
      INSERT INTO ${s}.job_dependency (child_id, parent_job_id, parent_batch_id, trigger, parent_outcome)
      SELECT child_id, parent_job_id, parent_batch_id, trigger, parent_outcome
        FROM jsonb_to_recordset(${p.edges}::jsonb)
          AS t(child_id uuid, parent_job_id uuid, parent_batch_id uuid, trigger text, parent_outcome text)
    )
    SELECT ${notifySql('queue', p.channel, 'q')} FROM unnest(${p.due}::text[]) q`,
    ),

    // Parents are locked so none settles between our look and our edge.
    lockParentJobs: statement<{ ids: readonly string[] }>()(
      ['ids'],
      (p) => `SELECT id, state FROM ${s}.job WHERE id = ANY(${p.ids}::uuid[]) ORDER BY id FOR UPDATE`,
    ),
    lockParentBatches: statement<{ ids: readonly string[] }>()(
      ['ids'],
      (p) => `SELECT id, state, failed FROM ${s}.job_batch WHERE id = ANY(${p.ids}::uuid[]) ORDER BY id FOR UPDATE`,
    ),
    markParents: statement<{ ids: readonly string[] }>()(
      ['ids'],
      (p) => `UPDATE ${s}.job SET has_dependents = true WHERE id = ANY(${p.ids}::uuid[]) AND NOT has_dependents`,
    ),

    // Edges to jobs that exist already (their counts move apart: addDependencies).
    insertEdges: statement<{ edges: string }>()(
      ['edges'],
      (p) => `INSERT INTO ${s}.job_dependency (child_id, parent_job_id, parent_batch_id, trigger, parent_outcome)
      SELECT child_id, parent_job_id, parent_batch_id, trigger, parent_outcome
        FROM jsonb_to_recordset(${p.edges}::jsonb)
          AS t(child_id uuid, parent_job_id uuid, parent_batch_id uuid, trigger text, parent_outcome text)`,
    ),

    // Jobs written already settled (members of a graph skipped at its dispatch) settle their workflow rows.
    settle: statement<{ ids: readonly string[]; states: readonly string[]; now: Date; channel: string }>()(
      ['ids', 'states', 'now', 'channel'],
      (p) =>
        `SELECT ${s}.${ROUTINE_NAMES.settleJobs}(${p.ids}::uuid[], ${p.states}::text[], NULL, ${p.now}, ${p.channel})`,
    ),

    // A job ending with continuations, under its outcome's fence, locked before anything else of its
    // outcome (job, then batch, then dependents: the order every settle takes them in).
    lockFinishing: statement<{ jobId: string; workerId: string; attempt: number }>()(
      ['jobId', 'workerId', 'attempt'],
      (p) => `SELECT batch_id FROM ${s}.job
      WHERE id = ${p.jobId} AND worker_id = ${p.workerId} AND attempt = ${p.attempt} AND state = 'active' FOR UPDATE`,
    ),
    lockBatch: statement<{ batchId: string }>()(
      ['batchId'],
      (p) => `SELECT ${batchStopping('b')} AS stopping FROM ${s}.job_batch b
      WHERE b.id = ${p.batchId} AND b.state = 'executing' FOR UPDATE`,
    ),
    // New members: counted pending, or cancelled at once (`pending` of the `added`) when the batch was stopping.
    joinBatch: statement<{ batchId: string; added: number; pending: number }>()(
      ['batchId', 'added', 'pending'],
      (
        p,
      ) => `UPDATE ${s}.job_batch SET total = total + ${p.added}, pending = pending + ${p.pending}, cancelled = cancelled + (${p.added} - ${p.pending})
      WHERE id = ${p.batchId}`,
    ),
    // The jobs still waiting on job `jobId` through an edge it has not settled: a job added before them
    // (beforeDependents) becomes their parent too. Locked in id order, as release_children does.
    waitingDependents: statement<{ jobId: string }>()(
      ['jobId'],
      (p) => `SELECT c.id, d.trigger FROM ${s}.job_dependency d JOIN ${s}.job c ON c.id = d.child_id
      WHERE d.parent_job_id = ${p.jobId} AND d.parent_outcome IS NULL AND c.state = 'waiting'
      ORDER BY c.id FOR UPDATE OF c`,
    ),
    addDependencies: statement<{ ids: readonly unknown[]; counts: readonly number[] }>()(
      ['ids', 'counts'],
      (p) => `UPDATE ${s}.job j SET remaining_dependencies = j.remaining_dependencies + x.n
      FROM unnest(${p.ids}::uuid[], ${p.counts}::int[]) AS x(id, n) WHERE j.id = x.id`,
    ),

    // One job joins a running batch that is not stopping, or nothing happens;
    // `hasDependents`: it was added before its adder's dependents.
    addToBatch: statement<AddToBatchParams>()(
      [
        'batchId',
        'now',
        'channel',
        'due',
        'id',
        'name',
        'queue',
        'payload',
        'priority',
        'runAt',
        'maxAttempts',
        'timeoutMs',
        'groupKey',
        'serialKey',
        'deadline',
        'uniqueKey',
        'uniqueWhile',
        'uniqueWindow',
        'context',
        'hasDependents',
      ],
      (p) => `WITH b AS (
      UPDATE ${s}.job_batch b SET total = total + 1, pending = pending + 1
       WHERE b.id = ${p.batchId} AND b.state = 'executing' AND NOT ${batchStopping('b')} RETURNING b.id
    ), j AS (
      INSERT INTO ${s}.job (id, name, queue, payload, state, priority, run_at, max_attempts, timeout_ms, batch_id, created_at,
                            group_key, serial_key, deadline, unique_key, unique_while, unique_window, context, has_dependents)
      SELECT ${p.id}::uuid, ${p.name}::text, ${p.queue}::text, ${p.payload}::jsonb, 'queued', ${p.priority}::int, ${p.runAt}::timestamptz, ${p.maxAttempts}::int, ${p.timeoutMs}::int, b.id, ${p.now},
             ${p.groupKey}::text, ${p.serialKey}::text, ${p.deadline}::timestamptz, ${p.uniqueKey}::text, ${p.uniqueWhile}::text, ${p.uniqueWindow}::bigint, ${p.context}::jsonb, ${p.hasDependents}::boolean
        FROM b
      RETURNING id, queue
    )
    SELECT id, CASE WHEN ${p.due}::boolean THEN ${notifySql('queue', p.channel, 'queue')} END FROM j`,
    ),

    batch: statement<{ batchId: string }>()(
      ['batchId'],
      (p) => `SELECT b.*, (SELECT min(started_at) FROM ${s}.job WHERE batch_id = b.id) AS first_started_at
      FROM ${s}.job_batch b WHERE b.id = ${p.batchId}`,
    ),
    batchMembers: statement<{ batchId: string; state: string | null; skip: number; take: number }>()(
      ['batchId', 'state', 'skip', 'take'],
      (p) => `SELECT id, name, queue, state, priority, attempt, max_attempts, run_at, created_at, started_at,
                          completed_at, progress, worker_id, batch_id, last_error
      FROM ${s}.job WHERE batch_id = ${p.batchId} AND (${p.state}::text IS NULL OR state = ${p.state})
     ORDER BY created_at, id OFFSET ${p.skip} LIMIT ${p.take}`,
    ),
    batchCallbacks: statement<{ batchId: string }>()(
      ['batchId'],
      (p) => `SELECT d.child_id AS id, d.trigger, j.name, j.state FROM ${s}.job_dependency d
      JOIN ${s}.job j ON j.id = d.child_id WHERE d.parent_batch_id = ${p.batchId} ORDER BY j.created_at, j.id`,
    ),
    // Edges from a member, and edges into a member from a job outside the batch.
    memberEdges: statement<{ batchId: string }>()(
      ['batchId'],
      (p) => `SELECT d.parent_job_id, d.child_id, d.trigger FROM ${s}.job_dependency d
      JOIN ${s}.job p ON p.id = d.parent_job_id WHERE p.batch_id = ${p.batchId}
    UNION ALL
    SELECT d.parent_job_id, d.child_id, d.trigger FROM ${s}.job_dependency d
      JOIN ${s}.job c ON c.id = d.child_id JOIN ${s}.job p ON p.id = d.parent_job_id
     WHERE c.batch_id = ${p.batchId} AND p.batch_id IS DISTINCT FROM ${p.batchId}`,
    ),

    flagBatchCancelled: statement<{ batchId: string }>()(
      ['batchId'],
      (p) => `UPDATE ${s}.job_batch SET options = options || '{"cancelRequested": true}'::jsonb
      WHERE id = ${p.batchId} AND state = 'executing' RETURNING id`,
    ),
    cancelBatchMembers: statement<{ batchId: string; now: Date; channel: string }>()(
      ['batchId', 'now', 'channel'],
      (p) => `WITH u AS (
      UPDATE ${s}.job SET state = 'cancelled', completed_at = ${p.now}, cancel_requested = true
       WHERE batch_id = ${p.batchId} AND state IN (${sqlLiterals(NOT_STARTED_STATES)}) RETURNING id, batch_id, has_dependents
    ), w AS (
      SELECT array_agg(id) AS ids FROM u
    )
    SELECT ${s}.${ROUTINE_NAMES.settleJobs}(w.ids, array_fill('cancelled'::text, ARRAY[array_length(w.ids, 1)]), NULL, ${p.now}, ${p.channel})
      FROM w WHERE w.ids IS NOT NULL`,
    ),
    requestCancelActiveMembers: statement<{ batchId: string; channel: string }>()(
      ['batchId', 'channel'],
      (p) => `WITH u AS (
      UPDATE ${s}.job SET cancel_requested = true WHERE batch_id = ${p.batchId} AND state = 'active' RETURNING id
    )
    SELECT id, ${notifySql('cancel', p.channel, 'id')} FROM u`,
    ),
    deleteBatch: statement<{ batchId: string }>()(
      ['batchId'],
      (p) => `DELETE FROM ${s}.job_batch WHERE id = ${p.batchId} AND state <> 'executing' RETURNING id`,
    ),
    batchState: statement<{ batchId: string }>()(
      ['batchId'],
      (p) => `SELECT state FROM ${s}.job_batch WHERE id = ${p.batchId}`,
    ),
  };
}

export type WorkflowStatements = ReturnType<typeof workflowStatements>;
