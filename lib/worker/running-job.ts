import { ContextIdFactory, type ContextId } from '@nestjs/core';
import { attemptInterceptors, interceptedRun, type AttemptInterceptor } from '../discovery/intercepted-run.js';
import type { RegisteredJob } from '../discovery/job-registry.js';
import {
  computeBackoff,
  EncryptedValueError,
  frozenContext,
  JobCancelledError,
  JobsError,
  JobTimeoutError,
  PermanentJobError,
  runWithJobContext,
  serializeError,
  SnoozeJob,
  WorkerShutdownError,
  type AttemptOutcome,
  type ClaimedJob,
  type Continuation,
  type JobContext,
  type JobHandler,
  type JobLogger,
} from '../model/index.js';
import { jobContext } from './attempt-context.js';
import { AttemptParts } from './attempt-parts.js';
import { SignalWait } from './attempt-signals.js';
import { deadlineError, pastDeadline } from './job-deadline.js';
import { SleepJob } from './attempt-steps.js';
import type { AttemptTransaction } from './attempt-transaction.js';
import { loggableMessage, loggableStack } from './outcome-log.js';
import { resultJson } from './result-json.js';
import { leaseLostError, type RunResult } from './run-result.js';
import type { RunFaults, RunnerDeps } from './runner-deps.js';

const RESULT_FIX = 'return a summary and keep the data in a table of your own';

/** An attempt the testing kit does not touch: shared, as nearly every attempt is one. */
const NO_FAULTS: RunFaults = Object.freeze({});

/**
 * A success with no result and nothing staged, as most attempts end: one shared, frozen result
 * instead of two objects per job held until its outcome is written.
 */
const SUCCEEDED_EMPTY: RunResult = Object.freeze({ outcome: Object.freeze({ kind: 'succeeded', result: null }) });
/** SUCCEEDED_EMPTY of a job type that does not keep its successes. */
const FORGOTTEN_EMPTY: RunResult = Object.freeze({
  outcome: Object.freeze({ kind: 'succeeded', result: null, forget: true }),
});

/** Why a running attempt was stopped from outside the handler. */
type StopReason = 'cancel' | 'timeout' | 'lost-lease' | 'shutdown';

export type { RunFaults, RunnerDeps } from './runner-deps.js';
export { leaseLostError, type RunResult } from './run-result.js';

/** Runs one attempt of one job: context, signal, timeout, outcome. */
export class RunningJob {
  /** Made on first use of ctx.signal: most handlers never read it, and one per job shows in profiles. */
  private controller: AbortController | null = null;
  private abortReason: Error | null = null;
  private stopReason: StopReason | null = null;
  /** Rejects the wait on a running handler; set only while one is awaited. */
  private rejectWait: ((reason: unknown) => void) | null = null;
  /** Made on the first ctx.continueWith(): most attempts stage none. */
  private staged: Continuation[] | null = null;
  /** Set for a hook run after the attempt already ended (see runFailureHook). */
  private ended = false;
  /** The handler this attempt ran with (a scoped one is made per run), for its onFailure. */
  private handler: JobHandler | undefined;
  /** Why the attempt failed for good, as the handler threw it. */
  private failedWith: Error | undefined;
  /** Made on the first ctx.step(), ctx.invoke(), ctx.transaction() or the like: most handlers use none. */
  private partsOfRun: AttemptParts | null = null;
  /** The DI sub-tree of this attempt's scoped handler and interceptors, made on first need. */
  private contextId: ContextId | null = null;

  constructor(
    readonly job: ClaimedJob,
    private readonly registered: RegisteredJob,
    readonly deps: RunnerDeps,
    private readonly faults: RunFaults = NO_FAULTS,
  ) {}

  get logger(): JobLogger {
    return this.registered.logger;
  }

  /** True for a hook run after the attempt ended: nothing can be recorded for the job then. */
  get hasEnded(): boolean {
    return this.ended;
  }

  /** This attempt's steps, signal waits, child jobs and ctx.transaction(). */
  parts(): AttemptParts {
    return (this.partsOfRun ??= new AttemptParts({
      job: this.job,
      deps: this.deps,
      faults: this.faults,
      checkRunning: () => this.checkRunning(),
      lost: () => this.lost(),
      checkResult: (value) => this.checkResult(value),
      releaseForSuccess: () => this.release('success') ?? [],
      succeeded: (result) => this.succeeded(result),
    }));
  }

  private get transactionOfRun(): AttemptTransaction | null {
    return this.partsOfRun?.openedTransaction ?? null;
  }

  /** Stages a continuation, unless ctx.transaction() has written the success it would ride on. */
  stage(continuation: Continuation): void {
    const refused = this.transactionOfRun?.refusesContinuations();
    if (refused) {
      throw new JobsError(
        `ctx.continueWith() in job "${this.job.name}" (${this.job.id}): ${refused}. Potential fix: call continueWith() before ctx.transaction().`,
      );
    }
    (this.staged ??= []).push(continuation);
  }

