import { randomUUID } from 'node:crypto';
import { Inject } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { Job, JOBS_DATA_SOURCE, type JobContext, type JobHandler } from 'nestjs-durable-jobs';

/** The schema of the suite's own tables, beside the jobs' schema. */
export const CHAOS_SCHEMA = 'chaos';
export const JOBS_SCHEMA = 'chaos_jobs';
export const JOB_NAME = 'chaos-work';

export interface ChaosPayload {
  /** 0 … jobs-1: how the checks tell a lost job from a duplicated enqueue. */
  seq: number;
  /** Simulated work; the side effect is written halfway through it. */
  ms: number;
  /** The side effect is written in ctx.transaction(), with the job's success. */
  tx?: boolean;
}

/**
 * Writes one side-effect row per handler run, halfway through its work, so
 * that SIGKILLs land before, during and after it. The row carries a token of
 * its own run: a write retried after a connection died between commit and
 * reply cannot add a second row, and a handler never fails because of the
 * chaos. So every extra row is a run the library started again, which the
 * checks then match against the job's `interrupted` executions. maxAttempts
 * is set per job at enqueue.
 *
 * A transactional job (`tx`) writes its row inside ctx.transaction() and
 * does the second half of its work there too, so that kills also land
 * between the write and the commit: the row commits with the job's success
 * or not at all, and the checks want exactly one per job. A database error
 * fails that attempt (rolled back) and the retry writes the row again.
 */
@Job(JOB_NAME, { backoff: { type: 'fixed', delay: 200 } })
export class ChaosWork implements JobHandler<ChaosPayload> {
  constructor(@Inject(JOBS_DATA_SOURCE) private readonly db: DataSource) {}

  async run({ seq, ms, tx }: ChaosPayload, ctx: JobContext): Promise<void> {
    const startedAt = new Date();
    const token = randomUUID();
    const values = [token, ctx.jobId, seq, ctx.attempt, process.pid, startedAt];
    await sleep(ms / 2, ctx.signal);
    if (tx) {
      await ctx.transaction(async (manager) => {
        await manager.query(INSERT_EFFECT, values);
        await sleep(ms / 2, ctx.signal);
      });
      return;
    }
    for (;;) {
      try {
        await this.db.query(INSERT_EFFECT, values);
        break;
      } catch {
        // PostgreSQL restarting or our connection killed: try again until the attempt is taken from us.
        await sleep(100, ctx.signal);
      }
    }
    await sleep(ms / 2, ctx.signal);
  }
}

const INSERT_EFFECT = `INSERT INTO ${CHAOS_SCHEMA}.side_effect (run_token, job_id, seq, attempt, pid, started_at)
  VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_token) DO NOTHING`;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
