import type { EntityManager } from 'typeorm';
import {
  describeValue,
  JobsError,
  type AttemptOutcome,
  type ClaimedJob,
  type Continuation,
  type FinishedAttempt,
} from '../model/index.js';
import type { StepStorage } from '../storage/jobs/step-storage.interface.js';

/** What ctx.transaction() needs of the attempt that calls it. */
export interface TransactionHost {
  readonly job: ClaimedJob;
  readonly storage: StepStorage;
  /** Throws why the attempt was stopped, if it was: a stopped attempt writes no success. */
  checkRunning(): void;
  /** Writes the attempt's pending progress report, which must land while the job is still active. */
  flushProgress(): Promise<void>;
  /** The checked result (JSON, size) as the job's result, or a PermanentJobError. */
  checkResult(value: unknown): unknown;
  /** The continuations a success releases, taken as the success is written. */
  releaseForSuccess(): Continuation[];
  /** The success with this result, as the job type records successes (kept or forgotten). */
  succeeded(result: unknown): AttemptOutcome;
  /** Writes the success, fenced, in `manager`'s transaction: false when the fence refused it. */
  writeSuccess(attempt: FinishedAttempt, continuations: Continuation[], manager: EntityManager): Promise<boolean>;
  /** Stops the attempt as one whose lease is lost; the error the transaction rolls back with. */
  lost(): Error;
}

/**
 * `none` → `open` (the body runs) → `writing` (the success is being
 * written: continuations are taken) → `committed`, or back to `failed`
 * when the body threw, the fence refused or the commit failed.
 */
type TransactionState = 'none' | 'open' | 'writing' | 'committed' | 'failed';

/**
 * ctx.transaction() for one attempt: the handler's writes and the job's
 * success in one transaction. Once committed, the attempt's outcome is
 * recorded and the worker writes none of its own.
 */
export class AttemptTransaction {
  private state: TransactionState = 'none';
  private manager: EntityManager | null = null;
  /** Settles when the transaction has committed (true) or rolled back (false). */
  private settled: Promise<boolean> | null = null;
  /** The job's result as written with the success. */
  result: unknown = null;

  constructor(private readonly host: TransactionHost) {}

  get committed(): boolean {
    return this.state === 'committed';
  }

  /** The manager while the body runs (a transactional step joins it); null otherwise. */
  open(): EntityManager | null {
    return this.state === 'open' ? this.manager : null;
  }

  /** Whether a continuation can still ride on this attempt's outcome. */
  refusesContinuations(): string | null {
    if (this.state === 'writing' || this.state === 'committed') {
      return "ctx.transaction() has written this job's success already, and the continuation would have no outcome to ride on";
    }
    return null;
  }

  /**
   * When the attempt was stopped while the transaction ran, whether it
   * committed anyway (its success write was already under way): the
   * outcome is then recorded. False at once when none was begun.
   */
  async committedDespiteStop(): Promise<boolean> {
    return this.settled ? this.settled : false;
  }

  async run<T>(fn: unknown): Promise<T> {
    const { job, storage } = this.host;
    const where = `ctx.transaction() in job "${job.name}" (${job.id})`;
    if (typeof fn !== 'function') {
      throw new JobsError(
        `${where}: the argument must be a function of the manager, got ${describeValue(fn)}. Potential fix: ctx.transaction(async (manager) => { await manager.insert(Invoice, row); return { invoiced: true }; }).`,
      );
    }
    if (this.state !== 'none') {
      throw new JobsError(
        `${where} was called a second time in one attempt. The first one ${
          this.state === 'committed'
            ? "committed the job's success"
            : this.state === 'failed'
              ? 'rolled back'
              : 'is still running'
        }, and a job has one success to write. Nothing was written by this call. ` +
          `Potential fix: put all of the job's database writes in one ctx.transaction(), as its last step.`,
      );
    }
    if (storage.handlerTransactions === null) {
      throw new JobsError(
        `${where}: the module's storage has no TypeORM DataSource to open a transaction on. ` +
          `Potential fix: configure JobsModule with "dataSource" (the app's own) or "connection".`,
      );
    }
    this.host.checkRunning();
    this.state = 'open';
    // Before the transaction, not in it: it holds a connection of the pool the progress write needs, and
    // with every connection held by a handler's transaction that write (and the commit) would wait for ever.
    // A report made inside the transaction is refused once the success committed; the success sets progress to 1.
    await this.host.flushProgress();
    const body = async (manager: EntityManager): Promise<unknown> => {
      this.manager = manager;
      const value = await (fn as (m: EntityManager) => unknown)(manager);
      const result = this.host.checkResult(value);
      this.host.checkRunning();
      this.state = 'writing';
      const continuations = this.host.releaseForSuccess();
      const attempt: FinishedAttempt = { job, outcome: this.host.succeeded(result) };
      if (!(await this.host.writeSuccess(attempt, continuations, manager))) throw this.host.lost();
      this.result = result;
      return value;
    };
    const running = storage.handlerTransaction(body);
    this.settled = running.then(
      () => true,
      () => false,
    );
    try {
      const value = (await running) as T;
      this.state = 'committed';
      return value;
    } catch (error) {
      this.state = 'failed';
      throw error;
    } finally {
      this.manager = null;
    }
  }
}
