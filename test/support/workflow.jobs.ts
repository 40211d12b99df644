import { Inject } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Job, PermanentJobError, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { INSTANCE_NAME } from './probe.jobs.js';
import { sleepUnlessAborted } from './wait.js';

export interface StepPayload {
  tag: string;
  /** Fail for good on attempts before this one (a retry() then lets it pass). */
  failUntilAttempt?: number;
  ms?: number;
}

/**
 * Records every run with its start and end in `<schema>.wf_run`, so tests
 * can check exactly-once and "never before its parents" across instances.
 * As it starts, a run also counts its parents (parent jobs, and the members
 * of parent batches) that have not settled yet, as committed in the jobs'
 * own rows: a callback or child released early finds some.
 */
@Job('wf-step', { maxAttempts: 1 })
export class Step implements JobHandler<StepPayload> {
  constructor(
    private readonly dataSource: DataSource,
    @Inject(INSTANCE_NAME) private readonly instance: string,
  ) {}

  async run(payload: StepPayload, ctx: JobContext): Promise<{ tag: string }> {
    const appSchema = (this.dataSource.options as { schema?: string }).schema;
    const table = `"${appSchema}".wf_run`;
    // The sample app keeps its jobs in "<its schema>_jobs".
    const jobs = `"${appSchema}_jobs"`;
    const unsettled = `p.state IN ('waiting', 'queued', 'active')`;
    const [row] = (await this.dataSource.query(
      `INSERT INTO ${table} (tag, job_id, instance, attempt, open_parents) VALUES ($1, $2, $3, $4,
         (SELECT count(*) FROM ${jobs}.job_dependency d JOIN ${jobs}.job p ON p.id = d.parent_job_id
           WHERE d.child_id = $2 AND ${unsettled})
         + (SELECT count(*) FROM ${jobs}.job_dependency d JOIN ${jobs}.job p ON p.batch_id = d.parent_batch_id
           WHERE d.child_id = $2 AND ${unsettled}))
       RETURNING id`,
      [payload.tag, ctx.jobId, this.instance, ctx.attempt],
    )) as Array<{ id: number }>;
    if (payload.ms) await sleepUnlessAborted(payload.ms, ctx.signal);
    await this.dataSource.query(`UPDATE ${table} SET ended_at = clock_timestamp() WHERE id = $1`, [row!.id]);
    if (payload.failUntilAttempt && ctx.attempt < payload.failUntilAttempt) {
      throw new PermanentJobError(`${payload.tag} fails on attempt ${ctx.attempt}`);
    }
    return { tag: payload.tag };
  }
}

/** A batch member that adds more members to its own batch. */
@Job('wf-grow', { maxAttempts: 1 })
export class Grow implements JobHandler<{ tag: string; extra: number }> {
  async run(payload: { tag: string; extra: number }, ctx: JobContext): Promise<void> {
    for (let i = 0; i < payload.extra; i++) await ctx.addToBatch(Step, { tag: `${payload.tag}-added-${i}`, ms: 50 });
  }
}

/** Stages continuations for each outcome, then succeeds or fails as told. */
@Job('wf-continue', { maxAttempts: 1 })
export class Continue implements JobHandler<{ tag: string; fail: boolean; badOn?: boolean }, unknown> {
  async run(payload: { tag: string; fail: boolean; badOn?: boolean }, ctx: JobContext): Promise<unknown> {
    if (payload.badOn) {
      // What continueWith throws for an "on" it cannot take, as the handler sees it.
      try {
        ctx.continueWith(Step, { tag: `${payload.tag}-never` }, { on: Object.create(null) as never });
      } catch (error) {
        return { name: (error as Error).name, message: (error as Error).message };
      }
      return null;
    }
    ctx.continueWith(Step, { tag: `${payload.tag}-on-success` });
    ctx.continueWith(Step, { tag: `${payload.tag}-on-failure` }, { on: 'failure' });
    ctx.continueWith(Step, { tag: `${payload.tag}-always` }, { on: 'always' });
    if (payload.fail) throw new PermanentJobError('told to fail');
  }
}

export const WF_RUN_TABLE = (schema: string) => `CREATE TABLE "${schema}".wf_run (
  id bigserial PRIMARY KEY, tag text NOT NULL, job_id uuid NOT NULL, instance text NOT NULL, attempt int NOT NULL,
  open_parents int NOT NULL, started_at timestamptz NOT NULL DEFAULT clock_timestamp(), ended_at timestamptz)`;

export const workflowProviders = [Step, Grow, Continue];
