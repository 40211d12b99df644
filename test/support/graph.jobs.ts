import { DataSource } from 'typeorm';
import { Job, PermanentJobError, type DependencyOn, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { sleepUnlessAborted } from './wait.js';
import { sql } from './database.js';

/** Work a GraphStep adds as it runs: a continuation (`on`) or a new member of its batch (`add`). */
export interface AddedWork {
  tag: string;
  ms?: number;
  fail?: boolean;
  /** A continuation staged for this end of the step; absent: ctx.addToBatch() at once. */
  on?: DependencyOn;
  beforeDependents?: boolean;
  /** What the added job adds in turn. */
  adds?: AddedWork[];
}

export interface GraphStepPayload {
  tag: string;
  ms?: number;
  fail?: boolean;
  /** Wait (up to 20 s) until another member of the batch has failed before ending. */
  afterBatchFailure?: boolean;
  adds?: AddedWork[];
}

/**
 * Records every run with its start and end in `<schema>.graph_run`, so tests
 * can check each job ran once and never before a parent ended; runs its
 * `adds` (continuations, new batch members) as told, then succeeds or fails.
 */
@Job('graph-step', { maxAttempts: 1 })
export class GraphStep implements JobHandler<GraphStepPayload> {
  constructor(private readonly dataSource: DataSource) {}

  async run(payload: GraphStepPayload, ctx: JobContext): Promise<void> {
    const schema = (this.dataSource.options as { schema?: string }).schema!;
    const [row] = (await this.dataSource.query(
      `INSERT INTO "${schema}".graph_run (tag, job_id, batch_id) VALUES ($1, $2, $3) RETURNING id`,
      [payload.tag, ctx.jobId, ctx.batchId],
    )) as Array<{ id: number }>;
    for (const work of payload.adds ?? []) {
      // A payload holds no undefined: JSON keeps only what was given.
      const next = JSON.parse(
        JSON.stringify({ tag: work.tag, ms: work.ms, fail: work.fail, adds: work.adds }),
      ) as GraphStepPayload;
      if (work.on) {
        ctx.continueWith(GraphStep, next, { on: work.on, beforeDependents: work.beforeDependents });
      } else {
        await ctx.addToBatch(GraphStep, next, { beforeDependents: work.beforeDependents });
      }
    }
    if (payload.afterBatchFailure) await this.untilBatchFailed(schema, ctx);
    if (payload.ms) await sleepUnlessAborted(payload.ms, ctx.signal);
    await this.dataSource.query(`UPDATE "${schema}".graph_run SET ended_at = clock_timestamp() WHERE id = $1`, [
      row!.id,
    ]);
    if (payload.fail) throw new PermanentJobError(`${payload.tag} was told to fail`);
  }

  private async untilBatchFailed(schema: string, ctx: JobContext): Promise<void> {
    for (let i = 0; i < 400; i++) {
      const [batch] = (await this.dataSource.query(`SELECT failed FROM "${schema}_jobs".job_batch WHERE id = $1`, [
        ctx.batchId,
      ])) as Array<{ failed: number }>;
      if (batch!.failed > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('no member of the batch failed within 20 s');
  }
}

/** One row per run, nothing else: the 10,000-member graph's member. */
@Job('graph-tick', { maxAttempts: 1 })
export class GraphTick implements JobHandler<{ i: number }> {
  constructor(private readonly dataSource: DataSource) {}

  async run(payload: { i: number }, ctx: JobContext): Promise<void> {
    const schema = (this.dataSource.options as { schema?: string }).schema!;
    await this.dataSource.query(
      `INSERT INTO "${schema}".graph_run (tag, job_id, batch_id, ended_at)
      VALUES ($1, $2, $3, clock_timestamp())`,
      [`tick-${payload.i}`, ctx.jobId, ctx.batchId],
    );
  }
}

export const GRAPH_RUN_TABLE = (schema: string) => `CREATE TABLE "${schema}".graph_run (
  id bigserial PRIMARY KEY, tag text NOT NULL, job_id uuid NOT NULL, batch_id uuid,
  started_at timestamptz NOT NULL DEFAULT clock_timestamp(), ended_at timestamptz)`;

export const graphProviders = [GraphStep, GraphTick];

/** A row of `graph_run`: one run of a GraphStep or GraphTick. */
export interface GraphRun {
  tag: string;
  job_id: string;
  batch_id: string | null;
  started_at: Date;
  ended_at: Date | null;
}

/** The reads of `<schema>.graph_run` a spec makes: runs by tag prefix, in start order, and the one run of a tag. */
export function graphRuns(schema: string) {
  const runs = (prefix: string) =>
    sql<GraphRun>(`SELECT * FROM "${schema}".graph_run WHERE tag LIKE $1 ORDER BY started_at`, [`${prefix}%`]);
  const run = async (tag: string) => {
    const found = (await runs(tag)).filter((r) => r.tag === tag);
    expect(found).toHaveLength(1);
    return found[0]!;
  };
  return { runs, run };
}
