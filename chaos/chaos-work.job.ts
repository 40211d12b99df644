import { randomUUID } from 'node:crypto';
import { Inject } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { Job, JOBS_DATA_SOURCE, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { CHILD_NAME, PARENT_NAME } from './job-names.js';

/** The schema of the suite's own tables, beside the jobs' schema. */
export const CHAOS_SCHEMA = 'chaos';
export const JOBS_SCHEMA = 'chaos_jobs';
export const JOB_NAME = 'chaos-work';
export { CHILD_NAME, PARENT_NAME };

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
    await recordedWork(this.db, ctx, seq, ms, tx, undefined);
  }
}

export interface ChaosParentPayload extends ChaosPayload {
  /** The child's maxAttempts (the parent's own is set at enqueue, as for ChaosWork). */
  childMaxAttempts: number;
}

export interface ChaosChildPayload {
  /** The seq of the parent that invoked it: its side-effect rows carry it as their seq. */
  parentSeq: number;
  ms: number;
  tx?: boolean;
}

/** What a child returns, and its parent returns as `child`: the checks compare the two. */
export interface ChaosChildResult {
  parentSeq: number;
  childId: string;
  attempt: number;
}

export interface ChaosParentResult {
  seq: number;
  child: ChaosChildResult;
}

/**
 * The child of --invoke: ChaosWork's run (one side-effect row per run, on
 * the pool or in ctx.transaction()), counted by the same checks, and a
 * result naming itself.
 */
@Job(CHILD_NAME, { backoff: { type: 'fixed', delay: 200 } })
export class ChaosChild implements JobHandler<ChaosChildPayload> {
  constructor(@Inject(JOBS_DATA_SOURCE) private readonly db: DataSource) {}

  async run({ parentSeq, ms, tx }: ChaosChildPayload, ctx: JobContext): Promise<ChaosChildResult> {
    const result: ChaosChildResult = { parentSeq, childId: ctx.jobId, attempt: ctx.attempt };
    return recordedWork(this.db, ctx, parentSeq, ms, tx, result);
  }
}

/**
 * The parent of --invoke: works a quarter of `ms`, invokes one ChaosChild
 * (which works `ms` and writes the side effect), then works another quarter
 * with the child's result in hand. So SIGKILLs land before the invoke step,
 * around it, and after it in the attempt that resumed the parent, whose
 * invoke is answered from the step's record: the checks then want one child
 * row per parent all the same. It writes no side effect of its own.
 */
@Job(PARENT_NAME, { backoff: { type: 'fixed', delay: 200 } })
export class ChaosParent implements JobHandler<ChaosParentPayload> {
  async run({ seq, ms, tx, childMaxAttempts }: ChaosParentPayload, ctx: JobContext): Promise<ChaosParentResult> {
    await sleep(ms / 4, ctx.signal);
    const child = await ctx.invoke(ChaosChild, { parentSeq: seq, ms, tx }, { maxAttempts: childMaxAttempts });
    await sleep(ms / 4, ctx.signal);
    return { seq, child };
  }
}

/** Work `ms`, writing one side-effect row halfway: see ChaosWork. `result` is the job's. */
async function recordedWork<R>(
  db: DataSource,
  ctx: JobContext,
  seq: number,
  ms: number,
  tx: boolean | undefined,
  result: R,
): Promise<R> {
  const startedAt = new Date();
  const token = randomUUID();
  const values = [token, ctx.jobId, seq, ctx.attempt, process.pid, startedAt];
  await sleep(ms / 2, ctx.signal);
  if (tx) {
    return ctx.transaction(async (manager) => {
      await manager.query(INSERT_EFFECT, values);
      await sleep(ms / 2, ctx.signal);
      return result;
    });
  }
  for (;;) {
    try {
      await db.query(INSERT_EFFECT, values);
      break;
    } catch {
      // PostgreSQL restarting or our connection killed: try again until the attempt is taken from us.
      await sleep(100, ctx.signal);
    }
  }
  await sleep(ms / 2, ctx.signal);
  return result;
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
