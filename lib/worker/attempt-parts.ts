import type { AttemptOutcome, ClaimedJob, Continuation } from '../model/index.js';
import { AttemptInvoke } from './attempt-invoke.js';
import { AttemptSignals } from './attempt-signals.js';
import { AttemptSteps } from './attempt-steps.js';
import { AttemptTransaction } from './attempt-transaction.js';
import type { RunFaults, RunnerDeps } from './runner-deps.js';

/** What the durable parts of an attempt need of the attempt (RunningJob). */
export interface PartsHost {
  readonly job: ClaimedJob;
  readonly deps: RunnerDeps;
  readonly faults: RunFaults;
  /** Throws why the attempt was stopped, if it was. */
  checkRunning(): void;
  /** Stops the attempt as one whose lease is lost; the error to throw. */
  lost(): Error;
  /** The handler's result, checked as a success's result is. */
  checkResult(value: unknown): unknown;
  /** Ends the attempt's own part in its success, for ctx.transaction(): the continuations it staged. */
  releaseForSuccess(): Continuation[];
  /** The success with this result, as the job type records successes. */
  succeeded(result: unknown): AttemptOutcome;
}

/**
 * The durable parts of one attempt: its steps and sleeps, its signal waits
 * and published values, its child jobs and its ctx.transaction(). Each is
 * made on first use, as most handlers use none of them.
 */
export class AttemptParts {
  private stepsOfRun: AttemptSteps | null = null;
  private signalsOfRun: AttemptSignals | null = null;
  private invokeOfRun: AttemptInvoke | null = null;
  private transactionOfRun: AttemptTransaction | null = null;

  constructor(private readonly host: PartsHost) {}

  /** ctx.transaction(), if the handler opened one. */
  get openedTransaction(): AttemptTransaction | null {
    return this.transactionOfRun;
  }

  /** ctx.step(), ctx.sleep(), ctx.patched(). */
  steps(): AttemptSteps {
    const { job, deps, faults } = this.host;
    return (this.stepsOfRun ??= new AttemptSteps({
      job,
      workerId: deps.workerId,
      clock: deps.clock,
      storage: deps.steps,
      maxResultBytes: deps.maxResultBytes,
      checkRunning: () => this.host.checkRunning(),
      lost: () => this.host.lost(),
      openTransaction: () => this.transactionOfRun?.open() ?? null,
      dieAfterStep: faults.dieAfterStep,
    }));
  }

  /** ctx.waitForSignal() and ctx.setEvent(). */
  signals(): AttemptSignals {
    const { job, deps } = this.host;
    return (this.signalsOfRun ??= new AttemptSignals({
      job,
      workerId: deps.workerId,
      clock: deps.clock,
      storage: deps.signals,
      maxResultBytes: deps.maxResultBytes,
      steps: this.steps(),
      lost: () => this.host.lost(),
      checkRunning: () => this.host.checkRunning(),
    }));
  }

  /** ctx.invoke(). */
  invoker(): AttemptInvoke {
    const { job, deps } = this.host;
    return (this.invokeOfRun ??= new AttemptInvoke({
      job,
      workerId: deps.workerId,
      clock: deps.clock,
      builder: deps.builder,
      enqueue: deps.enqueue,
      storage: deps.signals,
      steps: this.steps(),
      lost: () => this.host.lost(),
      checkRunning: () => this.host.checkRunning(),
      inTransaction: () => this.transactionOfRun?.open() != null,
    }));
  }

  /** ctx.transaction(). */
  transaction(): AttemptTransaction {
    const { job, deps } = this.host;
    return (this.transactionOfRun ??= new AttemptTransaction({
      job,
      storage: deps.steps,
      checkRunning: () => this.host.checkRunning(),
      flushProgress: () => deps.flushProgress(job),
      checkResult: (value) => this.host.checkResult(value),
      releaseForSuccess: () => this.host.releaseForSuccess(),
      succeeded: (result) => this.host.succeeded(result),
      writeSuccess: (attempt, continuations, manager) => deps.writeSuccess(attempt, continuations, manager),
      lost: () => this.host.lost(),
    }));
  }
}
