import { statement } from '../sql/named-params.js';
import { quoteIdent } from '../sql/sql-identifiers.js';

/**
 * The SQL of durable steps for one schema. A step is recorded by the
 * attempt that owns the job only: the insert reads the job row under the
 * fence (id, attempt, worker, active) FOR SHARE, so a rescue or a
 * hand-back of that row, which updates it, waits until the step's
 * transaction has ended, and a record made after the row moved on inserts
 * nothing. Two records of one attempt share the row lock without waiting
 * on each other.
 */
/** One step record: the fenced attempt's row, and the step. */
export interface StepRecordParams {
  jobId: string;
  attempt: number;
  workerId: string;
  name: string;
  kind: string;
  result: string | null;
  completedAt: Date;
  wakeAt: Date | null;
}

const RECORD = ['jobId', 'attempt', 'workerId', 'name', 'kind', 'result', 'completedAt', 'wakeAt'] as const;

export function stepStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    record: statement<StepRecordParams>()(
      RECORD,
      (p) => `INSERT INTO ${s}.job_step (job_id, name, kind, attempt, result, completed_at, wake_at)
      SELECT j.id, ${p.name}, ${p.kind}, j.attempt, ${p.result}::jsonb, ${p.completedAt}, ${p.wakeAt}
        FROM ${s}.job j
       WHERE j.id = ${p.jobId} AND j.attempt = ${p.attempt} AND j.worker_id = ${p.workerId} AND j.state = 'active'
         FOR SHARE OF j
      RETURNING job_id`,
    ),

    // A step recorded in ctx.transaction(), which writes the job's success (fenced) before it
    // commits: the two commit together or not at all, so the record takes no lock of its own. A
    // share lock held until that commit would stall the attempt's progress writes, which it awaits.
    recordWithSuccess: statement<StepRecordParams>()(
      RECORD,
      (p) => `INSERT INTO ${s}.job_step (job_id, name, kind, attempt, result, completed_at, wake_at)
      SELECT j.id, ${p.name}, ${p.kind}, j.attempt, ${p.result}::jsonb, ${p.completedAt}, ${p.wakeAt}
        FROM ${s}.job j
       WHERE j.id = ${p.jobId} AND j.attempt = ${p.attempt} AND j.worker_id = ${p.workerId} AND j.state = 'active'
      RETURNING job_id`,
    ),

    // What an attempt replays; read once, on its first step or sleep.
    load: statement<{ jobId: string }>()(
      ['jobId'],
      (p) => `SELECT name, kind, attempt, result, wake_at AS "wakeAt" FROM ${s}.job_step WHERE job_id = ${p.jobId}`,
    ),

    // The steps JobQueue.get() shows, results only when asked for.
    list: statement<{ jobId: string; withResults: boolean }>()(
      ['jobId', 'withResults'],
      (p) => `SELECT name, kind, attempt, completed_at AS "completedAt", wake_at AS "wakeAt",
                  CASE WHEN ${p.withResults}::boolean THEN result END AS result
             FROM ${s}.job_step WHERE job_id = ${p.jobId} ORDER BY seq`,
    ),
  };
}

export type StepStatements = ReturnType<typeof stepStatements>;
