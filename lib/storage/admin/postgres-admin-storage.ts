import {
  LIVE_JOB_STATES,
  type BatchState,
  type BatchSummary,
  type DependencyEdge,
  type DependencyOn,
  type JobCipher,
  type JobState,
  type JobSummary,
} from '../../model/index.js';
import { inOneSnapshot, type PoolExecutor } from '../sql/sql-executor.js';
import { FIRST_UUID, uuidv7Floor } from '../jobs/job-encoding.js';
import { jobSummaryFromRow } from '../jobs/job-rows.js';
import type { StorageContext } from '../sql/storage-context.js';
import { batchSummaryFromRow } from '../workflows/batch-rows.js';
import {
  deleteSettledBatchRound,
  settledBatchStatements,
  type BatchRoundResult,
  type SettledBatchState,
  type SettledBatchStatements,
} from '../jobs/maintenance/settled-batch-rounds.js';
import type {
  AdminStorage,
  BatchQuery,
  BulkChunk,
  ChunkResult,
  DeleteJobResult,
  JobSearchQuery,
  PurgeChunk,
  ReencryptChunkResult,
  RunNowOutcome,
  ThroughputRow,
} from './admin-storage.interface.js';
import { containsPattern, filterConditions, SqlParams } from './admin-filter.js';
import { adminStatements, type AdminStatements } from './admin-statements.js';
import { reencryptChunk, reencryptSchedules, reencryptStatements } from './reencrypt-chunk.js';
import { bulkDeleteTransaction } from '../jobs/maintenance/bulk-delete-transaction.js';

type Row = Record<string, unknown>;

export class PostgresAdminStorage implements AdminStorage {
  private readonly cipher: JobCipher;
  private readonly sql: AdminStatements;
  private readonly pool: PoolExecutor;
  private readonly channel: string;
  private readonly reencryptSql: ReturnType<typeof reencryptStatements>;
  private readonly batchSql: SettledBatchStatements;

  constructor(context: StorageContext) {
    this.sql = adminStatements(context.schema);
    this.reencryptSql = reencryptStatements(context.schema);
    this.batchSql = settledBatchStatements(context.schema);
    this.pool = context.executor;
    this.channel = context.channel;
    this.cipher = context.cipher;
  }

  async searchJobs(q: JobSearchQuery): Promise<JobSummary[]> {
    const params = new SqlParams();
    const where = filterConditions(q, params);
    if (q.before !== null) where.push(`id < ${params.add(q.before, '::uuid')}`);
    if (q.nameContains !== null) {
      where.push(`name ILIKE ${params.add(containsPattern(q.nameContains), '::text')} ESCAPE '\\'`);
    }
    const text = this.sql.search(where.join(' AND ') || 'TRUE', params.add(q.limit, '::int'));
    return (await this.pool.query<Row>(text, params.values)).map((r) => jobSummaryFromRow(r, this.cipher));
  }

  async jobEdges(id: string, childLimit: number) {
    // One snapshot: a parent settling between two reads would show its child released and itself still active.
    const [parents, children, invoked] = await inOneSnapshot(this.pool, async (tx) => [
      await this.sql.parents.run(tx, { jobId: id }),
      await this.sql.children.run(tx, { jobId: id, limit: childLimit }),
      await this.sql.invoked.run(tx, { jobId: id, limit: childLimit }),
    ]);
    return {
      parents: parents.map((r): DependencyEdge => ({
        kind: r.parent_job_id ? 'job' : 'batch',
        other: r.parent_job_id
          ? { id: r.parent_job_id as string, name: r.job_name as string, state: r.job_state as JobState }
          : {
              id: r.parent_batch_id as string,
              name: (r.batch_name as string | null) ?? null,
              state: r.batch_state as BatchState,
            },
        on: r.trigger as DependencyOn,
        parentOutcome: (r.parent_outcome as string | null) ?? null,
      })),
      children: children.map((r): DependencyEdge => ({
        kind: 'job',
        other: { id: r.id as string, name: r.name as string, state: r.state as JobState },
        on: r.trigger as DependencyOn,
        parentOutcome: (r.parent_outcome as string | null) ?? null,
      })),
      invoked: invoked.map((r) => ({ id: r.id as string, name: r.name as string, state: r.state as JobState })),
    };
  }

  deleteJob(id: string): Promise<DeleteJobResult> {
    return this.pool.transaction(async (tx) => {
      const [row] = await this.sql.lockJob.run(tx, { jobId: id });
      if (!row) return { outcome: 'not-found' };
      const state = row.state as JobState;
      if (LIVE_JOB_STATES.includes(state)) return { outcome: 'live', state };
      if (row.batch_id) return { outcome: 'batch-member', batchId: row.batch_id as string };
      if (row.failure_hook === 'pending' || row.failure_hook === 'running') return { outcome: 'hook-pending' };
      const [result] = await this.sql.deleteJob.run<{ children: number; deleted: number }>(tx, { jobId: id });
      if (result!.deleted === 1) return { outcome: 'deleted', state };
      return { outcome: 'children-waiting', children: result!.children };
    });
  }

