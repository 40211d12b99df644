import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { Job, JOBS_DATA_SOURCE, type JobContext, type JobHandler } from 'nestjs-durable-jobs';

export interface WorkPayload {
  /** How long the handler works, in ms. */
  ms?: number;
  /** What the run table records beside the job (a tenant, a key). */
  tag?: string;
  /** The job's place in its enqueue order. */
  seq?: number;
  /** Throw once the run is recorded: the attempt fails. */
  fail?: boolean;
}

export const FC_SCHEMA = 'FC_SCHEMA';

/**
 * Records each run in `<schema>.fc_run` with the database's own clock, so
 * runs on several instances share one timeline, and a bigserial gives the
 * global order of their starts.
 */
@Injectable()
export class RunTable {
  constructor(
    @Inject(JOBS_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(FC_SCHEMA) private readonly schema: string,
  ) {}

  async run(ctx: JobContext, p: WorkPayload): Promise<void> {
    const [row] = (await this.dataSource.query(
      `INSERT INTO "${this.schema}".fc_run (job_id, queue, tag, seq, attempt) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
      [ctx.jobId, ctx.queue, p.tag ?? null, p.seq ?? null, ctx.attempt],
    )) as Array<{ id: number }>;
    if (p.ms) await new Promise((r) => setTimeout(r, p.ms));
    await this.dataSource.query(`UPDATE "${this.schema}".fc_run SET ended_at = clock_timestamp() WHERE id = $1`, [
      row!.id,
    ]);
    if (p.fail) throw new Error('fc-work failed on purpose');
  }
}

export const FC_RUN_TABLE = (schema: string) => `CREATE TABLE IF NOT EXISTS "${schema}".fc_run (
  id bigserial PRIMARY KEY, job_id uuid NOT NULL, queue text NOT NULL, tag text, seq int, attempt int NOT NULL,
  started_at timestamptz NOT NULL DEFAULT clock_timestamp(), ended_at timestamptz)`;

/** Works `ms` and records the run; the queue comes from the enqueue. */
@Job('fc-work', { maxAttempts: 1 })
export class Work implements JobHandler<WorkPayload> {
  constructor(private readonly runs: RunTable) {}
  run(p: WorkPayload, ctx: JobContext): Promise<void> {
    return this.runs.run(ctx, p);
  }
}

/** The same with a concurrency limit of its own, inside its queue. */
@Job('fc-named', { maxAttempts: 1, concurrency: 2, queue: 'named' })
export class NamedWork implements JobHandler<WorkPayload> {
  constructor(private readonly runs: RunTable) {}
  run(p: WorkPayload, ctx: JobContext): Promise<void> {
    return this.runs.run(ctx, p);
  }
}

export const flowProviders = (schema: string) => [RunTable, Work, NamedWork, { provide: FC_SCHEMA, useValue: schema }];
