import {
  boundError,
  type ClaimedJob,
  type FinishedAttempt,
  type JobCipher,
  type NewJob,
  sealErrorFor,
  sealValueFor,
} from '../../model/index.js';

/**
 * The columns a new job is written with, in the order of the insert
 * statements' parameters $1..$19 (see unnestNewJobs), each with its array
 * type for unnest().
 */
export const NEW_JOB_COLUMNS = [
  ['id', 'uuid'],
  ['name', 'text'],
  ['queue', 'text'],
  ['payload', 'jsonb'],
  ['state', 'text'],
  ['priority', 'int'],
  ['run_at', 'timestamptz'],
  ['max_attempts', 'int'],
  ['timeout_ms', 'int'],
  ['batch_id', 'uuid'],
  ['group_key', 'text'],
  ['unique_key', 'text'],
  ['remaining_dependencies', 'int'],
  ['trace_context', 'jsonb'],
  ['serial_key', 'text'],
  ['deadline', 'timestamptz'],
  ['unique_while', 'text'],
  ['unique_window', 'bigint'],
  ['context', 'jsonb'],
] as const;

/** `id, name, …` for an INSERT's column list. */
export const NEW_JOB_COLUMN_NAMES = NEW_JOB_COLUMNS.map(([c]) => c).join(', ');

/**
 * `unnest($1::uuid[], $2::text[], …) AS t(id, name, …)`, numbering from
 * `first`; `extra` columns follow the job's own, in the parameters after them.
 */
export function unnestNewJobs(first: number, extra: ReadonlyArray<readonly [string, string]> = []): string {
  const columns = [...NEW_JOB_COLUMNS, ...extra];
  const params = columns.map(([, type], i) => `$${first + i}::${type}[]`).join(', ');
  return `unnest(${params}) AS t(${columns.map(([c]) => c).join(', ')})`;
}

/**
 * Jobs as one PostgreSQL array literal per column, for the insert's
 * `unnest()`: each value is sent once and read by its type's own input
 * function, where a JSON record set repeats every key per row and goes
 * through the jsonb parser (measured on 20k jobs: 6.4 MB and ~0.7 s as JSON,
 * under half that as arrays). The literals are built here rather than by the
 * driver's generic array encoder, which took ~120 ms for the same 20k jobs.
 * The order is NEW_JOB_COLUMNS'.
 */
export function encodeNewJobColumns(jobs: readonly NewJob[]): string[] {
  const plain = (pick: (j: NewJob) => string | number | null | undefined) => arrayLiteral(jobs, pick, false);
  const quoted = (pick: (j: NewJob) => string | null | undefined) => arrayLiteral(jobs, pick, true);
  // Jobs of one call mostly share one run time: format each distinct Date once.
  let lastRunAt: Date | null = null;
  let lastIso = '';
  const iso = (d: Date) => (d === lastRunAt ? lastIso : ((lastRunAt = d), (lastIso = d.toISOString())));
  return [
    plain((j) => j.id),
    quoted((j) => j.name),
    quoted((j) => j.queue),
    quoted((j) => j.payloadJson),
    plain((j) => j.state),
    plain((j) => j.priority),
    plain((j) => iso(j.runAt)),
    plain((j) => j.maxAttempts),
    plain((j) => j.timeoutMs),
    plain((j) => j.batchId),
    quoted((j) => j.groupKey),
    quoted((j) => j.uniqueKey),
    plain((j) => j.remainingDependencies ?? 0),
    quoted((j) => (j.traceContext ? JSON.stringify(j.traceContext) : null)),
    quoted((j) => j.serialKey),
    plain((j) => (j.deadline ? j.deadline.toISOString() : null)),
    plain((j) => j.uniqueWhile),
    plain((j) => j.uniqueWindow),
    quoted((j) => j.contextJson),
  ];
}

/**
 * One job's columns as scalar parameters, in NEW_JOB_COLUMNS' order: the one-job unique insert
 * (insertUniqueOne) compares its key, while and window with the holder's in the same statement.
 */
export function encodeNewJobValues(j: NewJob): unknown[] {
  return [
    j.id,
    j.name,
    j.queue,
    j.payloadJson,
    j.state,
    j.priority,
    j.runAt,
    j.maxAttempts,
    j.timeoutMs ?? null,
    j.batchId ?? null,
    j.groupKey ?? null,
    j.uniqueKey ?? null,
    j.remainingDependencies ?? 0,
    j.traceContext ? JSON.stringify(j.traceContext) : null,
    j.serialKey ?? null,
    j.deadline ?? null,
    j.uniqueWhile ?? null,
    j.uniqueWindow ?? null,
    j.contextJson ?? null,
  ];
}

