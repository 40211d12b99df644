import {
  sealJsonFor,
  sealSignalPayload,
  type JobCipher,
  type JobState,
  type SerializedError,
} from '../../../model/index.js';
import { executorFor, type PoolExecutor, type SqlExecutor } from '../../sql/sql-executor.js';
import type { StorageContext } from '../../sql/storage-context.js';
import type { TxScope } from '../../sql/storage-tx.interface.js';
import type { HeldJob } from '../outcomes/outcome-storage.interface.js';
import type { WorkerConnections } from '../worker-connections.js';
import { preparedStatements } from '../statement-runner.js';
import { signalStatements, type SignalStatements } from './signal-statements.js';
import type {
  ChildEnd,
  ConsumeResult,
  EventRead,
  SendSignalResult,
  SignalStorage,
} from './signal-storage.interface.js';

export class PostgresSignalStorage implements SignalStorage {
  private readonly sql: SignalStatements;
  private readonly pool: PoolExecutor;
  private readonly cipher: JobCipher;
  private readonly channel: string;

  constructor(
    context: StorageContext,
    /** A handler's writes go through the worker's connections, as its steps do. */
    private readonly connections: WorkerConnections,
  ) {
    // Prepared once per connection: a wait, a look at a child or a published value is a statement
    // on the handler's path, and their texts are long enough that parsing and planning each showed.
    const sql = signalStatements(context.schema);
    this.sql = preparedStatements(sql, Object.keys(sql) as Array<keyof SignalStatements>);
    this.pool = context.executor;
    this.cipher = context.cipher;
    this.channel = context.channel;
  }

  private worker(): SqlExecutor {
    return this.connections.executor;
  }

  async send(
    jobId: string,
    name: string,
    payloadJson: string | null,
    now: Date,
    tx?: TxScope,
  ): Promise<SendSignalResult> {
    const on = executorFor(tx, this.pool);
    const sealed = sealSignalPayload(this.cipher, payloadJson);
    const [row] = await this.sql.send.run(on, {
      jobId,
      name,
      payload: payloadJson,
      sealed,
      now,
      channel: this.channel,
    });
    if (row?.signal !== null && row?.signal !== undefined) return { outcome: 'sent' };
    const [job] = await this.sql.stateOf.run(on, { jobId });
    return job ? { outcome: 'finished', state: job.state as JobState } : { outcome: 'not-found' };
  }

  async beginWait(
    workerId: string,
    job: HeldJob,
    name: string,
    step: string,
    now: Date,
    deadline: Date,
  ): Promise<boolean> {
    const [row] = await this.sql.beginWait.run(this.worker(), {
      ...fenced(workerId, job),
      name,
      step,
      now,
      deadline,
    });
    return Number(row!.fenced) > 0;
  }

  async consume(workerId: string, job: HeldJob, name: string, step: string, now: Date): Promise<ConsumeResult> {
    const [row] = await this.sql.consume.run(this.worker(), {
      ...fenced(workerId, job),
      name,
      step,
      now,
    });
    if (Number(row!.fenced) === 0) return { outcome: 'lost' };
    const result = row!.result as { payload: unknown } | null;
    return result ? { outcome: 'consumed', payload: result.payload } : { outcome: 'none' };
  }

  async timeOut(workerId: string, job: HeldJob, step: string, now: Date): Promise<boolean> {
    const rows = await this.sql.timeOut.run(this.worker(), {
      ...fenced(workerId, job),
      step,
      now,
    });
    return rows.length > 0;
  }

  async setEvent(
    workerId: string,
    job: HeldJob,
    key: string,
    step: string,
    valueJson: string,
    now: Date,
  ): Promise<boolean> {
    const value = sealJsonFor(this.cipher, job, valueJson)!;
    const [row] = await this.sql.setEvent.run(this.worker(), {
      ...fenced(workerId, job),
      key,
      step,
      value,
      now,
      channel: this.channel,
    });
    return Number(row!.fenced) > 0;
  }

  async getEvent(jobId: string, key: string): Promise<EventRead> {
    const [row] = await this.sql.getEvent.run(this.pool, { jobId, key });
    if (!row) return { outcome: 'not-found' };
    const value = row.found ? this.cipher.openValue(row.value, `The value "${key}" of job ${jobId}`) : null;
    return { outcome: 'read', state: row.state as JobState, found: row.found === true, value };
  }

  async linkChild(workerId: string, job: HeldJob, childId: string, tx?: TxScope): Promise<boolean> {
    const rows = await this.sql.linkChild.run(executorFor(tx, this.pool), { ...fenced(workerId, job), childId });
    return rows.length > 0;
  }

  async awaitChild(workerId: string, job: HeldJob, childId: string): Promise<boolean> {
    const rows = await this.sql.awaitChild.run(this.worker(), {
      ...fenced(workerId, job),
      childId,
    });
    return rows.length > 0;
  }

  async childEnd(workerId: string, job: HeldJob, childId: string): Promise<ChildEnd | null> {
    const [row] = await this.sql.childEnd.run(this.worker(), { ...fenced(workerId, job), childId });
    if (!row) return null;
    return {
      state: row.state as JobState,
      result: this.cipher.openValue(row.result ?? null, `The result of child job ${childId}`),
      lastError: this.cipher.revealError((row.last_error as SerializedError | null) ?? null),
    };
  }

  openPayload(stored: unknown, where: string): unknown {
    return this.cipher.openValue(stored ?? null, where);
  }
}

/** The fence of the attempt that owns the job, as every handler-side statement takes it. */
function fenced(workerId: string, job: HeldJob): { jobId: string; attempt: number; workerId: string } {
  return { jobId: job.id, attempt: job.attempt, workerId };
}
