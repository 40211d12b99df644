import type {
  InvokedJob,
  BatchState,
  BatchSummary,
  DependencyEdge,
  JobListState,
  JobState,
  JobSummary,
} from '../../model/index.js';
import type { BatchRoundResult, SettledBatchState } from '../jobs/maintenance/settled-batch-rounds.js';

/** Filters shared by searches and bulk actions; null fields match everything. */
export interface JobFilter {
  states: readonly JobListState[] | null;
  queue: string | null;
  name: string | null;
  batchId: string | null;
  /** Lowercase hex digits, no dashes, 1 to 32 of them. */
  idPrefix: string | null;
  ids: readonly string[] | null;
  /** Decides `queued` (due by now) from `scheduled` (due later). */
  now: Date;
}

export interface JobSearchQuery extends JobFilter {
  /** Jobs whose name holds this text, in any case; `%`, `_` and backslashes in it match themselves. */
  nameContains: string | null;
  /** Jobs with smaller ids only (the cursor of a newest-first list). */
  before: string | null;
  limit: number;
}

/** One chunk of a bulk action: the jobs after `after` (by id) that match, at most `limit`. */
export interface BulkChunk extends JobFilter {
  after: string | null;
  limit: number;
}

export interface ChunkResult {
  /** Jobs the chunk changed. */
  ids: string[];
  /** The largest id the chunk looked at; the next chunk starts after it. Null when it found none. */
  last: string | null;
  /** Rows the chunk locked: fewer than its limit means the range is exhausted. */
  seen: number;
}

export type DeleteJobResult =
  | { outcome: 'deleted'; state: JobState }
  | { outcome: 'not-found' }
  | { outcome: 'live'; state: JobState }
  | { outcome: 'batch-member'; batchId: string }
  | { outcome: 'hook-pending' }
  | { outcome: 'children-waiting'; children: number };

export type RunNowOutcome =
  | { outcome: 'moved'; queue: string; previousRunAt: Date }
  | { outcome: 'not-found' }
  | { outcome: 'not-queued'; state: JobState }
  | { outcome: 'due'; runAt: Date };

/** A purge round over one finished state. */
export interface PurgeChunk {
  state: 'succeeded' | 'failed' | 'cancelled' | 'skipped';
  /** Jobs that ended before this time go. */
  before: Date;
  after: string | null;
  limit: number;
}

export interface BatchQuery {
  state: BatchState | null;
  name: string | null;
  before: string | null;
  limit: number;
}

export interface ThroughputRow {
  queue: string;
  minute: Date;
  succeeded: number;
  failed: number;
}

/**
 * What operators' actions need of the tables beyond the single-job calls
 * of `JobControlStorage`: searches, edges, and bulk writes in chunks. Each chunk is
 * one short transaction of its own, so no call holds locks for long.
 */
export interface AdminStorage {
  searchJobs(query: JobSearchQuery): Promise<JobSummary[]>;
  /** The edges of one job: its parents (jobs or batches) and up to `childLimit` children. */
  jobEdges(
    id: string,
    childLimit: number,
  ): Promise<{ parents: DependencyEdge[]; children: DependencyEdge[]; invoked: InvokedJob[] }>;
  deleteJob(id: string): Promise<DeleteJobResult>;
  runNow(id: string, now: Date): Promise<RunNowOutcome>;
  /** Failed, cancelled or skipped jobs of the chunk → queued with fresh attempts (reopening their batch and dependents). */
  retryChunk(chunk: BulkChunk, now: Date): Promise<ChunkResult>;
  /** Waiting or queued jobs of the chunk → cancelled (settling their batch and dependents). */
  cancelChunk(chunk: BulkChunk, now: Date): Promise<ChunkResult>;
  /** Active jobs of the chunk: cancel requested, their workers told. */
  requestCancelChunk(chunk: BulkChunk): Promise<ChunkResult>;
  /** Deletes finished jobs of one state that no live job waits on; batch members are left to their batch. */
  purgeChunk(chunk: PurgeChunk): Promise<ChunkResult>;
  /**
   * Deletes settled batches of `state` completed before `before` (with their
   * members) after the batch id `after`, as many as fit in about `maxMembers`
   * member rows, at least one; those a live job still needs are kept.
   */
  purgeBatches(
    state: SettledBatchState,
    before: Date,
    after: string | null,
    maxMembers: number,
  ): Promise<BatchRoundResult>;
  listBatches(query: BatchQuery): Promise<BatchSummary[]>;
  /**
   * One reencrypt round: up to `limit` encrypted jobs after the job id
   * `after` (rows locked elsewhere are skipped), their values under older
   * keys re-sealed with the current one, in one short transaction.
   */
  reencryptChunk(after: string | null, limit: number): Promise<ReencryptChunkResult>;
  /** The payloads of schedules of encrypted jobs under older keys, re-sealed with the current one. */
  reencryptSchedules(): Promise<Omit<ReencryptChunkResult, 'jobs' | 'last'>>;
  /** Jobs ended in [since, until) per queue and minute, read among the jobs created since `createdSince`. */
  throughput(since: Date, until: Date, createdSince: Date, queue: string | null): Promise<ThroughputRow[]>;
}

/** What one reencrypt round did: the encrypted jobs it read, the values it re-sealed, and its cursor. */
export interface ReencryptChunkResult {
  /** Encrypted jobs read (and locked) this round. */
  jobs: number;
  /** Values re-sealed with the current key: payloads, results, errors, progress messages, step results. */
  values: number;
  /** Values sealed with a key this process lacks (or that do not authenticate), left as they are. */
  unreadable: number;
  /** The last job id read: the next round starts after it; null when nothing was left. */
  last: string | null;
}

export const ADMIN_STORAGE = Symbol('ADMIN_STORAGE');
