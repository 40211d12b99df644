import {
  checkId,
  checkOptions,
  databaseCall,
  describeValue,
  JobsError,
  JobsNotFoundError,
  MAX_STEP_NAME_LENGTH,
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
    const o =
      checkOptions(`retry(${id})`, options, "{ resetSteps: true } or { fromStep: 'charge' }", RETRY_JOB_SHAPE) ?? {};
    if (o.resetSteps !== undefined && typeof o.resetSteps !== 'boolean') {
      throw new JobsError(
        `retry(${id}): "resetSteps" must be a boolean, got ${describeValue(o.resetSteps)}. Potential fix: retry(id, { resetSteps: true }).`,
      );
    }
    const fromStep = o.fromStep === undefined ? undefined : checkFromStep(id, o.fromStep, o.resetSteps === true);
    const where = fromStep === undefined ? `retry(${id})` : `retry(${id}, { fromStep: ${JSON.stringify(fromStep)} })`;
    const steps = fromStep !== undefined ? { from: fromStep } : o.resetSteps === true ? { reset: true as const } : null;
    const result = await databaseCall(where, () => this.control.retry(id, this.clock.now(), steps));
    if (result.outcome === 'not-found') {
      throw new JobsNotFoundError(`${where}: no such job. Potential fix: check the id returned by enqueue().`);
    }
    if (result.outcome === 'not-retryable') {
      throw new JobsError(
        `${where}: the job is "${result.state}"; only failed, cancelled or skipped jobs can be retried. Potential fix: wait until it has ended, or cancel() it first.`,
      );
    }
    if (result.outcome === 'unknown-step') throw unknownStep(where, id, fromStep!, result);
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

/** A step name to re-run from: a string that can be a step's name, and not with resetSteps. */
function checkFromStep(id: string, value: unknown, resetSteps: boolean): string {
  if (typeof value !== 'string' || value.trim().length === 0 || value.length > MAX_STEP_NAME_LENGTH) {
    throw new JobsError(
      `retry(${id}): "fromStep" must be a step's name, a non-blank string of up to ${MAX_STEP_NAME_LENGTH} characters, got ${describeValue(value)}. ` +
        `Potential fix: retry(id, { fromStep: 'charge' }), with a name get(id).steps lists.`,
    );
  }
  if (resetSteps) {
    throw new JobsError(
      `retry(${id}): "fromStep" and "resetSteps: true" cannot go together: one keeps the steps before ${JSON.stringify(value)}, the other forgets them all. ` +
        `Potential fix: retry(id, { fromStep: ${JSON.stringify(value)} }) to keep the earlier steps, or retry(id, { resetSteps: true }) to run every step again.`,
    );
  }
  return value;
}

/** The refusal of a step the job never recorded: the names it did record (the first few) and the fix. */
function unknownStep(
  where: string,
  id: string,
  fromStep: string,
  result: { recorded: string[]; recordedCount: number },
): JobsError {
  const { recorded, recordedCount } = result;
  const listed = recorded.map((n) => JSON.stringify(n)).join(', ');
  const more = recordedCount > recorded.length ? ` and ${recordedCount - recorded.length} more` : '';
  const had =
    recordedCount === 0
      ? 'it recorded no steps at all, so there is nothing to keep'
      : `it recorded ${listed}${more}, in that order`;
  // ctx.stepKey(name) is `<job id>:<name>`: an idempotency key handed to other systems, not the name.
  const keyOf = fromStep.startsWith(`${id}:`) ? fromStep.slice(id.length + 1) : null;
  const fix =
    keyOf !== null
      ? `that is ctx.stepKey(${JSON.stringify(keyOf)}); pass the step's name: retry(id, { fromStep: ${JSON.stringify(keyOf)} })`
      : recordedCount === 0
        ? 'retry(id) runs the job again from its start'
        : 'pass one of those names, the one given to ctx.step() or ctx.sleep() as get(id).steps lists it; retry(id) keeps every step';
  return new JobsError(
    `${where}: the job recorded no step named ${JSON.stringify(fromStep)}; ${had}. Nothing was written. Potential fix: ${fix}.`,
  );
}