/**
 * Jobs that share every column but id and payload (one job type, one set of
 * options, one context: the usual bulk call), as two array literals and the shared values
 * in the order of NEW_JOB_COLUMNS, id and payload left out; null when they differ.
 * With `unique`, jobs that also each have their own unique key (held the
 * same way): the key's place holds a third array literal.
 */
export function encodeUniformJobs(jobs: readonly NewJob[], unique = false): unknown[] | null {
  const first = jobs[0]!;
  if (unique && (first.uniqueKey == null || first.uniqueReplace)) return null;
  const runAt = first.runAt.getTime();
  const deadline = first.deadline?.getTime() ?? null;
  for (const j of jobs) {
    if (
      j.name !== first.name ||
      j.queue !== first.queue ||
      j.state !== first.state ||
      j.priority !== first.priority ||
      j.runAt.getTime() !== runAt ||
      j.maxAttempts !== first.maxAttempts ||
      (j.timeoutMs ?? null) !== (first.timeoutMs ?? null) ||
      (j.batchId ?? null) !== (first.batchId ?? null) ||
      (j.groupKey ?? null) !== (first.groupKey ?? null) ||
      (unique
        ? j.uniqueKey == null ||
          j.uniqueReplace ||
          (j.uniqueWhile ?? null) !== (first.uniqueWhile ?? null) ||
          (j.uniqueWindow ?? null) !== (first.uniqueWindow ?? null)
        : j.uniqueKey != null) ||
      (j.remainingDependencies ?? 0) !== (first.remainingDependencies ?? 0) ||
      j.traceContext != null ||
      (j.serialKey ?? null) !== (first.serialKey ?? null) ||
      (j.deadline?.getTime() ?? null) !== deadline ||
      (j.contextJson ?? null) !== (first.contextJson ?? null)
    ) {
      return null;
    }
  }
  return [
    arrayLiteral(jobs, (j) => j.id, false),
    arrayLiteral(jobs, (j) => j.payloadJson, true),
    first.name,
    first.queue,
    first.state,
    first.priority,
    first.runAt,
    first.maxAttempts,
    first.timeoutMs ?? null,
    first.batchId ?? null,
    first.groupKey ?? null,
    unique ? arrayLiteral(jobs, (j) => j.uniqueKey!, true) : null,
    first.remainingDependencies ?? 0,
    null,
    first.serialKey ?? null,
    first.deadline ?? null,
    unique ? (first.uniqueWhile ?? null) : null,
    unique ? (first.uniqueWindow ?? null) : null,
    first.contextJson ?? null,
  ];
}

/** The queues that now hold jobs with a group or a serial key: only the controlled claim honours those. */
export function queueFeatures(jobs: readonly NewJob[]): { groups: string[]; serial: string[] } {
  const groups = new Set<string>();
  const serial = new Set<string>();
  for (const j of jobs) {
    if (j.groupKey) groups.add(j.queue);
    if (j.serialKey) serial.add(j.queue);
  }
  return { groups: [...groups], serial: [...serial] };
}

/** Queues that get work due now: their idle workers are woken; later jobs are found by their poll. */
export function dueQueues(jobs: readonly NewJob[], now: Date): string[] {
  const due = new Set<string>();
  for (const j of jobs) if (j.state === 'queued' && j.runAt <= now) due.add(j.queue);
  return [...due];
}

/** One boolean per job, as an array literal (`{t,f}`). */
export function encodeFlags<T>(rows: readonly T[], flag: (row: T) => boolean): string {
  return arrayLiteral(rows, (r) => (flag(r) ? 't' : 'f'), false);
}

/**
 * Job ids as a `uuid[]` parameter: one literal built here rather than the
 * driver's quoted and escaped element per id, on the outcome writes that
 * run once per completion batch (uuids need neither quotes nor escapes).
 */
export function uuidList(ids: readonly string[]): string {
  return arrayLiteral(ids, (id) => id, false);
}

/**
 * `{a,b,NULL}`. Quoted elements escape backslash and double quote, which is
 * all an array literal needs inside quotes; plain ones are values that never
 * hold a separator (uuids, numbers, ISO timestamps, state names).
 */
function arrayLiteral<T>(
  rows: readonly T[],
  pick: (row: T) => string | number | null | undefined,
  quote: boolean,
): string {
  let out = '{';
  for (let i = 0; i < rows.length; i++) {
    if (i) out += ',';
    const v = pick(rows[i]!);
    if (v === null || v === undefined) out += 'NULL';
    else if (!quote) out += v;
    else out += `"${String(v).replace(ESCAPED, '\\$&')}"`;
  }
  return out + '}';
}

