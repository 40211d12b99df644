import { ENQUEUE_STORAGE, type EnqueueStorage } from '../storage/jobs/enqueue/enqueue-storage.interface.js';
import { SIGNAL_STORAGE, type SignalStorage } from '../storage/jobs/signals/signal-storage.interface.js';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { JobRegistry } from '../discovery/job-registry.js';
import {
  Clock,
  JOB_ROW_BUILDER,
  JobEvents,
  JobTracing,
  JOB_WRITE_RULES,
  SystemClock,
  WorkerShutdownError,
  type AttemptOutcome,
  type ClaimedJob,
  type JobRowBuilder,
  type JobWriteRules,
  type SpanIds,
} from '../model/index.js';
import { OUTCOME_STORAGE, type OutcomeStorage } from '../storage/jobs/outcomes/outcome-storage.interface.js';
import { STEP_STORAGE, type StepStorage } from '../storage/jobs/step-storage.interface.js';
import { WORKFLOW_STORAGE, type WorkflowStorage } from '../storage/workflows/workflow-storage.interface.js';
import { ProgressWriter } from './progress-writer.js';
import { leaseLostError, RunningJob, type RunFaults, type RunnerDeps, type RunResult } from './running-job.js';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker-options.js';

type AttemptStart = NonNullable<ClaimedJob['started']>;

/**
 * Runs attempts for a worker: resolves the handler, gives it its context
 * (progress, continuations, batch additions), and wraps the run in the
 * tracing span and the timing that JobEvents listeners want, and tells
 * them how it ended once its outcome is written. The worker decides what
 * to run and records what came of it.
 */
@Injectable()
export class AttemptRunner {
  private readonly logger = new Logger('JobWorker');
  private deps: RunnerDeps | null = null;
  private progress: ProgressWriter | null = null;
  private lastStart: AttemptStart | null = null;

  constructor(
    private readonly registry: JobRegistry,
    private readonly moduleRef: ModuleRef,
    private readonly clock: Clock,
    @Inject(JOB_ROW_BUILDER) private readonly builder: JobRowBuilder,
    @Inject(OUTCOME_STORAGE) private readonly storage: OutcomeStorage,
    @Inject(WORKFLOW_STORAGE) private readonly workflows: WorkflowStorage,
    @Inject(STEP_STORAGE) private readonly steps: StepStorage,
    @Inject(SIGNAL_STORAGE) private readonly signals: SignalStorage,
    @Inject(ENQUEUE_STORAGE) private readonly enqueue: EnqueueStorage,
    @Inject(JOB_WRITE_RULES) private readonly writeRules: JobWriteRules,
    @Inject(WORKER_OPTIONS) private readonly options: ResolvedWorkerOptions,
    private readonly events: JobEvents,
    private readonly tracing: JobTracing,
  ) {}

  /** Binds the runner to the worker `workerId`; static handlers and interceptors are looked up once, here. */
  prepare(workerId: string): void {
    for (const job of this.registry.all()) {
      if (job.wrapper.isDependencyTreeStatic() && !job.wrapper.isTransient) {
        job.instance = job.wrapper.instance as never;
      }
      for (const interceptor of job.interceptors) {
        const { wrapper } = interceptor;
        if (wrapper.isDependencyTreeStatic() && !wrapper.isTransient) interceptor.instance = wrapper.instance as never;
      }
    }
    const progress = new ProgressWriter(this.storage, workerId, this.options.progressThrottle, this.logger);
    this.progress = progress;
    this.deps = {
      moduleRef: this.moduleRef,
      clock: this.clock,
      builder: this.builder,
      workerId,
      steps: this.steps,
      signals: this.signals,
      enqueue: this.enqueue,
      maxResultBytes: this.writeRules.maxResultBytes,
      progress: (j, fraction, message) => progress.write(j, fraction, message),
      addToBatch: (batchId, row, before) => this.workflows.addToBatch(batchId, row, this.clock.now(), before),
      flushProgress: (job) => progress.forget(job) ?? Promise.resolve(),
      writeSuccess: (attempt, continuations, manager) =>
        this.workflows.finishWithContinuations(
          workerId,
          attempt,
          continuations,
          this.clock.now(),
          this.options.lease,
          manager,
        ),
    };
  }

