import { Inject } from '@nestjs/common';
import { Job, JOBS_DATA_SOURCE, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import type { DataSource } from 'typeorm';

/**
 * Records each start of its handler in the table its payload names, prints "running <id>
 * <attempt>", then keeps running whatever its signal says: a cancel can end it only through the
 * worker that holds it, the case where that worker dies, stalls or stops first.
 */
@Job('hold-on', { queue: 'hold', maxAttempts: 3 })
export class HoldOn implements JobHandler<{ log: string }> {
  constructor(@Inject(JOBS_DATA_SOURCE) private readonly dataSource: DataSource) {}

  async run({ log }: { log: string }, ctx: JobContext): Promise<void> {
    await this.dataSource.query(`INSERT INTO ${log} (job_id, attempt, pid) VALUES ($1, $2, $3)`, [
      ctx.jobId,
      ctx.attempt,
      process.pid,
    ]);
    process.stdout.write(`running ${ctx.jobId} ${ctx.attempt}\n`);
    // Unref'd: a process whose app closed may exit with this handler still "running".
    await new Promise((resolve) => setTimeout(resolve, 120_000).unref());
  }
}

/**
 * Has its own cancel accepted the way another instance's cancel is (the flag on its row; the
 * notification to this worker not yet here), then ends its attempt as one that would run again
 * (a failure with attempts left, or a snooze): the worker writes that outcome unaware of it.
 */
@Job('cancel-then-retry', { queue: 'hold', maxAttempts: 3 })
export class CancelThenRetry implements JobHandler<{ how: 'fail' | 'snooze'; table: string }> {
  /** Handler starts by job id. */
  readonly starts = new Map<string, number>();
  constructor(@Inject(JOBS_DATA_SOURCE) private readonly dataSource: DataSource) {}

  async run({ how, table }: { how: 'fail' | 'snooze'; table: string }, ctx: JobContext): Promise<void> {
    this.starts.set(ctx.jobId, (this.starts.get(ctx.jobId) ?? 0) + 1);
    await this.dataSource.query(`UPDATE ${table} SET cancel_requested = true WHERE id = $1 AND state = 'active'`, [
      ctx.jobId,
    ]);
    if (how === 'snooze') ctx.snooze(0, 'partner busy');
    throw new Error('partner down');
  }
}
