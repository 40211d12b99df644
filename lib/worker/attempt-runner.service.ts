import { Inject, Injectable, Logger } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { JobRegistry } from '../discovery/job-registry.js';
import {
  Clock,
  JOB_ROW_BUILDER,
  JobEvents,
  JobTracing,
  type ClaimedJob,
  type JobHandler,
  type JobRowBuilder,
} from '../model/index.js';
import { JOB_STORAGE, type JobStorage } from '../storage/jobs/job-storage.interface.js';
import { WORKFLOW_STORAGE, type WorkflowStorage } from '../storage/workflows/workflow-storage.interface.js';
import { ProgressWriter } from './progress-writer.js';
import { RunningJob, type RunnerDeps, type RunResult } from './running-job.js';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker-options.js';

/**
 * Runs attempts for a worker: resolves the handler, gives it its context
 * (progress, continuations, batch additions), and wraps the run in the
 * tracing span and the timing that JobEvents listeners want, and tells
 * them how it ended. The worker decides what to run and records what came
 * of it.
 */
@Injectable()
export class AttemptRunner {
  private readonly logger = new Logger('JobWorker');
  private deps: RunnerDeps | null = null;
  private progress: ProgressWriter | null = null;

  constructor(
    private readonly registry: JobRegistry,
    private readonly moduleRef: ModuleRef,
    private readonly clock: Clock,
    @Inject(JOB_ROW_BUILDER) private readonly builder: JobRowBuilder,
    @Inject(JOB_STORAGE) private readonly storage: JobStorage,
    @Inject(WORKFLOW_STORAGE) private readonly workflows: WorkflowStorage,
    @Inject(WORKER_OPTIONS) private readonly options: ResolvedWorkerOptions,
    private readonly events: JobEvents,
    private readonly tracing: JobTracing,
  ) {}

  /** Binds the runner to the worker `workerId`; static handlers are looked up once, here. */
  prepare(workerId: string): void {
    for (const job of this.registry.all()) {
      if (job.wrapper.isDependencyTreeStatic() && !job.wrapper.isTransient) {
        job.instance = job.wrapper.instance as never;
      }
    }
    const progress = new ProgressWriter(this.storage, workerId, this.options.progressThrottle, this.logger);
    this.progress = progress;
    this.deps = {
      moduleRef: this.moduleRef,
      clock: this.clock,
      builder: this.builder,
      progress: (j, fraction, message) => progress.write(j, fraction, message),
      addToBatch: (batchId, row) => this.workflows.addToBatch(batchId, row, this.clock.now()),
    };
  }

  /**
   * A claimed job, ready to run (its handler is registered: the claim asks for known names only).
   * `handler` stands in for the registered instance for this attempt only: the testing kit's
   * fault injection runs the real context, retry decision and outcome around a handler that fails.
   */
  create(job: ClaimedJob, handler?: JobHandler): RunningJob {
    const registered = this.registry.get(job.name)!;
    return new RunningJob(job, handler ? { ...registered, instance: handler } : registered, this.deps!);
  }

  /** Runs the attempt; its outcome, or none when the job is no longer this worker's. */
  async run(run: RunningJob): Promise<RunResult> {
    const { job } = run;
    const started = this.events.observed ? performance.now() : -1;
    const result = this.tracing.enabled
      ? await this.tracing.trace(
          job,
          () => run.execute(),
          (r) => r.outcome,
        )
      : await run.execute();
    if (started >= 0) {
      // Raised as the attempt ends, before its outcome is written (the worker batches that write).
      const end = result.outcome ?? { kind: 'stalled' as const, reason: result.reason, error: result.error };
      this.events.ended(job, end, performance.now() - started);
    }
    this.progress!.forget(job.id);
    return result;
  }

  /** Writes the progress reports still pending (before outcomes are drained at shutdown). */
  drainProgress(): Promise<void> {
    return this.progress?.drain() ?? Promise.resolve();
  }
}
