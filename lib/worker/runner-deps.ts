import type { ModuleRef } from '@nestjs/core';
import type { EntityManager } from 'typeorm';
import type {
  ClaimedJob,
  Clock,
  Continuation,
  FinishedAttempt,
  JobHandler,
  JobRowBuilder,
  NewJob,
} from '../model/index.js';
import type { EnqueueStorage } from '../storage/jobs/enqueue/enqueue-storage.interface.js';
import type { SignalStorage } from '../storage/jobs/signals/signal-storage.interface.js';
import type { StepStorage } from '../storage/jobs/step-storage.interface.js';

/** What every attempt of a worker (or of the testing kit's drain) runs with; made once by AttemptRunner. */
export interface RunnerDeps {
  moduleRef: ModuleRef;
  clock: Clock;
  builder: JobRowBuilder;
  /** The worker whose attempts these are: step records and ctx.transaction are fenced by it. */
  workerId: string;
  steps: StepStorage;
  signals: SignalStorage;
  /** Where ctx.invoke() writes its child, in the step's transaction. */
  enqueue: EnqueueStorage;
  /** Largest job or step result, in bytes of JSON. */
  maxResultBytes: number;
  progress(job: ClaimedJob, fraction: number, message: string | null): Promise<void>;
  /** `before`: the adding job's id, when the new member goes before its dependents. */
  addToBatch(batchId: string, job: NewJob, before?: string): Promise<boolean>;
  /** Writes the job's pending progress report now (before ctx.transaction() opens). */
  flushProgress(job: ClaimedJob): Promise<void>;
  /** The success of ctx.transaction(), fenced, in its transaction: false when the fence refused it. */
  writeSuccess(attempt: FinishedAttempt, continuations: Continuation[], manager: EntityManager): Promise<boolean>;
}

/** What the testing kit changes about one attempt. */
export interface RunFaults {
  /** Stands in for the registered handler (failNext). */
  handler?: JobHandler;
  /** True to stop the attempt between a step's work and its record (dieAfterStep). */
  dieAfterStep?(step: string): boolean;
}
