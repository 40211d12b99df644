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
import { inOneSnapshot, type PoolExecutor } from '../../sql/sql-executor.js';
import type { StorageContext } from '../../sql/storage-context.js';
import { executionPageFromRows, jobInfoFromRows } from '../job-rows.js';
import { stepStatements, type StepStatements } from '../step-statements.js';
import {
  LISTED_STEPS,
  type CancelResult,
  type JobControlStorage,
  type RetryResult,
  type RetrySteps,
} from './job-control-storage.interface.js';
import { controlStatements, type ControlStatements } from './control-statements.js';

/** A row of the retry statement: the job re-queued (id), a reopening, or a fromStep it never recorded. */
interface RetryRow {
  id: string | null;
  recorded: string[] | null;
  recorded_count: number | null;
}

/** One job read, cancelled or retried by id. */
export class PostgresJobControlStorage implements JobControlStorage {
  private readonly cipher: JobCipher;
  private readonly sql: ControlStatements;
  private readonly steps: StepStatements;
  private readonly pool: PoolExecutor;
  private readonly channel: string;

  constructor(context: StorageContext) {
    this.pool = context.executor;
    this.channel = context.channel;
    this.cipher = context.cipher;
    this.sql = controlStatements(context.schema);
    this.steps = stepStatements(context.schema);
  }

  async cancel(id: string, now: Date): Promise<CancelResult> {
    const written = (await this.sql.cancel.run(this.pool, { jobId: id, now, channel: this.channel })).find((r) => r.id);
    if (written) {
      // The children it invoked and still waits on go with it (and theirs with them).
      for (const child of await this.sql.openChildren.run(this.pool, { parentId: id })) {
        await this.cancel(child.id as string, now);
      }
      return { outcome: written.state === 'active' ? 'requested' : 'cancelled' };
    }
    const [row] = await this.sql.stateOf.run(this.pool, { jobId: id });
    if (!row) return { outcome: 'not-found' };
    return { outcome: 'finished', state: row.state as JobState };
  }

  async retry(id: string, now: Date, steps: RetrySteps = null): Promise<RetryResult> {
    const rows = await this.sql.retry.run<RetryRow>(this.pool, {
      jobId: id,
      now,
      channel: this.channel,
      states: RETRYABLE_STATES,
      resetSteps: steps !== null && 'reset' in steps,
      fromStep: steps !== null && 'from' in steps ? steps.from : null,
      listed: LISTED_STEPS,
    });
    if (rows.some((r) => r.id)) return { outcome: 'requeued' };
    const refused = rows.find((r) => r.recorded);
    if (refused) {
      return { outcome: 'unknown-step', recorded: refused.recorded!, recordedCount: refused.recorded_count! };
    }
    const [row] = await this.sql.stateOf.run(this.pool, { jobId: id });
    if (!row) return { outcome: 'not-found' };
    return { outcome: 'not-retryable', state: row.state as JobState };
  }

  async awaitEnd(id: string): Promise<JobState | null> {
    const [marked] = await this.sql.markAwaited.run(this.pool, { jobId: id });
    if (marked) return marked.state as JobState;
    const [row] = await this.sql.stateOf.run(this.pool, { jobId: id });
    return row ? (row.state as JobState) : null;
  }

  async statesOf(ids: readonly string[]): Promise<Map<string, JobState>> {
    const rows = await this.sql.statesOf.run(this.pool, { ids });
    return new Map(rows.map((r) => [r.id as string, r.state as JobState]));
  }

  async getJob(id: string, options: { stepResults?: boolean } = {}): Promise<JobInfo | null> {
    if (!isUuid(id)) return null;
    const [[row], executionRows, steps] = await inOneSnapshot(this.pool, async (tx) => [
      await this.sql.getJob.run(tx, { jobId: id }),
      // One more than shown tells whether older ones exist.
      await this.sql.latestExecutions.run(tx, { jobId: id, limit: LATEST_EXECUTIONS + 1 }),
      await this.steps.list.run<JobStep>(tx, { jobId: id, withResults: options.stepResults === true }),
    ]);
    if (!row) return null;
    return jobInfoFromRows(row, executionRows, steps, options.stepResults === true, this.cipher);
  }

  async executions(id: string, after: ExecutionCursor | null, limit: number): Promise<JobExecutionPage | null> {
    if (!isUuid(id)) return null;
    const [[row], rows] = await inOneSnapshot(this.pool, async (tx) => [
      await this.sql.jobAttempt.run(tx, { jobId: id }),
      after
        ? await this.sql.executionsBefore.run(tx, {
            jobId: id,
            attempt: after.attempt,
            rowId: after.id,
            limit: limit + 1,
          })
        : await this.sql.latestExecutions.run(tx, { jobId: id, limit: limit + 1 }),
    ]);
    if (!row) return null;
    return executionPageFromRows(row, rows, after === null, limit, this.cipher);
  }
}
