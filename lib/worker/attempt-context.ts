import type { EntityManager } from 'typeorm';
import {
  describeValue,
  isDependencyTrigger,
  JobsError,
  SnoozeJob,
  stepKey,
  type ClaimedJob,
  type Continuation,
  type JobContext,
  type JobLogger,
} from '../model/index.js';
import type { AttemptSteps } from './attempt-steps.js';
import { sleepTarget } from './attempt-steps.js';
import type { AttemptTransaction } from './attempt-transaction.js';
import type { RunnerDeps } from './runner-deps.js';

/** A snooze longer than a year is a bug, not a plan. */
const MAX_SNOOZE_MS = 365 * 24 * 3_600_000;

/** What a handler's context reaches of the attempt it belongs to (RunningJob). */
export interface ContextHost {
  readonly job: ClaimedJob;
  readonly deps: RunnerDeps;
  readonly logger: JobLogger;
  /** True in onFailure: the attempt has ended. */
  readonly hasEnded: boolean;
  signal(): AbortSignal;
  steps(): AttemptSteps;
  transaction(): AttemptTransaction;
  stage(continuation: Continuation): void;
}

/**
 * The JobContext a handler gets, for one attempt (or its onFailure). Plain
 * closures rather than a class, so that a handler may take its methods
 * apart (`const { progress } = ctx`).
 */
export function jobContext(host: ContextHost): JobContext {
  const { job, deps } = host;
  const refuseAfterEnd = (call: string) => {
    if (!host.hasEnded) return;
    throw new JobsError(
      `${call} in onFailure of job "${job.name}" (${job.id}): the job has ended, so nothing can be recorded for it. ` +
        `Potential fix: do the hook's work directly (a hook runs once), or enqueue a job that uses steps.`,
    );
  };
  return {
    jobId: job.id,
    name: job.name,
    queue: job.queue,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    get signal() {
      return host.signal();
    },
    logger: host.logger,
    batchId: job.batchId ?? job.parentBatchId ?? null,
    parentIds: job.parentIds ?? [],
    step: ((name: string, second: unknown, third?: unknown) => {
      refuseAfterEnd('ctx.step()');
      return host.steps().step(name, second, third);
    }) as JobContext['step'],
    stepKey: (name) => stepKey(job.id, name),
    sleep: async (name, ms) => {
      refuseAfterEnd('ctx.sleep()');
      return host.steps().sleep(name, sleepTarget('ctx.sleep', job, ms), 'ctx.sleep');
    },
    sleepUntil: async (name, until) => {
      refuseAfterEnd('ctx.sleepUntil()');
      return host.steps().sleep(name, sleepTarget('ctx.sleepUntil', job, until), 'ctx.sleepUntil');
    },
    transaction: async <T>(fn: (manager: EntityManager) => Promise<T>) => {
      refuseAfterEnd('ctx.transaction()');
      return host.transaction().run<T>(fn);
    },
    snooze: (ms, reason) => {
      if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || ms > MAX_SNOOZE_MS) {
        throw new JobsError(
          `ctx.snooze() in job "${job.name}": the delay must be a number of ms from 0 to ${MAX_SNOOZE_MS}, got ${String(ms)}. Potential fix: ctx.snooze(30_000).`,
        );
      }
      throw new SnoozeJob(ms, reason);
    },
    progress: (fraction, message) => {
      if (typeof fraction !== 'number' || !(fraction >= 0 && fraction <= 1)) {
        return Promise.reject(
          new JobsError(
            `ctx.progress() in job "${job.name}" (${job.id}): progress is a fraction from 0 to 1, got ${describeValue(fraction)}. ` +
              'Potential fix: ctx.progress(done / total), e.g. ctx.progress(0.5).',
          ),
        );
      }
      return deps.progress(job, fraction, message ?? null);
    },
    addToBatch: async (ref, payload, options = {}) => {
      if (!job.batchId) {
        throw new JobsError(
          `ctx.addToBatch() in job "${job.name}" (${job.id}): this job is not a batch member. Potential fix: enqueue the job directly, or start it from batches.create().add(…).`,
        );
      }
      const row = { ...deps.builder.build(ref, payload, { ...options }, deps.clock.now()), batchId: job.batchId };
      if (!(await deps.addToBatch(job.batchId, row))) {
        throw new JobsError(
          `ctx.addToBatch() in job "${job.name}": batch ${job.batchId} is no longer executing (cancelled?). Potential fix: check ctx.signal before adding work.`,
        );
      }
      return { id: row.id };
    },
    continueWith: (ref, payload, options = {}) => {
      const { on = 'success', ...rest } = options;
      if (!isDependencyTrigger(on)) {
        throw new JobsError(
          `ctx.continueWith() in job "${job.name}": "on" must be 'success', 'failure' or 'always', got ${describeValue(on)}. Potential fix: ctx.continueWith(Next, payload, { on: 'always' }).`,
        );
      }
      if (host.hasEnded) {
        throw new JobsError(
          `ctx.continueWith() in job "${job.name}" (${job.id}): its last attempt ended when its worker stopped, so there is no outcome to continue from. Potential fix: enqueue the follow-up with JobQueue.enqueue() in onFailure.`,
        );
      }
      host.stage({ ...deps.builder.build(ref, payload, { ...rest }, deps.clock.now()), on });
    },
  };
}
