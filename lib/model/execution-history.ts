import { JobsError } from './errors.js';
import type { JobExecution } from './records.js';
import { describeValue } from './validation.js';

/** How many attempts `JobQueue.get()` shows: the latest ones; `executions()` pages through the rest. */
export const LATEST_EXECUTIONS = 20;

/** The most attempts one `executions()` page holds. */
export const MAX_EXECUTIONS_PAGE = 500;

/** A page of a job's execution history, newest first (`JobQueue.executions()`). */
export interface JobExecutionPage {
  /** The attempts of this page, newest first. */
  executions: JobExecution[];
  /** Pass as `after` for the older attempts; null on the last page. */
  next: string | null;
}

/** What `JobQueue.executions()` takes. */
export interface ExecutionPageOptions {
  /** The `next` of the previous page (or a job's `moreExecutions`); default the newest attempt. */
  after?: string;
  /** 1 to 500; default 50. */
  limit?: number;
}

/** A place in a job's history: attempts before it (older) come next. */
export interface ExecutionCursor {
  attempt: number;
  id: string;
}

const CURSOR = /^(\d{1,10})\.(\d{1,19})$/;

/**
 * The cursor of a history row, by its attempt and row id (the history's
 * order). It stays a string so callers keep it as they got it.
 */
export function formatExecutionCursor(cursor: ExecutionCursor): string {
  return `${cursor.attempt}.${cursor.id}`;
}

/** A cursor a page or a job returned, checked at the call `where`. */
export function parseExecutionCursor(where: string, value: unknown): ExecutionCursor {
  const match = typeof value === 'string' ? CURSOR.exec(value) : null;
  if (!match) {
    throw new JobsError(
      `${where}: "after" must be a cursor that executions() or get() returned (such as '3.1207'), got ${describeValue(value)}. ` +
        `Potential fix: pass the "next" of the previous page, or a job's "moreExecutions"; leave it out for the newest attempts.`,
    );
  }
  return { attempt: Number(match[1]), id: match[2]! };
}
