import type { EntityManager } from 'typeorm';
import type { JobStep, NewStep, StoredStep } from '../../model/index.js';
import type { StorageTx, TxScope } from '../sql/storage-tx.interface.js';
import type { HeldJob } from './outcomes/outcome-storage.interface.js';

/**
 * Where a handler's transaction runs: on the DataSource the app shares with
 * the module (`dataSource` option), on the module's own connection
 * (`connection` or the embedded database), or nowhere (no TypeORM
 * DataSource behind the storage).
 */
export type HandlerTransactionSource = 'shared' | 'own' | null;

/** Durable steps and the transactions handlers write through (ctx.step, ctx.sleep, ctx.transaction). */
export interface StepStorage {
  /** The steps and sleeps recorded for a job, for an attempt to answer from. */
  loadSteps(jobId: string): Promise<StoredStep[]>;
  /**
   * Records a step, fenced by (id, attempt, worker, active): false when the
   * job is no longer this attempt's. `tx`: a transaction the record joins,
   * to commit with the step's own writes. `withSuccess`: that transaction
   * also writes the job's success (fenced) before it commits, which then
   * decides for both, so the record holds no lock on the job row.
   */
  recordStep(workerId: string, job: HeldJob, step: NewStep, tx?: TxScope, withSuccess?: boolean): Promise<boolean>;
  /** A job's steps as `JobQueue.get()` shows them. */
  listSteps(jobId: string, withResults: boolean): Promise<JobStep[]>;
  readonly handlerTransactions: HandlerTransactionSource;
  /**
   * Runs `body` in a new transaction on that DataSource: committed when it
   * resolves, rolled back when it throws (its error is rethrown).
   */
  handlerTransaction<T>(body: (manager: EntityManager) => Promise<T>): Promise<T>;
  /**
   * Runs `body` in a new transaction on the worker's own connections, which
   * commit as its claims and outcomes do (worker.synchronousCommit): for a
   * step whose writes are all the library's own (ctx.invoke()'s enqueue).
   */
  workerTransaction<T>(body: (tx: StorageTx) => Promise<T>): Promise<T>;
}

export const STEP_STORAGE = Symbol('STEP_STORAGE');
