import { fixedStatement, statement } from '../sql/named-params.js';
import type { JobCipher, SerializedError } from '../../model/index.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { quoteIdent } from '../sql/sql-identifiers.js';
import type { ReencryptChunkResult } from './admin-storage.interface.js';

/**
 * The statements of a reencrypt round. Jobs whose payload is sealed, in id
 * order after a cursor, locked with SKIP LOCKED so a claim or an outcome
 * write in flight is never waited for (those rows are left for another run);
 * their history and steps are rewritten in the same short transaction.
 */
export function reencryptStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    jobs: statement<{ after: string; limit: number }>()(
      ['after', 'limit'],
      (p) => `SELECT id, payload, result, last_error, progress_message, context FROM ${s}.job
      WHERE id > ${p.after} AND jsonb_typeof(payload) = 'string' AND left(payload #>> '{}', 6) = '$enc1:'
      ORDER BY id LIMIT ${p.limit} FOR UPDATE SKIP LOCKED`,
    ),
    executions: statement<{ ids: readonly string[] }>()(
      ['ids'],
      (p) =>
        `SELECT id::text AS id, error FROM ${s}.job_execution WHERE job_id = ANY(${p.ids}::uuid[]) AND error IS NOT NULL`,
    ),
    // A step's sealed result, and a signal wait's, whose result holds the consumed payload.
    steps: statement<{ ids: readonly string[] }>()(
      ['ids'],
      (p) => `SELECT job_id, name, result FROM ${s}.job_step WHERE job_id = ANY(${p.ids}::uuid[])
         AND (jsonb_typeof(result) = 'string' OR (kind = 'signal' AND jsonb_typeof(result -> 'payload') = 'string'))`,
    ),
    signals: statement<{ ids: readonly string[] }>()(
      ['ids'],
      (p) =>
        `SELECT id::text AS id, payload FROM ${s}.job_signal WHERE job_id = ANY(${p.ids}::uuid[]) AND jsonb_typeof(payload) = 'string'`,
    ),
    events: statement<{ ids: readonly string[] }>()(
      ['ids'],
      (p) =>
        `SELECT job_id, key, value FROM ${s}.job_event_value WHERE job_id = ANY(${p.ids}::uuid[]) AND jsonb_typeof(value) = 'string'`,
    ),
    updateSignals: statement<{ ids: unknown[]; payloads: unknown[] }>()(
      ['ids', 'payloads'],
      (p) => `UPDATE ${s}.job_signal g SET payload = v.payload
        FROM unnest(${p.ids}::bigint[], ${p.payloads}::jsonb[]) AS v(id, payload) WHERE g.id = v.id`,
    ),
    updateEvents: statement<{ jobIds: unknown[]; keys: unknown[]; values: unknown[] }>()(
      ['jobIds', 'keys', 'values'],
      (p) => `UPDATE ${s}.job_event_value t SET value = v.value
        FROM unnest(${p.jobIds}::uuid[], ${p.keys}::text[], ${p.values}::jsonb[]) AS v(job_id, key, value)
       WHERE t.job_id = v.job_id AND t.key = v.key`,
    ),
    updateJobs: statement<{
      ids: unknown[];
      payloads: unknown[];
      results: unknown[];
      errors: unknown[];
      progress: unknown[];
      contexts: unknown[];
    }>()(
      ['ids', 'payloads', 'results', 'errors', 'progress', 'contexts'],
      (p) => `UPDATE ${s}.job j
         SET payload = COALESCE(v.payload, j.payload), result = COALESCE(v.result, j.result),
             last_error = COALESCE(v.last_error, j.last_error), progress_message = COALESCE(v.progress, j.progress_message),
             context = COALESCE(v.context, j.context)
        FROM unnest(${p.ids}::uuid[], ${p.payloads}::jsonb[], ${p.results}::jsonb[], ${p.errors}::jsonb[], ${p.progress}::text[], ${p.contexts}::jsonb[])
          AS v(id, payload, result, last_error, progress, context)
       WHERE j.id = v.id`,
    ),
    updateExecutions: statement<{ ids: unknown[]; errors: unknown[] }>()(
      ['ids', 'errors'],
      (p) => `UPDATE ${s}.job_execution e SET error = v.error
        FROM unnest(${p.ids}::bigint[], ${p.errors}::jsonb[]) AS v(id, error) WHERE e.id = v.id`,
    ),
    schedules: fixedStatement(`SELECT name, payload FROM ${s}.recurring_schedule
      WHERE jsonb_typeof(payload) = 'string' AND left(payload #>> '{}', 6) = '$enc1:' FOR UPDATE SKIP LOCKED`),
    updateSchedules: statement<{ names: unknown[]; payloads: unknown[] }>()(
      ['names', 'payloads'],
      (p) => `UPDATE ${s}.recurring_schedule r SET payload = v.payload
        FROM unnest(${p.names}::text[], ${p.payloads}::jsonb[]) AS v(name, payload) WHERE r.name = v.name`,
    ),
    updateSteps: statement<{ jobIds: unknown[]; names: unknown[]; results: unknown[] }>()(
      ['jobIds', 'names', 'results'],
      (p) => `UPDATE ${s}.job_step t SET result = v.result
        FROM unnest(${p.jobIds}::uuid[], ${p.names}::text[], ${p.results}::jsonb[]) AS v(job_id, name, result)
       WHERE t.job_id = v.job_id AND t.name = v.name`,
    ),
  };
}

