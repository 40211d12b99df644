import type { EntityManager } from 'typeorm';
import {
  optionShape,
  STEP_FIELDS,
  type DependencyOn,
  type ExecutionPageOptions,
  type StepOptions,
} from '../model/index.js';

/** Per-job options (delay, runAt, priority, queue, maxAttempts, timeout) and where to write. */
export interface EnqueueOptions extends StepOptions {
  /** Write the job in this TypeORM transaction: it exists only if that commits. */
  manager?: EntityManager;
  /**
   * Wait for other jobs or batches to settle: a job id (run after it
   * succeeds), or a list of parents with the outcome each must have.
   */
  after?: string | ParentRef[];
}

export type { DependencyOn };

/** A parent of a job enqueued with `after`: a job or a batch, and the outcome of it that lets the child run (default `success`). */
export type ParentRef =
  | {
      /** The parent job's id (what `enqueue()` returned). */
      job: string;
      /** What the parent must do for the child to run: `success` (default), `failure` (failed for good) or `always`. */
      on?: DependencyOn;
    }
  | {
      /** The parent batch's id (what `dispatch()` returned). */
      batch: string;
      /**
       * What the batch must do for the child to run: `success` (default; every member succeeded),
       * `failure` (a member failed for good) or `always` (it settled, however).
       */
      on?: DependencyOn;
    };

/** Options of a call that writes many jobs at once: enqueueMany() and every dispatch(). */
export interface WriteOptions {
  manager?: EntityManager;
}

/**
 * enqueue()'s options, and every job's of a call writing several: there
 * "after" and "manager" are the call's, refused per job with a message of
 * their own once given a value (JobFactory).
 */
export const ENQUEUE_OPTIONS_SHAPE = optionShape<EnqueueOptions>({ ...STEP_FIELDS, manager: true, after: true });

export const WRITE_OPTIONS_SHAPE = optionShape<WriteOptions>({ manager: true });

/** An entry of enqueue()'s "after" list. */
export const PARENT_REF_SHAPE = optionShape<ParentRef>({ job: true, batch: true, on: true });

/** What `JobQueue.get()` (and `JobsAdmin.detail()`) take. */
export interface GetJobOptions {
  /** Each step's stored result beside its name and time; default false (they may be large). */
  stepResults?: boolean;
}

/** What `JobQueue.retry()` takes. */
export interface RetryJobOptions {
  /** Forget the job's finished steps, so that it runs from scratch; default false (they are answered from storage). */
  resetSteps?: boolean;
  /**
   * Run the job again from this step: the step of this name and every step recorded after it
   * are forgotten, so they run again; the steps recorded before it keep their records and are
   * answered from storage. The name is the one given to `ctx.step()` or `ctx.sleep()`, as
   * `get(id).steps` lists it; "after" is the order the records were written in. A name the job
   * never recorded is refused with a JobsError listing the names it did record, and nothing is
   * written. Not with `resetSteps: true`.
   */
  fromStep?: string;
}

export const GET_JOB_SHAPE = optionShape<GetJobOptions>({ stepResults: true });
/** The keys `JobQueue.executions()` takes. */
export const EXECUTION_PAGE_SHAPE = optionShape<ExecutionPageOptions>({ after: true, limit: true });
export const RETRY_JOB_SHAPE = optionShape<RetryJobOptions>({ resetSteps: true, fromStep: true });

/** How long `waitFor()` waits. */
export interface WaitForJobOptions {
  /**
   * The longest wait in ms (real time); then it rejects with a JobsError naming the job's state.
   * Left out, it waits until the job ends.
   */
  timeout?: number;
}

export const WAIT_FOR_JOB_SHAPE = optionShape<WaitForJobOptions>({ timeout: true });
