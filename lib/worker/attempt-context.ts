import type { AttemptParts } from './attempt-parts.js';
import type { EntityManager } from 'typeorm';
import {
  describeValue,
  frozenContext,
  isDependencyTrigger,
  DEPENDENCY_TRIGGER_LIST,
  JobsError,
  SnoozeJob,
  stepKey,
  type ClaimedJob,
  type Continuation,
  type JobContext,
  type JobContextData,
  type JobLogger,
} from '../model/index.js';
import { sleepTarget } from './attempt-steps.js';
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
  /** Its steps, signal waits, child jobs and ctx.transaction(). */
  parts(): AttemptParts;
  stage(continuation: Continuation): void;
}

const HOST = Symbol('host');

/** The parents of a job that has none: shared, and frozen so that no handler can add to it. */
const NO_PARENTS: readonly string[] = Object.freeze([]);

/**
 * The JobContext a handler gets, for one attempt (or its onFailure). Its
 * methods are getters that make a closure on first read, so a handler may
 * still take them apart (`const { progress } = ctx`), while an attempt that
 * calls none allocates none: a context of fourteen closures per job was a
 * sixth of what a drain of no-op jobs allocated (see bench/RESULTS.md, "Memory").
 */
export function jobContext(host: ContextHost): JobContext {
  return new AttemptContext(host);
}

class AttemptContext implements JobContext {
  readonly jobId: string;
  readonly name: string;
  readonly queue: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly logger: JobLogger;
  readonly batchId: string | null;
  readonly parentIds: readonly string[];

  /**
   * Under a module-private symbol, not a #field: the attempt's internals stay out of the handler's
   * reach, and a view made with Object.create(ctx) (the interceptors' context) still finds it.
   */
  readonly [HOST]: ContextHost;

  constructor(host: ContextHost) {
    this[HOST] = host;
    const { job } = host;
    this.jobId = job.id;
    this.name = job.name;
    this.queue = job.queue;
    this.attempt = job.attempt;
    this.maxAttempts = job.maxAttempts;
    this.logger = host.logger;
    this.batchId = job.batchId ?? job.parentBatchId ?? null;
    this.parentIds = job.parentIds ?? NO_PARENTS;
  }

  get signal(): AbortSignal {
    return this[HOST].signal();
  }

  get context(): JobContextData {
    return frozenContext(this[HOST].job.context);
  }

  get step(): JobContext['step'] {
    const host = this[HOST];
    return ((name: string, second: unknown, third?: unknown) => {
      refuseAfterEnd(host, 'ctx.step()');
      return host.parts().steps().step(name, second, third);
    }) as JobContext['step'];
  }

  get stepKey(): JobContext['stepKey'] {
    const { id } = this[HOST].job;
    return (name) => stepKey(id, name);
  }

  get sleep(): JobContext['sleep'] {
    const host = this[HOST];
    return async (name, ms) => {
      refuseAfterEnd(host, 'ctx.sleep()');
      return host
        .parts()
        .steps()
        .sleep(name, sleepTarget('ctx.sleep', host.job, ms), 'ctx.sleep');
    };
  }

  get sleepUntil(): JobContext['sleepUntil'] {
    const host = this[HOST];
    return async (name, until) => {
      refuseAfterEnd(host, 'ctx.sleepUntil()');
      return host
        .parts()
        .steps()
        .sleep(name, sleepTarget('ctx.sleepUntil', host.job, until), 'ctx.sleepUntil');
    };
  }

  get invoke(): JobContext['invoke'] {
    const host = this[HOST];
    return (async (job: unknown, payload: unknown, options?: unknown) => {
      refuseAfterEnd(host, 'ctx.invoke()');
      return host
        .parts()
        .invoker()
        .invoke(job as string, payload, options);
    }) as JobContext['invoke'];
  }

  get patched(): JobContext['patched'] {
    const host = this[HOST];
    return async (name) => {
      refuseAfterEnd(host, 'ctx.patched()');
      return host.parts().steps().patched(name);
    };
  }

  get waitForSignal(): JobContext['waitForSignal'] {
    const host = this[HOST];
    return async <T>(name: string, options?: { timeout?: number }) => {
      refuseAfterEnd(host, 'ctx.waitForSignal()');
      return host.parts().signals().waitForSignal<T>(name, options);
    };
  }

  get setEvent(): JobContext['setEvent'] {
    const host = this[HOST];
    return async (key, value) => {
      refuseAfterEnd(host, 'ctx.setEvent()');
      return host.parts().signals().setEvent(key, value);
    };
  }

