import pg from 'pg';
import { CHAOS_SCHEMA as C, CHILD_NAME, JOBS_SCHEMA as J, PARENT_NAME } from './chaos-work.job.js';

export const TERMINAL_STATES = ['succeeded', 'failed', 'cancelled', 'skipped'];

/** One short-lived connection: the server may have restarted since the last query. */
export async function query<T>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  // A connection killed under us also emits 'error'; the rejected query already says so.
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A run starts from empty tables; the previous run's data stays until then, for a look after it. */
export async function resetSchemas(url: string): Promise<void> {
  await query(url, `DROP SCHEMA IF EXISTS ${J} CASCADE`);
  await query(url, `DROP SCHEMA IF EXISTS ${C} CASCADE`);
  await query(
    url,
    `CREATE SCHEMA ${C};
     CREATE TABLE ${C}.side_effect (
       id bigserial PRIMARY KEY,
       run_token uuid NOT NULL UNIQUE,
       job_id uuid NOT NULL,
       seq int NOT NULL,
       attempt int NOT NULL,
       pid int NOT NULL,
       started_at timestamptz NOT NULL,
       at timestamptz NOT NULL DEFAULT clock_timestamp()
     );
     CREATE INDEX side_effect_job_idx ON ${C}.side_effect (job_id);
     CREATE TABLE ${C}.success_log (
       id bigserial PRIMARY KEY,
       job_id uuid NOT NULL,
       attempt int NOT NULL,
       worker_id text,
       previous_state text NOT NULL,
       at timestamptz NOT NULL DEFAULT clock_timestamp()
     );
     CREATE INDEX success_log_job_idx ON ${C}.success_log (job_id);`,
  );
}

/**
 * Every write that makes a job row 'succeeded' leaves a row in success_log,
 * in the writing transaction itself: the job row keeps only its last state,
 * so two successes of one job (or a success later undone) would leave no
 * other trace. Installed once the library has created its tables.
 */
export async function installSuccessLog(url: string): Promise<void> {
  await query(
    url,
    `CREATE FUNCTION ${C}.log_success() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       INSERT INTO ${C}.success_log (job_id, attempt, worker_id, previous_state)
       VALUES (NEW.id, NEW.attempt, NEW.worker_id, OLD.state);
       RETURN NULL;
     END $$;
     CREATE TRIGGER chaos_success_log AFTER UPDATE ON ${J}.job
       FOR EACH ROW WHEN (NEW.state = 'succeeded') EXECUTE FUNCTION ${C}.log_success();`,
  );
}

export interface Progress {
  /** Every job row, children of --invoke included. */
  total: number;
  done: number;
  active: number;
  succeeded: number;
  /** The jobs the run enqueued itself (not invoked by another job): what --jobs counts. */
  topLevel: number;
  topLevelDone: number;
}

export async function progress(url: string): Promise<Progress> {
  const [row] = await query<Progress>(
    url,
    `SELECT count(*)::int AS total,
            count(*) FILTER (WHERE state = ANY($1))::int AS done,
            count(*) FILTER (WHERE state = 'active')::int AS active,
            count(*) FILTER (WHERE state = 'succeeded')::int AS succeeded,
            count(*) FILTER (WHERE invoked_by IS NULL)::int AS "topLevel",
            count(*) FILTER (WHERE invoked_by IS NULL AND state = ANY($1))::int AS "topLevelDone"
       FROM ${J}.job`,
    [TERMINAL_STATES],
  );
  return row!;
}

/** Jobs whose seq lies in [from, to): tells whether an enqueue that reported an error committed. */
export async function countSeqRange(url: string, from: number, to: number): Promise<number> {
  const [row] = await query<{ n: number }>(
    url,
    `SELECT count(*)::int AS n FROM ${J}.job WHERE (payload->>'seq')::int >= $1 AND (payload->>'seq')::int < $2`,
    [from, to],
  );
  return row!.n;
}

/** pg_terminate_backend on every client backend of the database but our own; returns how many. */
export async function terminateBackends(url: string): Promise<number> {
  const [row] = await query<{ n: number }>(
    url,
    `SELECT count(*) FILTER (WHERE t.ok)::int AS n FROM (
       SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
     ) t`,
  );
  return row!.n;
}

/** What the checks need about one job, read back from the database. */
export interface JobFacts {
  id: string;
  seq: number | null;
  /** Its handler wrote the side effect in ctx.transaction(). */
  transactional: boolean;
  state: string;
  attempt: number;
  maxAttempts: number;
  errorName: string | null;
  /** Side-effect rows of any run of the job. */
  sideEffects: number;
  /** Side-effect rows of the attempt the job row ended on. */
  ownSideEffects: number;
  interrupted: number;
  failedExecutions: number;
  succeededExecutions: number;
  /** Writes that made the job row 'succeeded' (success_log). */
  successRecords: number;
  /** The job's name (absent: a ChaosWork job). */
  name?: string;
  /** The parent's id for a child of ctx.invoke(), else null. */
  invokedBy?: string | null;
  /** The job's stored result (null for none). */
  result?: unknown;
  /** A parent's: the child id its step `invoke:chaos-child#1` recorded, or null without that step. */
  invokeStepChild?: string | null;
  /** A parent's: interrupted executions that ended after its invoke step was recorded (the next attempt replayed it). */
  interruptedAfterStep?: number;
  /** A parent's: 'snoozed' executions (its parks while the child ran). */
  parks?: number;
}