const ESCAPED = /[\\"]/g;

/** Below every UUID: where a walk of the primary key by cursor starts. */
export const FIRST_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * The smallest UUIDv7 of a millisecond: every id made before `at` sorts
 * below it, so "created before/since" is a primary-key range.
 */
export function uuidv7Floor(at: Date): string {
  const hex = Math.max(0, at.getTime()).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}

/**
 * Outcomes as the success and failure writes take them: ids, and per-row
 * values as JSON objects keyed by job id (see outcomeStatements; the
 * successes' attempts already as JSON text); each
 * error's texts cut to `maxErrorBytes` (before sealing, so the bound is the
 * plaintext's), an encrypted job's result and error sealed. For successes
 * with a span, `traces` holds `trace/span/handler start in epoch ms` (null
 * when no success of the batch had one): the success write runs once per batch
 * on the hot path, and without tracing it writes nothing more than the state.
 * A failure carries its claim and start times and span ids as `run`.
 */
export function encodeOutcomes(attempts: readonly FinishedAttempt[], cipher: JobCipher, maxErrorBytes: number) {
  const succeededIds: string[] = [];
  // The attempts as JSON, `{"<id>":<attempt>,…}`, written as it goes: an object keyed by hundreds of
  // ids turns into a hash table before it is serialized, per batch (ids are uuids, safe as JSON keys).
  let succeededAttempts = '';
  const results: Record<string, unknown> = {};
  let traces: Record<string, string> | null = null;
  const failedIds: string[] = [];
  const failures: Record<string, object> = {};
  // Successes with a job claimed ahead started in their place, `{"<id>":"<successor id>",…}`.
  let successors: Record<string, string> | null = null;
  // Successes of job types that keep none (keep.succeeded: false).
  const forgottenIds: string[] = [];
  for (const { job, outcome, successor } of attempts) {
    if (outcome.kind === 'succeeded') {
      succeededAttempts += `${succeededIds.length ? ',' : ''}"${job.id}":${job.attempt}`;
      succeededIds.push(job.id);
      if (outcome.forget) forgottenIds.push(job.id);
      if (successor) (successors ??= {})[job.id] = successor;
      if (outcome.result !== undefined && outcome.result !== null) {
        results[job.id] = sealValueFor(cipher, job, outcome.result);
      }
      const { started } = job;
      if (started?.traceId) {
        (traces ??= {})[job.id] = `${started.traceId}/${started.spanId ?? ''}/${started.at.getTime()}`;
      }
    } else if (outcome.kind === 'snoozed') {
      // Back to the queue like a retry, with its own history row, and the attempt given back.
      failedIds.push(job.id);
      failures[job.id] = {
        attempt: job.attempt,
        state: 'queued',
        exec_state: 'snoozed',
        error: sealErrorFor(
          cipher,
          job,
          boundError(
            { name: 'SnoozeJob', message: outcome.reason ?? `snoozed until ${outcome.until.toISOString()}` },
            maxErrorBytes,
          ),
        ),
        run_at: outcome.until.toISOString(),
        hook: null,
        extra: true,
        run: encodeRun(job),
        // A signal wait's park: due at once if its signal came while the attempt was ending.
        ...(outcome.signal === undefined ? {} : { signal: outcome.signal }),
      };
    } else {
      failedIds.push(job.id);
      failures[job.id] = {
        attempt: job.attempt,
        state: outcome.kind === 'retry' ? 'queued' : outcome.kind,
        exec_state: outcome.kind === 'retry' ? 'failed' : outcome.kind,
        error: sealErrorFor(cipher, job, boundError(outcome.error, maxErrorBytes)),
        run_at: outcome.kind === 'retry' ? outcome.retryAt.toISOString() : null,
        // The worker runs the hook itself right after this write, holding it like a lease.
        hook: outcome.kind === 'failed' ? (outcome.hook ? 'running' : 'done') : null,
        run: encodeRun(job),
      };
    }
  }
  return {
    succeededIds,
    succeededAttempts: `{${succeededAttempts}}`,
    forgottenIds,
    results,
    traces,
    successors,
    failedIds,
    failures,
  };
}

/** An attempt's claim and start times and span ids, as the outcome writes read them (absent keys read as null). */
interface AttemptRunJson {
  claimed?: string;
  started?: string;
  trace?: string;
  span?: string;
}

/** What the worker noted of the attempt of `job`; undefined when it noted nothing (a job cancelled before it ran). */
function encodeRun(job: ClaimedJob): AttemptRunJson | undefined {
  const { claimedAt, started } = job;
  if (!claimedAt && !started) return undefined;
  const run: AttemptRunJson = {};
  if (claimedAt) run.claimed = claimedAt.toISOString();
  if (started) {
    run.started = started.at.toISOString();
    if (started.traceId) run.trace = started.traceId;
    if (started.spanId) run.span = started.spanId;
  }
  return run;
}