type Statements = ReturnType<typeof reencryptStatements>;

/** Re-seals what one round of jobs holds under older keys with the current one, in `tx`. */
export async function reencryptChunk(
  tx: SqlExecutor,
  sql: Statements,
  cipher: JobCipher,
  after: string,
  limit: number,
): Promise<ReencryptChunkResult> {
  const jobs = await sql.jobs.run(tx, { after, limit });
  const result: ReencryptChunkResult = { jobs: jobs.length, values: 0, unreadable: 0, last: null };
  if (jobs.length === 0) return result;
  result.last = jobs[jobs.length - 1]!.id as string;
  // A value sealed with a key this process lacks (or one that does not authenticate) stays as it is.
  const reseal = (value: unknown, json: boolean): string | null => {
    try {
      const sealed = cipher.reseal(value, json);
      if (sealed !== null) result.values++;
      return sealed;
    } catch {
      result.unreadable++;
      return null;
    }
  };
  const ids = jobs.map((j) => j.id as string);
  const [executions, steps, signals, events] = await Promise.all([
    sql.executions.run(tx, { ids }),
    sql.steps.run(tx, { ids }),
    sql.signals.run(tx, { ids }),
    sql.events.run(tx, { ids }),
  ]);

  const jobUpdates: Array<[string, string | null, string | null, string | null, string | null, string | null]> = [];
  for (const j of jobs) {
    const error = resealError(j.last_error as SerializedError | null, reseal);
    const row = [
      j.id as string,
      reseal(j.payload, true),
      reseal(j.result, true),
      error,
      typeof j.progress_message === 'string' ? reseal(j.progress_message, false) : null,
      reseal(j.context, true),
    ] as const;
    if (row.slice(1).some((v) => v !== null)) jobUpdates.push([...row]);
  }
  const executionUpdates = executions
    .map((e) => [e.id as string, resealError(e.error as SerializedError, reseal)] as const)
    .filter(([, error]) => error !== null);
  const stepUpdates = steps
    .map((t) => [t.job_id as string, t.name as string, resealStep(t.result, reseal)] as const)
    .filter(([, , value]) => value !== null);
  const signalUpdates = signals
    .map((g) => [g.id as string, reseal(g.payload, true)] as const)
    .filter(([, value]) => value !== null);
  const eventUpdates = events
    .map((e) => [e.job_id as string, e.key as string, reseal(e.value, true)] as const)
    .filter(([, , value]) => value !== null);

  if (jobUpdates.length) {
    const at = (i: number) => column(jobUpdates, i);
    await sql.updateJobs.run(tx, {
      ids: at(0),
      payloads: at(1),
      results: at(2),
      errors: at(3),
      progress: at(4),
      contexts: at(5),
    });
  }
  if (executionUpdates.length) {
    await sql.updateExecutions.run(tx, { ids: column(executionUpdates, 0), errors: column(executionUpdates, 1) });
  }
  if (stepUpdates.length) {
    const at = (i: number) => column(stepUpdates, i);
    await sql.updateSteps.run(tx, { jobIds: at(0), names: at(1), results: at(2) });
  }
  if (signalUpdates.length) {
    await sql.updateSignals.run(tx, { ids: column(signalUpdates, 0), payloads: column(signalUpdates, 1) });
  }
  if (eventUpdates.length) {
    const at = (i: number) => column(eventUpdates, i);
    await sql.updateEvents.run(tx, { jobIds: at(0), keys: at(1), values: at(2) });
  }
  return result;
}

/** A step's result re-sealed, as the JSON to store: a sealed result, or a signal wait's sealed payload. */
function resealStep(result: unknown, reseal: (value: unknown, json: boolean) => string | null): string | null {
  if (typeof result === 'string') return reseal(result, true);
  const { payload } = result as { payload: unknown };
  const sealed = reseal(payload, true);
  return sealed === null ? null : JSON.stringify({ ...(result as object), payload: JSON.parse(sealed) as unknown });
}

/** Re-seals the payloads of schedules of encrypted jobs (few rows: one round). */
export async function reencryptSchedules(
  tx: SqlExecutor,
  sql: Statements,
  cipher: JobCipher,
): Promise<Omit<ReencryptChunkResult, 'jobs' | 'last'>> {
  const rows = await sql.schedules.run(tx, {});
  const result = { values: 0, unreadable: 0 };
  const updates: Array<[string, string]> = [];
  for (const r of rows) {
    try {
      const sealed = cipher.reseal(r.payload, true);
      if (sealed !== null) updates.push([r.name as string, sealed]);
    } catch {
      result.unreadable++;
    }
  }
  if (updates.length) {
    await sql.updateSchedules.run(tx, { names: column(updates, 0), payloads: column(updates, 1) });
  }
  result.values = updates.length;
  return result;
}

/** An error with its message or stack under an older key, as the JSON of the re-sealed error; null when none is. */
function resealError(
  error: SerializedError | null,
  reseal: (value: unknown, json: boolean) => string | null,
): string | null {
  if (error === null || typeof error !== 'object') return null;
  const message = reseal(error.message, false);
  const stack = reseal(error.stack, false);
  if (message === null && stack === null) return null;
  return JSON.stringify({ ...error, message: message ?? error.message, ...(stack !== null ? { stack } : {}) });
}

/** Column `i` of rows, as one array for unnest(). */
function column(rows: ReadonlyArray<readonly unknown[]>, i: number): unknown[] {
  return rows.map((r) => r[i]);
}