  async runNow(id: string, now: Date): Promise<RunNowOutcome> {
    const [moved] = await this.sql.runNow.run(this.pool, { jobId: id, now, channel: this.channel });
    if (moved) return { outcome: 'moved', queue: moved.queue as string, previousRunAt: moved.previous as Date };
    const [row] = await this.sql.stateOf.run(this.pool, { jobId: id });
    if (!row) return { outcome: 'not-found' };
    if (row.state !== 'queued') return { outcome: 'not-queued', state: row.state as JobState };
    return { outcome: 'due', runAt: row.run_at as Date };
  }

  retryChunk(chunk: BulkChunk, now: Date): Promise<ChunkResult> {
    return this.bulk(chunk, (select) => this.sql.retry(select), [now, this.channel]);
  }

  cancelChunk(chunk: BulkChunk, now: Date): Promise<ChunkResult> {
    return this.bulk(chunk, (select) => this.sql.cancel(select), [now, this.channel]);
  }

  requestCancelChunk(chunk: BulkChunk): Promise<ChunkResult> {
    return this.bulk(chunk, (select) => this.sql.requestCancel(select), [this.channel]);
  }

  /** One bulk statement: `fixed` are its leading parameters, the chunk's filter follows them. */
  private async bulk(chunk: BulkChunk, statement: (select: string) => string, fixed: unknown[]): Promise<ChunkResult> {
    const params = new SqlParams();
    for (const value of fixed) params.add(value);
    const where = filterConditions(chunk, params);
    where.push(`id > ${params.add(chunk.after ?? FIRST_UUID, '::uuid')}`);
    const select = this.sql.chunk(where.join(' AND '), params.add(chunk.limit, '::int'));
    const rows = await this.pool.query<{ id: string | null; seen: string | null }>(statement(select), params.values);
    const ids: string[] = [];
    let last: string | null = null;
    let seen = 0;
    for (const r of rows) {
      if (r.id) ids.push(r.id);
      if (r.seen) {
        seen++;
        if (last === null || r.seen > last) last = r.seen;
      }
    }
    return { ids, last, seen };
  }

  purgeChunk(c: PurgeChunk): Promise<ChunkResult> {
    return bulkDeleteTransaction(this.pool, async (tx) => {
      const locked = await this.sql.purgeCandidates.run<{ id: string }>(tx, {
        state: c.state,
        beforeId: uuidv7Floor(c.before),
        after: c.after ?? FIRST_UUID,
        before: c.before,
        limit: c.limit,
      });
      if (locked.length === 0) return { ids: [], last: null, seen: 0 };
      const ids = locked.map((r) => r.id);
      const deleted = await this.sql.purgeJobs.run<{ id: string }>(tx, { ids });
      return { ids: deleted.map((r) => r.id), last: ids[ids.length - 1]!, seen: ids.length };
    });
  }

  reencryptChunk(after: string | null, limit: number): Promise<ReencryptChunkResult> {
    return this.pool.transaction((tx) =>
      reencryptChunk(tx, this.reencryptSql, this.cipher, after ?? FIRST_UUID, limit),
    );
  }

  reencryptSchedules(): Promise<Omit<ReencryptChunkResult, 'jobs' | 'last'>> {
    return this.pool.transaction((tx) => reencryptSchedules(tx, this.reencryptSql, this.cipher));
  }

  purgeBatches(
    state: SettledBatchState,
    before: Date,
    after: string | null,
    maxMembers: number,
  ): Promise<BatchRoundResult> {
    return deleteSettledBatchRound(this.pool, this.batchSql, { state, before, after, maxMembers });
  }

  async listBatches(q: BatchQuery): Promise<BatchSummary[]> {
    const params = new SqlParams();
    const where: string[] = [];
    if (q.state !== null) where.push(`state = ${params.add(q.state, '::text')}`);
    if (q.name !== null) where.push(`name = ${params.add(q.name, '::text')}`);
    if (q.before !== null) where.push(`id < ${params.add(q.before, '::uuid')}`);
    const text = this.sql.listBatches(where.join(' AND ') || 'TRUE', params.add(q.limit, '::int'));
    return (await this.pool.query<Row>(text, params.values)).map(batchSummaryFromRow);
  }

  throughput(since: Date, until: Date, createdSince: Date, queue: string | null): Promise<ThroughputRow[]> {
    return this.sql.throughput.run<ThroughputRow>(this.pool, {
      since,
      until,
      createdFrom: uuidv7Floor(createdSince),
      queue,
    });
  }
}
