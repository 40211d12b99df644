import {
  type ClaimedJob,
  type ExecutionCursor,
  type FailureHookInfo,
  formatExecutionCursor,
  JobCipher,
  type JobExecution,
  type JobExecutionPage,
  type JobInfo,
  type JobState,
  type JobStep,
  type JobSummary,
  LATEST_EXECUTIONS,
  openClaimed,
  type SerializedError,
} from '../../model/index.js';
import type { ClaimResult } from './claim/claim-storage.interface.js';

type Row = Record<string, unknown>;

/** Reads without encryption options: sealed values show as placeholders. */
const NO_KEYS = new JobCipher();

/** A `job` row as the public summary: the columns every read of a job shares (sealed ones opened where `cipher` can). */
export function jobSummaryFromRow(r: Row, cipher: JobCipher): JobSummary {
  return {
    id: r.id as string,
    name: r.name as string,
    queue: r.queue as string,
    state: r.state as JobState,
    priority: r.priority as number,
    attempt: r.attempt as number,
    maxAttempts: r.max_attempts as number,
    runAt: r.run_at as Date,
    createdAt: r.created_at as Date,
    startedAt: (r.started_at as Date | null) ?? null,
    completedAt: (r.completed_at as Date | null) ?? null,
    progress: (r.progress as number | null) ?? null,
    // The row keeps the error of the last failed attempt; once a later attempt succeeded it is that
    // attempt's story (in the execution history), not the job's. Hidden here rather than cleared on
    // success, so rows written before read the same and the success write stays as lean as it is.
    lastError: r.state === 'succeeded' ? null : cipher.revealError((r.last_error as SerializedError | null) ?? null),
    workerId: (r.worker_id as string | null) ?? null,
    batchId: (r.batch_id as string | null) ?? null,
  };
}

/**
 * A `job` row, its latest `job_execution` rows (newest first, at most one
 * more than LATEST_EXECUTIONS: the extra one tells that older ones exist)
 * and its steps as the detail `JobQueue.get()` returns.
 */
export function jobInfoFromRows(
  row: Row,
  latestRows: readonly Row[],
  stepRows: readonly JobStep[] = [],
  withResults = false,
  cipher: JobCipher = NO_KEYS,
): JobInfo {
  const shown = latestRows.slice(0, LATEST_EXECUTIONS);
  const executions = shown.map((e) => executionFromRow(e, cipher)).reverse();
  const current = currentExecution(row, executions);
  if (current) executions.push(current);
  const oldest = shown[shown.length - 1];
  return {
    ...jobSummaryFromRow(row, cipher),
    payload: cipher.revealValue(row.payload),
    context: (cipher.revealValue(row.context ?? null) ?? {}) as JobInfo['context'],
    progressMessage: cipher.revealText((row.progress_message as string | null) ?? null),
    result: cipher.revealValue(row.result ?? null),
    cancelRequested: row.cancel_requested as boolean,
    executions,
    moreExecutions: latestRows.length > shown.length && oldest ? formatExecutionCursor(rowCursor(oldest)) : null,
    steps: stepRows.map((r) => jobStepFromRow(r, withResults, cipher)),
    failureHook: failureHookFromRow(row, cipher),
    invokedBy: (row.invoked_by as string | null) ?? null,
  };
}

/**
 * The hook's columns as `JobInfo.failureHook`. A failed job without onFailure is written with its
 * hook done and never run: it has no hook to show.
 */
function failureHookFromRow(row: Row, cipher: JobCipher): FailureHookInfo | null {
  const state = (row.failure_hook as FailureHookInfo['state'] | null) ?? null;
  const attempts = (row.hook_attempt as number | undefined) ?? 0;
  if (state === null || (state === 'done' && attempts === 0)) return null;
  return {
    state,
    attempts,
    nextRunAt: state === 'pending' ? ((row.hook_run_at as Date | null) ?? null) : null,
    lastError: cipher.revealError((row.hook_error as SerializedError | null) ?? null),
  };
}

/**
 * A page of a job's history from its `job_execution` rows, newest first
 * (one more than `limit` when older ones exist). The first page (`fromNewest`)
 * starts with the attempt the job row tells of, as `get()` ends with it.
 */
export function executionPageFromRows(
  row: Row,
  rowsNewestFirst: readonly Row[],
  fromNewest: boolean,
  limit: number,
  cipher: JobCipher,
): JobExecutionPage {
  const items = rowsNewestFirst.map((e) => ({ execution: executionFromRow(e, cipher), cursor: rowCursor(e) }));
  const current = fromNewest
    ? currentExecution(
        row,
        items.map((i) => i.execution),
      )
    : null;
  // Its cursor lies past every recorded row of its attempt, so the next page starts at the newest of them.
  if (current) items.unshift({ execution: current, cursor: { attempt: current.attempt + 1, id: '0' } });
  const page = items.slice(0, limit);
  const last = page[page.length - 1];
  return {
    executions: page.map((i) => i.execution),
    next: items.length > page.length && last ? formatExecutionCursor(last.cursor) : null,
  };
}