  get transaction(): JobContext['transaction'] {
    const host = this[HOST];
    return async <T>(fn: (manager: EntityManager) => Promise<T>) => {
      refuseAfterEnd(host, 'ctx.transaction()');
      return host.parts().transaction().run<T>(fn);
    };
  }

  get snooze(): JobContext['snooze'] {
    const { job } = this[HOST];
    return (ms, reason) => {
      if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || ms > MAX_SNOOZE_MS) {
        throw new JobsError(
          `ctx.snooze() in job "${job.name}": the delay must be a number of ms from 0 to ${MAX_SNOOZE_MS}, got ${String(ms)}. Potential fix: ctx.snooze(30_000).`,
        );
      }
      throw new SnoozeJob(ms, reason);
    };
  }

  get progress(): JobContext['progress'] {
    const { job, deps } = this[HOST];
    return (fraction, message) => {
      if (typeof fraction !== 'number' || !(fraction >= 0 && fraction <= 1)) {
        return Promise.reject(
          new JobsError(
            `ctx.progress() in job "${job.name}" (${job.id}): progress is a fraction from 0 to 1, got ${describeValue(fraction)}. ` +
              'Potential fix: ctx.progress(done / total), e.g. ctx.progress(0.5).',
          ),
        );
      }
      return deps.progress(job, fraction, message ?? null);
    };
  }

  get addToBatch(): JobContext['addToBatch'] {
    const { job, deps } = this[HOST];
    return async (ref, payload, options = {}) => {
      if (!job.batchId) {
        throw new JobsError(
          `ctx.addToBatch() in job "${job.name}" (${job.id}): this job is not a batch member. Potential fix: enqueue the job directly, or start it from batches.create().add(…).`,
        );
      }
      const { beforeDependents, ...rest } = options;
      const before = placement('ctx.addToBatch()', job, beforeDependents);
      const row = {
        ...deps.builder.build(ref, payload, inheritContext(job, rest), deps.clock.now()),
        batchId: job.batchId,
      };
      if (!(await deps.addToBatch(job.batchId, row, before ? job.id : undefined))) {
        throw new JobsError(
          `ctx.addToBatch() in job "${job.name}": batch ${job.batchId} is no longer executing, or stops its unstarted members ` +
            `(cancelled, or a member failed and it does not allow failures); nothing was added. Potential fix: check ctx.signal before adding work.`,
        );
      }
      return { id: row.id };
    };
  }

  get continueWith(): JobContext['continueWith'] {
    const host = this[HOST];
    const { job, deps } = host;
    return (ref, payload, options = {}) => {
      const { on = 'success', beforeDependents, ...rest } = options;
      const before = placement('ctx.continueWith()', job, beforeDependents);
      if (!isDependencyTrigger(on)) {
        throw new JobsError(
          `ctx.continueWith() in job "${job.name}": "on" must be ${DEPENDENCY_TRIGGER_LIST}, got ${describeValue(on)}. Potential fix: ctx.continueWith(Next, payload, { on: 'always' }).`,
        );
      }
      if (host.hasEnded) {
        throw new JobsError(
          `ctx.continueWith() in job "${job.name}" (${job.id}): its last attempt ended when its worker stopped, so there is no outcome to continue from. Potential fix: enqueue the follow-up with JobQueue.enqueue() in onFailure.`,
        );
      }
      host.stage({
        ...deps.builder.build(ref, payload, inheritContext(job, rest), deps.clock.now()),
        on,
        ...(before && { beforeDependents: true }),
      });
    };
  }
}

/** `beforeDependents`, checked: a boolean or nothing. */
function placement(call: string, job: ClaimedJob, value: unknown): boolean {
  if (value === undefined || typeof value === 'boolean') return value === true;
  throw new JobsError(
    `${call} in job "${job.name}" (${job.id}): "beforeDependents" must be true or false, got ${describeValue(value)}. ` +
      `Potential fix: { beforeDependents: true }.`,
  );
}

/** A child's options: without a context of its own, it carries on its parent's. */
function inheritContext(job: ClaimedJob, options: object): Record<string, unknown> {
  const own = options as { context?: unknown };
  return own.context === undefined && job.context ? { ...options, context: job.context } : { ...options };
}

/** Throws when `call` comes from onFailure: the attempt has ended, nothing can be recorded for it. */
function refuseAfterEnd(host: ContextHost, call: string): void {
  if (!host.hasEnded) return;
  const { job } = host;
  throw new JobsError(
    `${call} in onFailure of job "${job.name}" (${job.id}): the job has ended, so nothing can be recorded for it. ` +
      `Potential fix: do the hook's work directly (a hook runs once), or enqueue a job that uses steps.`,
  );
}
