import {
  checkId,
  checkOptions,
  databaseCall,
  describeValue,
  JobsError,
  JobsNotFoundError,
  type Clock,
} from '../model/index.js';
import type { JobControlStorage } from '../storage/jobs/control/job-control-storage.interface.js';
import type { WorkflowStorage } from '../storage/workflows/workflow-storage.interface.js';
import { RETRY_JOB_SHAPE, type RetryJobOptions } from './queue-options.js';

/**
 * JobQueue's actions on one job or batch by id: cancel and retry a job,
 * cancel and delete a batch, with their checks and the messages that say
 * why one was refused.
 */
export class JobActions {
  constructor(
    private readonly control: Pick<JobControlStorage, 'cancel' | 'retry'>,
    private readonly workflows: Pick<WorkflowStorage, 'cancelBatch' | 'deleteBatch'>,
    private readonly clock: Clock,
  ) {}

  async cancel(id: string): Promise<void> {
    id = checkId('cancel()', id);
    const result = await databaseCall(`cancel(${id})`, () => this.control.cancel(id, this.clock.now()));
    if (result.outcome === 'not-found') {
      throw new JobsNotFoundError(`cancel(${id}): no such job. Potential fix: check the id returned by enqueue().`);
    }
    if (result.outcome === 'finished') {
      throw new JobsError(
        `cancel(${id}): the job already ended "${result.state}", so there is nothing to cancel. Potential fix: only queued, waiting or active jobs can be cancelled; use retry() to run a finished job again.`,
      );
    }
  }

  async retry(id: string, options: RetryJobOptions): Promise<void> {
    id = checkId('retry()', id);
    const o = checkOptions(`retry(${id})`, options, '{ resetSteps: true }', RETRY_JOB_SHAPE) ?? {};
    if (o.resetSteps !== undefined && typeof o.resetSteps !== 'boolean') {
      throw new JobsError(
        `retry(${id}): "resetSteps" must be a boolean, got ${describeValue(o.resetSteps)}. Potential fix: retry(id, { resetSteps: true }).`,
      );
    }
    const result = await databaseCall(`retry(${id})`, () =>
      this.control.retry(id, this.clock.now(), o.resetSteps === true),
    );
    if (result.outcome === 'not-found') {
      throw new JobsNotFoundError(`retry(${id}): no such job. Potential fix: check the id returned by enqueue().`);
    }
    if (result.outcome === 'not-retryable') {
      throw new JobsError(
        `retry(${id}): the job is "${result.state}"; only failed, cancelled or skipped jobs can be retried. Potential fix: wait until it has ended, or cancel() it first.`,
      );
    }
  }

  async cancelBatch(id: string): Promise<void> {
    id = checkId('cancelBatch()', id, 'batch');
    const result = await databaseCall(`cancelBatch(${id})`, () => this.workflows.cancelBatch(id, this.clock.now()));
    if (result === 'not-found')
      throw new JobsNotFoundError(
        `cancelBatch(${id}): no such batch. Potential fix: check the id returned by dispatch().`,
      );
    if (result === 'finished')
      throw new JobsError(
        `cancelBatch(${id}): the batch has already settled. Potential fix: nothing to do; retry() a member to reopen it.`,
      );
  }

  async deleteBatch(id: string): Promise<void> {
    id = checkId('deleteBatch()', id, 'batch');
    const result = await databaseCall(`deleteBatch(${id})`, () => this.workflows.deleteBatch(id));
    if (result === 'not-found')
      throw new JobsNotFoundError(
        `deleteBatch(${id}): no such batch. Potential fix: check the id returned by dispatch().`,
      );
    if (result === 'executing') {
      throw new JobsError(
        `deleteBatch(${id}): the batch is still executing. Potential fix: wait until it settles, or cancelBatch() it first.`,
      );
    }
  }
}