  /** Throws why the attempt was stopped, if it was. */
  private checkRunning(): void {
    if (this.abortReason) throw this.abortReason;
  }

  /** A fenced write was refused: the job is another worker's now. */
  private lost(): Error {
    this.stop('lost-lease');
    return this.abortReason!;
  }

  signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortReason) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  /** Aborts the handler's signal and stops waiting for it. */
  stop(reason: StopReason): void {
    if (this.stopReason) return;
    this.stopReason = reason;
    const error =
      reason === 'cancel'
        ? new JobCancelledError(this.job.id)
        : reason === 'timeout'
          ? new JobTimeoutError(this.job.name, this.job.timeoutMs ?? 0)
          : reason === 'shutdown'
            ? new WorkerShutdownError()
            : leaseLostError(this.job.id);
    this.abortReason = error;
    this.controller?.abort(error);
    this.rejectWait?.(error);
  }

  async execute(): Promise<RunResult> {
    const { job } = this;
    const ctx = this.context();
    // A sealed payload that does not authenticate: no attempt can trust it. One whose key is missing
    // is handed back by JobWorker before it gets here; elsewhere (the testing kit) it waits, unspent.
    if (job.unreadable) {
      const { keyId, missing } = job.unreadable;
      if (!missing) return this.failedForGood(new EncryptedValueError(`Job "${job.name}" (${job.id})`, keyId));
      const until = new Date(this.deps.clock.now().getTime() + 1_000);
      return { outcome: { kind: 'snoozed', until, reason: `this instance lacks encryption key '${keyId}'` } };
    }
    // Claimed before its deadline but about to start after it (it waited in the buffer): it does not start.
    if (job.deadline && new Date(job.deadline) <= this.deps.clock.now()) {
      return this.failedForGood(deadlineError(this.job, 'start'));
    }
    const timer =
      job.timeoutMs && job.timeoutMs > 0 ? setTimeout(() => this.stop('timeout'), job.timeoutMs) : undefined;
    try {
      const handler = (this.handler = this.registered.instance ?? (await this.resolveScoped(ctx)));
      const { interceptors } = this.registered;
      const chain = interceptors.length
        ? await attemptInterceptors(interceptors, this.deps.moduleRef, () => this.scope(ctx))
        : null;
      const result = await this.waitFor(handler, ctx, chain);
      if (this.transactionOfRun?.committed) return this.recordedSuccess();
      if (this.stopReason === 'cancel') return this.cancelled();
      const value = this.checkResult(result);
      const continuations = this.release('success');
      if (value === null && !continuations) {
        return this.registered.options.keepSucceeded ? SUCCEEDED_EMPTY : FORGOTTEN_EMPTY;
      }
      return { outcome: this.succeeded(value), continuations };
    } catch (error) {
      // Stopped while ctx.transaction() was writing the success: what it committed stands.
      if (this.transactionOfRun && (await this.transactionOfRun.committedDespiteStop())) {
        return this.recordedSuccess(error);
      }
      return this.failure(error);
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  /**
   * ctx.transaction() committed the job's success with the handler's writes: nothing is left
   * to write. An error the handler threw after it is logged; the success stands.
   */
  private recordedSuccess(after?: unknown): RunResult {
    if (after !== undefined && after !== this.abortReason) {
      const message = loggableMessage(this.job, after);
      const error = new JobsError(
        `Job "${this.job.name}" (${this.job.id}): the handler threw after ctx.transaction() had committed the job's success (${message}). ` +
          `The job stays succeeded with the transaction's result, and nothing after the transaction is retried. ` +
          `Potential fix: make ctx.transaction() the handler's last step, and do work that may fail before it, or as a step.`,
      );
      this.registered.logger.error(error.message, loggableStack(this.job, after));
    }
    return { outcome: this.succeeded(this.transactionOfRun!.result), recorded: true };
  }

  /** The success with this result, forgotten when the job type keeps no successes. */
  private succeeded(result: unknown): AttemptOutcome {
    return this.registered.options.keepSucceeded
      ? { kind: 'succeeded', result }
      : { kind: 'succeeded', result, forget: true };
  }

  /**
   * The handler's result, or the stop error as soon as the attempt is
   * stopped from outside (the handler may go on; its result is ignored).
   * Written without Promise.race and a per-job "stopped" promise: with no-op
   * handlers the worker's allocations per job showed as a third of its CPU
   * in garbage collection.
   */
  private waitFor(handler: JobHandler, ctx: JobContext, chain: AttemptInterceptor[] | null): unknown {
    if (this.abortReason) throw this.abortReason;
    const { context } = this.job;
    // A job with a context runs in it, so that what its handler enqueues through JobQueue inherits it.
    const returned = context
      ? runWithJobContext(frozenContext(context), () => this.start(handler, ctx, chain))
      : this.start(handler, ctx, chain);
    if (!isThenable(returned)) return returned;
    return new Promise((resolve, reject) => {
      this.rejectWait = reject;
      returned.then(resolve, reject);
    });
  }

  private start(handler: JobHandler, ctx: JobContext, chain: AttemptInterceptor[] | null): unknown {
    const { payload } = this.job;
    return chain ? interceptedRun(chain, ctx, payload, () => handler.run(payload, ctx)) : handler.run(payload, ctx);
  }

  /** True once this worker lost the job (or hook) or gave it back: its end is not its own to record. */
  get stopped(): boolean {
    return this.stopReason === 'lost-lease' || this.stopReason === 'shutdown';
  }

  /**
   * onFailure, once the failure is recorded: on this attempt's worker right
   * after its outcome (with the error as thrown), or from the sweep for a
   * job whose hook its instance never ran, or that runs again (the error
   * rebuilt from the record). The attempt is over: a continuation would have
   * no outcome to ride on. ctx.signal aborts if this worker shuts down or
   * loses the hook. Rejects with what the hook threw, for FailureHooks.
   */
  async runFailureHook(recorded?: Error): Promise<void> {
    this.ended = true;
    const error = this.failedWith ?? recorded ?? new Error(`Job ${this.job.id} failed`);
    const ctx = this.context();
    const handler = this.handler ?? this.registered.instance ?? (await this.resolveScoped(ctx));
    const { context } = this.job;
    const hook = () => handler.onFailure?.(this.job.payload, error, ctx);
    await (context ? runWithJobContext(frozenContext(context), hook) : hook());
  }

  private context(): JobContext {
    return jobContext(this);
  }

  private failure(error: unknown): RunResult {
    const { job } = this;
    if (this.stopReason === 'lost-lease' || this.stopReason === 'shutdown') {
      const { name, message } = this.abortReason!;
      return { outcome: null, reason: this.stopReason, error: { name, message } };
    }
    if (this.stopReason === 'cancel') return this.cancelled();
    const err = error instanceof Error ? error : new Error(String(error));
    const now = this.deps.clock.now().getTime();
    if (err instanceof SnoozeJob) {
      const until = err instanceof SleepJob ? err.until : new Date(now + err.ms);
      if (pastDeadline(this.job, until)) return this.failedForGood(deadlineError(this.job, 'snooze'));
      const signal = err instanceof SignalWait ? { signal: err.signal } : {};
      return { outcome: { kind: 'snoozed', until, reason: err.message, ...signal } };
    }
    const permanent = err instanceof PermanentJobError || err.name === 'PermanentJobError';
    if (!permanent && job.attempt < job.maxAttempts) {
      const retryAt = new Date(now + computeBackoff(this.registered.options.backoff, job.attempt, err));
      if (pastDeadline(this.job, retryAt)) return this.failedForGood(deadlineError(this.job, 'retry', err));
      return { outcome: { kind: 'retry', error: serializeError(err), retryAt } };
    }
    return this.failedForGood(err);
  }

  private failedForGood(err: Error): RunResult {
    // The outcome is written first, with the hook recorded; then runFailureHook.
    this.failedWith = err;
    const hook = typeof (this.registered.metatype.prototype as JobHandler).onFailure === 'function';
    return { outcome: { kind: 'failed', error: serializeError(err), hook }, continuations: this.release('failure') };
  }

  private cancelled(): RunResult {
    return {
      outcome: { kind: 'cancelled', error: serializeError(new JobCancelledError(this.job.id)) },
      continuations: this.release('cancel'),
    };
  }

  /** Staged continuations that this way of ending releases ('always' goes with every end). */
  private release(end: 'success' | 'failure' | 'cancel'): Continuation[] | undefined {
    if (!this.staged) return undefined;
    return this.staged.filter((c) => c.on === end || c.on === 'always');
  }

  /** The job's result, once it is known to fit as JSON within maxResultBytes. */
  private checkResult(result: unknown): unknown {
    if (result === undefined) return null;
    resultJson(`Job "${this.job.name}" (${this.job.id})`, result, this.deps.maxResultBytes, RESULT_FIX);
    return result;
  }

  /** Static handlers are shared (registered.instance); scoped ones get their own DI sub-tree per run. */
  private async resolveScoped(ctx: JobContext): Promise<JobHandler> {
    return this.deps.moduleRef.resolve(this.registered.metatype, this.scope(ctx), { strict: false });
  }

  private scope(ctx: JobContext): ContextId {
    if (this.contextId) return this.contextId;
    this.contextId = ContextIdFactory.create();
    this.deps.moduleRef.registerRequestByContextId({ job: ctx, payload: this.job.payload }, this.contextId);
    return this.contextId;
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}
