import { createHash } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { type JobCipher, type JobStep, type NewStep, sealJsonFor, type StoredStep } from '../../model/index.js';
import { asStorageTx, executorFor, ignoreError, type PoolExecutor } from '../sql/sql-executor.js';
import type { StorageContext } from '../sql/storage-context.js';
import type { StorageTx, TxScope } from '../sql/storage-tx.interface.js';
import type { HeldJob } from './outcomes/outcome-storage.interface.js';
import { jobStepFromRow } from './job-rows.js';
import { stepStatements, type StepStatements } from './step-statements.js';
import type { HandlerTransactionSource, StepStorage } from './step-storage.interface.js';
import type { WorkerConnections } from './worker-connections.js';

/** The part of a `pg` client the handler's transaction listens on. */
interface ErrorEmitter {
  on(event: 'error', listener: (error: Error) => void): unknown;
  removeListener(event: 'error', listener: (error: Error) => void): unknown;
}

export class PostgresStepStorage implements StepStorage {
  private readonly sql: StepStatements;
  private readonly pool: PoolExecutor;
  private readonly dataSource: DataSource;
  private readonly cipher: JobCipher;
  /** record and load, prepared: see the constructor. */
  private readonly prepared: Pick<StepStatements, 'record' | 'load'>;

  constructor(
    private readonly context: StorageContext,
    /** Whether the DataSource is the app's (shared) or one the module opened. */
    readonly handlerTransactions: HandlerTransactionSource,
    /** The worker's own connections: step records commit as its claims and outcomes do. */
    private readonly connections: WorkerConnections,
  ) {
    this.sql = stepStatements(context.schema);
    // Prepared once per connection: a step's record is a statement per step, on the handler's path.
    const named = (key: string, text: string) =>
      `durable_jobs_step_${key}_${createHash('sha1').update(text).digest('hex').slice(0, 12)}`;
    this.prepared = {
      record: this.sql.record.named(named('record', this.sql.record.text)),
      load: this.sql.load.named(named('load', this.sql.load.text)),
    };
    this.pool = context.executor;
    this.dataSource = context.dataSource;
    this.cipher = context.cipher;
  }

  /**
   * Step records and reads go through the worker's connections: with
   * synchronous commits on the app's pool, each record waited for a flush
   * of all the WAL the worker's batched writes had made (3 steps per job
   * drained at ~2% of a plain drain's rate, measured).
   */
  private steps(): PoolExecutor {
    return this.connections.executor;
  }

  async loadSteps(jobId: string): Promise<StoredStep[]> {
    const rows = await this.prepared.load.run<StoredStep>(this.steps(), { jobId });
    // A step sealed with a key this process lacks (or altered) fails the load: the attempt cannot answer from it.
    return rows.map((r) => ({
      ...r,
      result: this.cipher.openValue(r.result ?? null, `The result of step "${r.name}" of job ${jobId}`),
      wakeAt: r.wakeAt ?? null,
    }));
  }

  async recordStep(workerId: string, job: HeldJob, step: NewStep, tx?: TxScope, withSuccess = false): Promise<boolean> {
    const statement = withSuccess ? this.sql.recordWithSuccess : this.prepared.record;
    const rows = await statement.run(tx ? executorFor(tx, this.pool) : this.steps(), {
      jobId: job.id,
      attempt: job.attempt,
      workerId,
      name: step.name,
      kind: step.kind,
      result: sealJsonFor(this.cipher, job, step.resultJson),
      completedAt: step.completedAt,
      wakeAt: step.wakeAt,
    });
    return rows.length > 0;
  }

  async listSteps(jobId: string, withResults: boolean): Promise<JobStep[]> {
    const rows = await this.sql.list.run<JobStep>(this.pool, { jobId, withResults });
    return rows.map((r) => jobStepFromRow(r, withResults, this.cipher));
  }

  workerTransaction<T>(body: (tx: StorageTx) => Promise<T>): Promise<T> {
    return this.steps().transaction((tx) => body(asStorageTx(tx)));
  }

  /**
   * A query runner of TypeORM's own, so that the manager the handler gets
   * is an ordinary transactional EntityManager (repositories, query
   * builders, entity listeners), and the library's fenced writes run on its
   * connection through executorFor(manager).
   */
  async handlerTransaction<T>(body: (manager: EntityManager) => Promise<T>): Promise<T> {
    const runner = this.dataSource.createQueryRunner();
    let client: ErrorEmitter | null = null;
    try {
      // TypeORM stops listening to its client's 'error' events once one has released it; a
      // server going away sends more than one, and an unheard one would end the process.
      client = (await runner.connect()) as ErrorEmitter;
      client.on('error', ignoreError);
      await runner.startTransaction();
      const locals = this.context.plan.session.locals;
      if (locals) await runner.query(locals);
      let result: T;
      try {
        result = await body(runner.manager);
      } catch (error) {
        if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
        throw error;
      }
      try {
        await runner.commitTransaction();
      } catch (error) {
        // The connection may still hold the transaction: it must not go back to the pool with it.
        if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
        throw error;
      }
      return result;
    } finally {
      // A client TypeORM gave up on (released on its error) keeps ignoring the last errors of its socket.
      if (client && !runner.isReleased) client.removeListener('error', ignoreError);
      await runner.release();
    }
  }
}