function rowCursor(e: Row): ExecutionCursor {
  return { attempt: e.attempt as number, id: String(e.id) };
}

/** A `job_execution` row as the history shows it. */
function executionFromRow(e: Row, cipher: JobCipher): JobExecution {
  return {
    attempt: e.attempt as number,
    workerId: (e.worker_id as string | null) ?? null,
    state: e.state as JobExecution['state'],
    claimedAt: (e.claimed_at as Date | null) ?? null,
    startedAt: (e.started_at as Date | null) ?? null,
    endedAt: (e.ended_at as Date | null) ?? null,
    error: cipher.revealError((e.error as SerializedError | null) ?? null),
    traceId: (e.trace_id as string | null) ?? null,
    spanId: (e.span_id as string | null) ?? null,
  };
}

/**
 * A successful or running attempt writes no history row: the job row tells
 * its story, as the newest entry, unless `executions` (the newest recorded
 * ones) already hold that attempt. Its claim, start and span columns are the
 * last success's, so a running attempt does not show them.
 */
function currentExecution(row: Row, executions: readonly JobExecution[]): JobExecution | null {
  const state = row.state as JobState;
  const attempt = row.attempt as number;
  if (
    (state !== 'active' && state !== 'succeeded') ||
    attempt <= 0 ||
    executions.some((e) => e.attempt === attempt && e.state !== 'interrupted')
  ) {
    return null;
  }
  const done = state === 'succeeded';
  return {
    attempt,
    workerId: (row.worker_id as string | null) ?? null,
    state,
    // The claim wrote started_at; a traced success, its handler's start too.
    claimedAt: done ? ((row.started_at as Date | null) ?? null) : null,
    startedAt: ((done ? row.handler_started_at : null) as Date | null) ?? (row.started_at as Date | null) ?? null,
    endedAt: done ? ((row.completed_at as Date | null) ?? null) : null,
    error: null,
    traceId: done ? ((row.trace_id as string | null) ?? null) : null,
    spanId: done ? ((row.span_id as string | null) ?? null) : null,
  };
}

/** A `job_step` row (as the list statement names its columns) as `JobQueue.get()` shows it. */
export function jobStepFromRow(r: JobStep, withResult: boolean, cipher: JobCipher): JobStep {
  const step: JobStep = {
    name: r.name,
    kind: r.kind,
    attempt: r.attempt,
    completedAt: r.completedAt,
    wakeAt: r.wakeAt ?? null,
  };
  if (withResult) step.result = cipher.revealValue(r.result ?? null);
  return step;
}

/** A claimed job as a claim's row: its due time still in ms since the epoch (see dueMs), a Date once claimedJobs made it. */
export type ClaimedRow = Omit<ClaimedJob, 'runAt'> & { runAt?: number | Date | null };

/** A controlled claim's row: a job, the rate limit's wait (id null), or one of the worker's jobs claimed ahead that it counted (`reserved` null). */
export type ClaimRow = Omit<ClaimedRow, 'claimedAhead'> & { waitMs: number | null; reserved?: boolean | null };

/** Claimed rows as the claim made at `claimedAt` returns them: the jobs (payloads opened, see openClaimed) and the wait. */
export function claimResult(cipher: JobCipher, rows: readonly ClaimRow[], claimedAt: Date): ClaimResult {
  let waitMs: number | null = null;
  const jobs: ClaimedRow[] = [];
  let counted: string[] | undefined;
  for (const { waitMs: wait, reserved, ...job } of rows) {
    if (!job.id) waitMs = wait;
    else if (reserved === null) (counted ??= []).push(job.id);
    else jobs.push(reserved ? { ...job, claimedAhead: true } : job);
  }
  const result: ClaimResult = { jobs: claimedJobs(cipher, jobs, claimedAt), waitMs };
  if (counted) result.counted = counted;
  return result;
}

/**
 * Jobs a claim made at `claimedAt` took, their payloads opened (see openClaimed), their claim time
 * noted and their due time made a Date. The driver makes a fresh string of each row's name and
 * queue; the jobs of one claim share the first row's instead, so the rest die young rather than
 * being held with their jobs (see bench/RESULTS.md, "Memory").
 */
export function claimedJobs(cipher: JobCipher, rows: ClaimedRow[], claimedAt: Date): ClaimedJob[] {
  const first = rows[0];
  for (const job of rows) {
    job.claimedAt = claimedAt;
    if (typeof job.runAt === 'number') job.runAt = new Date(job.runAt);
    if (job.name === first!.name) job.name = first!.name;
    if (job.queue === first!.queue) job.queue = first!.queue;
  }
  return openClaimed(cipher, rows as ClaimedJob[]);
}
