import { JobsError, JobsNotFoundError, type DeletedJob, type RunNowResult } from '../model/index.js';
import type { DeleteJobResult, RunNowOutcome } from '../storage/admin/admin-storage.interface.js';

/**
 * What the primary answered to an action on one job, as JobsAdmin returns
 * it, or the refusal naming the fix. The primary's row decides, whatever an
 * operator saw (a replica's view may be behind it).
 */
export function deletedOrThrow(where: string, jobId: string, result: DeleteJobResult): DeletedJob {
  switch (result.outcome) {
    case 'deleted':
      return { id: jobId, state: result.state };
    case 'not-found':
      throw new JobsNotFoundError(
        `${where}: no such job. Potential fix: check the id (search() finds jobs by id prefix).`,
      );
    case 'live':
      throw new JobsError(
        `${where}: the job is "${result.state}"; only ended jobs (succeeded, failed, cancelled, skipped) can be deleted. ` +
          `Potential fix: cancel() it first, and delete it once it has ended.`,
      );
    case 'batch-member':
      throw new JobsError(
        `${where}: the job is a member of batch ${result.batchId}, whose counts include it. ` +
          `Potential fix: deleteBatch('${result.batchId}') once the batch has settled deletes it with the others.`,
      );
    case 'hook-pending':
      throw new JobsError(
        `${where}: the job's onFailure hook has not run yet, and it runs from this row. ` +
          `Potential fix: wait until an instance with its handler has run it.`,
      );
    case 'children-waiting':
      throw new JobsError(
        `${where}: ${result.children} live job(s) wait on it, and their triggers read its outcome. ` +
          `Potential fix: wait until they have run, or cancel them first (detail() lists them).`,
      );
  }
}

export function movedOrThrow(where: string, jobId: string, now: Date, result: RunNowOutcome): RunNowResult {
  switch (result.outcome) {
    case 'moved':
      return { id: jobId, queue: result.queue, previousRunAt: result.previousRunAt, runAt: now };
    case 'not-found':
      throw new JobsNotFoundError(
        `${where}: no such job. Potential fix: check the id (search() finds jobs by id prefix).`,
      );
    case 'due':
      throw new JobsError(
        `${where}: the job is already due (since ${result.runAt.toISOString()}); it runs as soon as a worker of its queue is free. ` +
          `Potential fix: nothing to do here; if it stays queued, check that an alive worker serves its queue (JobsMonitor.workers()).`,
      );
    case 'not-queued':
      throw new JobsError(
        `${where}: the job is "${result.state}"; only a queued job due later (a delay or a retry's backoff) can be run now. ` +
          `Potential fix: ${
            result.state === 'waiting'
              ? 'it runs once its parents have ended (detail() shows them)'
              : result.state === 'active'
                ? 'it is running already'
                : 'retry() an ended job to run it again'
          }.`,
      );
  }
}
