import {
  isUuid,
  LATEST_EXECUTIONS,
  RETRYABLE_STATES,
  type ExecutionCursor,
  type JobCipher,
  type JobExecutionPage,
  type JobInfo,
  type JobState,
  type JobStep,
} from '../../../model/index.js';
import { inOneSnapshot, type PoolExecutor, type SqlExecutor } from '../../sql/sql-executor.js';
import type { StorageContext } from '../../sql/storage-context.js';
import { executionPageFromRows, jobInfoFromRows } from '../job-rows.js';
import { StatementRunner } from '../statement-runner.js';
import { stepStatements, type StepStatements } from '../step-statements.js';
import type { CancelResult, JobControlStorage, RetryResult } from './job-control-storage.interface.js';
import { controlStatements, type ControlStatements } from './control-statements.js';

/** One job read, cancelled or retried by id. */
export class PostgresJobControlStorage implements JobControlStorage {
  private readonly cipher: JobCipher;
  private readonly statements: StatementRunner<keyof ControlStatements>;
  private readonly steps: StepStatements;
  private readonly pool: PoolExecutor;
  private readonly channel: string;

  constructor(context: StorageContext) {
    this.pool = context.executor;
    this.channel = context.channel;
    this.cipher = context.cipher;
    this.statements = new StatementRunner<keyof ControlStatements>(controlStatements(context.schema), [], this.pool);
    this.steps = stepStatements(context.schema);
  }

  private run(key: keyof ControlStatements, values: unknown[], executor?: SqlExecutor) {
    return this.statements.run(key, values, executor);
  }

  async cancel(id: string, now: Date): Promise<CancelResult> {
    const written = (await this.run('cancel', [id, now, this.channel])).find((r) => r.id);
    if (written) return { outcome: written.state === 'active' ? 'requested' : 'cancelled' };
    const [row] = await this.run('stateOf', [id]);
    if (!row) return { outcome: 'not-found' };
    return { outcome: 'finished', state: row.state as JobState };
  }

  async retry(id: string, now: Date, resetSteps = false): Promise<RetryResult> {
    const rows = await this.run('retry', [id, now, this.channel, RETRYABLE_STATES, resetSteps]);
    if (rows.some((r) => r.id)) return { outcome: 'requeued' };
    const [row] = await this.run('stateOf', [id]);
    if (!row) return { outcome: 'not-found' };
    return { outcome: 'not-retryable', state: row.state as JobState };
  }

  async getJob(id: string, options: { stepResults?: boolean } = {}): Promise<JobInfo | null> {
    if (!isUuid(id)) return null;
    const [[row], executionRows, steps] = await inOneSnapshot(this.pool, async (tx) => [
      await this.run('getJob', [id], tx),
      // One more than shown tells whether older ones exist.
      await this.run('latestExecutions', [id, LATEST_EXECUTIONS + 1], tx),
      await tx.query<JobStep>(this.steps.list, [id, options.stepResults === true]),
    ]);
    if (!row) return null;
    return jobInfoFromRows(row, executionRows, steps, options.stepResults === true, this.cipher);
  }

  async executions(id: string, after: ExecutionCursor | null, limit: number): Promise<JobExecutionPage | null> {
    if (!isUuid(id)) return null;
    const [[row], rows] = await inOneSnapshot(this.pool, async (tx) => [
      await this.run('jobAttempt', [id], tx),
      after
        ? await this.run('executionsBefore', [id, after.attempt, after.id, limit + 1], tx)
        : await this.run('latestExecutions', [id, limit + 1], tx),
    ]);
    if (!row) return null;
    return executionPageFromRows(row, rows, after === null, limit, this.cipher);
  }
}