  /**
   * A claimed job, ready to run (its handler is registered: the claim asks for known names only).
   * `faults` are the testing kit's, for this attempt only: a stand-in handler that fails runs in
   * the real context, retry decision and outcome, and dieAfterStep stops it after a step's work.
   */
  create(job: ClaimedJob, faults?: RunFaults): RunningJob {
    const registered = this.registry.get(job.name)!;
    const handler = faults?.handler;
    return new RunningJob(job, handler ? { ...registered, instance: handler } : registered, this.deps!, faults);
  }

  /** Runs the attempt; its outcome, or none when the job is no longer this worker's. */
  run(run: RunningJob): Promise<RunResult> {
    if (this.tracing.enabled || this.events.observed || this.events.startsObserved) return this.observedRun(run);
    // Without spans or listeners, as most drains run: no async frame of its own per job.
    const { job } = run;
    job.started = this.untracedStart();
    return run.execute().then((result) => {
      // Before the outcome goes to the batcher: the last report must land while the job is still active.
      const progressWritten = this.progress!.forget(job);
      return progressWritten ? progressWritten.then(() => result) : result;
    });
  }

  private async observedRun(run: RunningJob): Promise<RunResult> {
    const { job } = run;
    const started = this.events.observed ? performance.now() : -1;
    // The start and the span ids are written with the outcome (see encodeOutcomes), in no statement of their own.
    let result: RunResult;
    if (this.tracing.enabled) {
      const begin = (span: SpanIds | null): Promise<RunResult> => {
        job.started = span
          ? { at: this.clock.now(), traceId: span.traceId, spanId: span.spanId }
          : this.untracedStart();
        if (this.events.startsObserved) this.reportStart(job);
        return run.execute();
      };
      result = await this.tracing.trace(job, begin, (r) => r.outcome);
    } else {
      job.started = this.untracedStart();
      if (this.events.startsObserved) this.reportStart(job);
      result = await run.execute();
    }
    // Before the outcome goes to the batcher: the last report must land while the job is still active.
    const progressWritten = this.progress!.forget(job);
    if (progressWritten) await progressWritten;
    if (started >= 0) {
      const durationMs = performance.now() - started;
      if (!result.outcome) {
        this.events.jobEnded(job, { kind: 'stalled', reason: result.reason, error: result.error }, durationMs);
        return result;
      }
      this.events.attemptEnded({ job, outcome: result.outcome.kind, durationMs });
      return { ...result, durationMs };
    }
    return result;
  }

  /**
   * The attempt's outcome was written (true), refused because the job is no
   * longer this worker's (false), or left unwritten at shutdown (null):
   * listeners hear of it now, so one that reads the job back finds what
   * they were told. A refused or unwritten outcome is a stall.
   */
  recorded(job: ClaimedJob, outcome: AttemptOutcome, durationMs: number | undefined, applied: boolean | null): void {
    if (durationMs === undefined) return;
    if (applied) {
      this.events.jobEnded(job, outcome, durationMs);
      return;
    }
    // As a stall during the run reports it: our own error, without a stack.
    const { name, message } = applied === false ? leaseLostError(job.id) : new WorkerShutdownError();
    const reason = applied === false ? 'lost-lease' : 'shutdown';
    this.events.jobEnded(job, { kind: 'stalled', reason, error: { name, message } }, durationMs);
  }

  /** Tells start observers (metrics) how long the attempt waited: from its due time to its handler's start. */
  private reportStart(job: ClaimedJob): void {
    const due = job.runAt;
    const waitMs = due ? Math.max(0, job.started!.at.getTime() - due.getTime()) : null;
    this.events.attemptStarted({ job, waitMs });
  }

  /**
   * The start of an attempt without a span: one frozen object per millisecond, shared by the
   * attempts that start in it. Each job holds its start until its outcome is written, and at
   * tens of thousands of jobs a second an object and a Date apiece were a fifth of what a
   * drain moved into V8's old generation (see bench/RESULTS.md, "Memory").
   */
  private untracedStart(): AttemptStart {
    // The machine's clock is read without a Date: one is made only when the millisecond changed.
    const ms = this.clock instanceof SystemClock ? Date.now() : this.clock.now().getTime();
    const last = this.lastStart;
    if (last && last.at.getTime() === ms) return last;
    return (this.lastStart = Object.freeze({ at: new Date(ms), traceId: null, spanId: null }));
  }

  /** Writes the progress reports still pending (before outcomes are drained at shutdown). */
  drainProgress(): Promise<void> {
    return this.progress?.drain() ?? Promise.resolve();
  }
}