export async function jobFacts(url: string): Promise<JobFacts[]> {
  return query<JobFacts>(
    url,
    `SELECT j.id, (j.payload->>'seq')::int AS seq, coalesce((j.payload->>'tx')::boolean, false) AS transactional, j.state, j.attempt, j.max_attempts AS "maxAttempts",
            j.last_error->>'name' AS "errorName",
            coalesce(se.n, 0)::int AS "sideEffects", coalesce(se.own, 0)::int AS "ownSideEffects",
            coalesce(ex.interrupted, 0)::int AS interrupted, coalesce(ex.failed, 0)::int AS "failedExecutions",
            coalesce(ex.succeeded, 0)::int AS "succeededExecutions", coalesce(sl.n, 0)::int AS "successRecords",
            j.name, j.invoked_by AS "invokedBy", j.result,
            st.result #>> '{}' AS "invokeStepChild",
            coalesce(ex.snoozed, 0)::int AS parks,
            (SELECT count(*) FROM ${J}.job_execution e
              WHERE e.job_id = j.id AND e.state = 'interrupted' AND e.ended_at > st.completed_at)::int AS "interruptedAfterStep"
       FROM ${J}.job j
       LEFT JOIN ${J}.job_step st ON st.job_id = j.id AND st.name = 'invoke:${CHILD_NAME}#1'
       LEFT JOIN LATERAL (
         SELECT count(*) AS n, count(*) FILTER (WHERE s.attempt = j.attempt) AS own
           FROM ${C}.side_effect s WHERE s.job_id = j.id
       ) se ON true
       LEFT JOIN (
         SELECT job_id, count(*) FILTER (WHERE state = 'interrupted') AS interrupted,
                count(*) FILTER (WHERE state = 'failed') AS failed,
                count(*) FILTER (WHERE state = 'succeeded') AS succeeded,
                count(*) FILTER (WHERE state = 'snoozed') AS snoozed
           FROM ${J}.job_execution GROUP BY job_id
       ) ex ON ex.job_id = j.id
       LEFT JOIN (SELECT job_id, count(*) AS n FROM ${C}.success_log GROUP BY job_id) sl ON sl.job_id = j.id
      ORDER BY j.id`,
  );
}

/** Figures for the report, none of them a pass/fail criterion. */
export interface RunFigures {
  sideEffects: number;
  /** Jobs that write a side effect: all but the parents of --invoke. */
  workJobs: number;
  /** Children of --invoke (job rows with invoked_by). */
  children: number;
  /** Side effects of job ids that are not in the job table. */
  orphanSideEffects: number;
  executions: Array<{ state: string; error: string | null; n: number }>;
  maxAttemptUsed: number;
  /** Rescue (lease expired) to the job's next claim, in ms, one per rescue that was followed by a claim. */
  rescueDelays: number[];
  /** Shutdown hand-back to the job's next claim, in ms. */
  handBackDelays: number[];
}

export async function runFigures(url: string): Promise<RunFigures> {
  const [counts] = await query<{
    sideEffects: number;
    orphans: number;
    maxAttempt: number;
    workJobs: number;
    children: number;
  }>(
    url,
    `SELECT (SELECT count(*) FROM ${C}.side_effect)::int AS "sideEffects",
            (SELECT count(*) FROM ${J}.job WHERE name <> '${PARENT_NAME}')::int AS "workJobs",
            (SELECT count(*) FROM ${J}.job WHERE invoked_by IS NOT NULL)::int AS children,
            (SELECT count(*) FROM ${C}.side_effect s WHERE NOT EXISTS (SELECT 1 FROM ${J}.job j WHERE j.id = s.job_id))::int
              AS orphans,
            (SELECT coalesce(max(attempt), 0) FROM ${J}.job)::int AS "maxAttempt"`,
  );
  const executions = await query<{ state: string; error: string | null; n: number }>(
    url,
    `SELECT state, error->>'name' AS error, count(*)::int AS n FROM ${J}.job_execution GROUP BY 1, 2 ORDER BY 3 DESC`,
  );
  // The next claim after an interruption is the start of the job's next recorded execution (a hand-back
  // keeps the attempt number, so "next" is by id within the job), or the job row's own start.
  const delays = await query<{ error: string | null; ms: number }>(
    url,
    `SELECT e.error->>'name' AS error,
            extract(epoch FROM coalesce(
              (SELECT min(n.started_at) FROM ${J}.job_execution n WHERE n.job_id = e.job_id AND n.id > e.id),
              CASE WHEN j.started_at >= e.ended_at THEN j.started_at END) - e.ended_at) * 1000 AS ms
       FROM ${J}.job_execution e JOIN ${J}.job j ON j.id = e.job_id
      WHERE e.state = 'interrupted'`,
  );
  const of = (name: string) =>
    delays.filter((d) => d.error === name && d.ms !== null).map((d) => Math.max(0, Number(d.ms)));
  return {
    sideEffects: counts!.sideEffects,
    workJobs: counts!.workJobs,
    children: counts!.children,
    orphanSideEffects: counts!.orphans,
    executions,
    maxAttemptUsed: counts!.maxAttempt,
    rescueDelays: of('LeaseLostError'),
    handBackDelays: of('WorkerShutdownError'),
  };
}

/** When the first success after `since` was written, or null. */
export async function firstSuccessAfter(url: string, since: Date): Promise<Date | null> {
  const [row] = await query<{ at: Date | null }>(url, `SELECT min(at) AS at FROM ${C}.success_log WHERE at > $1`, [
    since,
  ]);
  return row?.at ?? null;
}
