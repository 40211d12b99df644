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
export function stepStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    // $1 job, $2 attempt, $3 worker, $4 name, $5 kind, $6 result, $7 completed at, $8 wake at.
    record: `INSERT INTO ${s}.job_step (job_id, name, kind, attempt, result, completed_at, wake_at)
      SELECT j.id, $4, $5, j.attempt, $6::jsonb, $7, $8
        FROM ${s}.job j
       WHERE j.id = $1 AND j.attempt = $2 AND j.worker_id = $3 AND j.state = 'active'
         FOR SHARE OF j
      RETURNING job_id`,

    // A step recorded in ctx.transaction(), which writes the job's success (fenced) before it
    // commits: the two commit together or not at all, so the record takes no lock of its own. A
    // share lock held until that commit would stall the attempt's progress writes, which it awaits.
    recordWithSuccess: `INSERT INTO ${s}.job_step (job_id, name, kind, attempt, result, completed_at, wake_at)
      SELECT j.id, $4, $5, j.attempt, $6::jsonb, $7, $8
        FROM ${s}.job j
       WHERE j.id = $1 AND j.attempt = $2 AND j.worker_id = $3 AND j.state = 'active'
      RETURNING job_id`,

    // What an attempt replays; read once, on its first step or sleep.
    load: `SELECT name, kind, attempt, result, wake_at AS "wakeAt" FROM ${s}.job_step WHERE job_id = $1`,

    // The steps JobQueue.get() shows, results only when asked for ($2).
    list: `SELECT name, kind, attempt, completed_at AS "completedAt", wake_at AS "wakeAt",
                  CASE WHEN $2::boolean THEN result END AS result
             FROM ${s}.job_step WHERE job_id = $1 ORDER BY seq`,
  };
}

export type StepStatements = ReturnType<typeof stepStatements>;
