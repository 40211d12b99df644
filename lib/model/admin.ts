import type { BatchState, DependencyOn, JobState } from './job-state.js';
import type { BatchInfo, JobInfo, JobSummary } from './records.js';

/**
 * The states lists and bulk actions filter by: the job states, plus
 * `scheduled`, as `JobsMonitor.counts()` reports them. There `queued` is a
 * job due now and `scheduled` one queued for later (a delay, a retry's
 * backoff); a filter reads them the same way, so a list matches its count.
 */
export const JOB_LIST_STATES = [
  'waiting',
  'queued',
  'scheduled',
  'active',
  'succeeded',
  'failed',
  'cancelled',
  'skipped',
] as const satisfies ReadonlyArray<JobState | 'scheduled'>;
/** A state as lists and counts report it: a job state, or `scheduled` (queued for later). */
export type JobListState = (typeof JOB_LIST_STATES)[number];

/** States `retryAll()` takes, and those `cancelAll()` takes. */
export const RETRY_STATES = ['failed', 'cancelled', 'skipped'] as const satisfies readonly JobListState[];
/** A state `retryAll()` takes jobs from. */
export type RetryState = (typeof RETRY_STATES)[number];
/** The states `cancelAll()` takes jobs from. */
export const CANCEL_STATES = ['waiting', 'queued', 'scheduled', 'active'] as const satisfies readonly JobListState[];
/** A state `cancelAll()` takes jobs from. */
export type CancelState = (typeof CANCEL_STATES)[number];

/** What `JobsAdmin.search()` takes; every field narrows the list. */
export interface JobSearch {
  /** One state or several (`scheduled` included); default every state. */
  state?: JobListState | JobListState[];
  /** Only jobs of this queue. */
  queue?: string;
  /** Only jobs of this name, as in `@Job(name)`. */
  name?: string;
  /** Jobs whose name holds this text, in any case (`'receipt'` finds `send-receipt`); `%` and `_` are plain characters. */
  nameContains?: string;
  /** Only members of this batch (its id). */
  batchId?: string;
  /** The start of an id, hex digits with or without dashes (e.g. `0193a1b2`): a key range, since ids are time-ordered. */
  idPrefix?: string;
  /** The `next` of the previous page. */
  before?: string;
  /** 1 to 500; default 50. */
  limit?: number;
}

/** A page of jobs, newest first (by id, which is creation order). */
export interface JobSearchPage {
  /** The jobs of this page, newest first. */
  jobs: JobSummary[];
  /** Pass as `before` for the next page; null on the last one. */
  next: string | null;
}

/** The other end of a dependency edge. */
export interface EdgeEnd {
  /** The job's or the batch's id. */
  id: string;
  /** The job's name, or the batch's; null for a batch created without one. */
  name: string | null;
  /** A job's state, or a batch's (`executing`, `succeeded`, …). */
  state: JobState | BatchState;
}

/**
 * One edge of the dependency graph: the child waits for the parent (a job
 * or a batch) to end `on` success, failure or either. `parentOutcome` is
 * how the parent ended, once it has (null while it has not).
 */
export interface DependencyEdge {
  /** `batch` when the parent is a batch; a child is always a job. */
  kind: 'job' | 'batch';
  /** A parent in `parents`, a child in `children`. */
  other: EdgeEnd;
  /** How the child waits for the parent to end: `success`, `failure` (failed for good) or `always`. */
  on: DependencyOn;
  /**
   * The parent's end as the edge recorded it: a job's or a batch's final state (a batch's first failure
   * for a `failure` edge, which runs its catch at once); null until recorded.
   */
  parentOutcome: string | null;
}

/** A child job a `ctx.invoke()` enqueued, as a parent's detail lists it. */
export interface InvokedJob {
  /** The child's id. */
  id: string;
  /** Its job name, as in `@Job(name)`. */
  name: string;
  /** Its state now. */
  state: JobState;
}

/** A job with its history, its edges and its batch: what `JobsAdmin.detail()` returns. */
export interface JobDetail extends JobInfo {
  /** Jobs and batches this job waits (or waited) for. */
  parents: DependencyEdge[];
  /** Jobs waiting (or that waited) for this one, oldest first; at most `MAX_DETAIL_CHILDREN`. */
  children: DependencyEdge[];
  /** True when the job has more children than `children` lists. */
  moreChildren: boolean;
  /** The child jobs its `ctx.invoke()` enqueued, oldest first; at most `MAX_DETAIL_CHILDREN`. */
  invoked: InvokedJob[];
  /** The batch it is a member of, with its counts. */
  batch: BatchInfo | null;
}

/** Which jobs a bulk action touches; every field narrows. */
export interface BulkFilter<S extends JobListState> {
  /** One state or several; default `failed` for `retryAll()`, every state it takes for `cancelAll()`. */
  state?: S | S[];
  /** Only jobs of this queue. */
  queue?: string;
  /** Only jobs of this name, as in `@Job(name)`. */
  name?: string;
  /** Only members of this batch (its id). */
  batchId?: string;
  /** The start of an id, as in `JobSearch`. */
  idPrefix?: string;
  /** Exactly these jobs (at most 1,000), e.g. the rows an operator ticked. */
  ids?: string[];
}

/** Which jobs `JobsAdmin.retryAll()` queues again. */
export type RetryAllFilter = BulkFilter<RetryState>;
/** Which jobs `JobsAdmin.cancelAll()` cancels. */
export type CancelAllFilter = BulkFilter<CancelState>;

/** What `retryAll()` changed: how many jobs, and their ids (the first 1,000). */
export interface RetryAllResult {
  /** Jobs queued again. */
  count: number;
  /** Their ids, the first 1,000. */
  ids: string[];
}

/** What `cancelAll()` changed: jobs cancelled, running jobs asked to stop, and their ids (the first 1,000). */
export interface CancelAllResult {
  /** Waiting or queued jobs cancelled at once. */
  cancelled: number;
  /** Running jobs asked to stop (their signal aborts; they end `cancelled`). */
  requested: number;
  /** The ids of both, the first 1,000. */
  ids: string[];
}

/** `JobsAdmin.purge()`: finished jobs that ended before each time go; a state left out is kept. */
export interface PurgeOptions {
  /** Succeeded jobs, and batches that succeeded, that ended before this time go. */
  succeededBefore?: Date;
  /** Failed jobs, and batches that failed, that ended before this time go. */
  failedBefore?: Date;
  /** Cancelled jobs, and cancelled batches, that ended before this time go. */
  cancelledBefore?: Date;
  /** Skipped jobs that ended before this time go (no batch ends skipped). */
  skippedBefore?: Date;
  /**
   * Rest before each statement after the first, in ms; default 0. A purge of
   * a long history on a live system then leaves the database to the claims
   * for part of its time, as `retention.pause` does.
   */
  pause?: number;
}

/** What `JobsAdmin.reencrypt()` did: every encrypted job's values under older keys re-sealed with the current key. */
export interface ReencryptResult {
  /** The key id the values now use. */
  current: string;
  /** Encrypted jobs read. */
  jobs: number;
  /** Values re-sealed: payloads (schedules' too), results, errors (message and stack), progress messages, step results. */
  values: number;
  /** Values left as they are: sealed with a key this process lacks, or not authenticating. */
  unreadable: number;
  /** Rounds run, each its own short transaction. */
  rounds: number;
}

/** What `purge()` deleted: jobs by state, batches, and the rounds it took. */
export interface PurgeResult {
  /** Jobs deleted, by state (batch members are counted in `batches`, not here). */
  jobs: {
    /** Succeeded jobs deleted. */
    succeeded: number;
    /** Failed jobs deleted. */
    failed: number;
    /** Cancelled jobs deleted. */
    cancelled: number;
    /** Skipped jobs deleted. */
    skipped: number;
  };
  /** Settled batches deleted with their members (a batch's state decides which cutoff applies). */
  batches: number;
  /** Batch members deleted with those batches. */
  batchMembers: number;
  /** Delete statements run, each its own short transaction. */
  rounds: number;
}

/** A batch as lists show it: counts, without the member scan `batchStatus()` makes for `startedAt`. */
export type BatchSummary = Omit<BatchInfo, 'startedAt'>;

/** Which batches `JobsAdmin.listBatches()` lists, and the page. */
export interface BatchListFilter {
  /** Only batches in this state. */
  state?: BatchState;
  /** Only batches of this name, as given to `batches.create(name)`. */
  name?: string;
  /** Batches created before this batch (its id): the `next` of the previous page. */
  before?: string;
  /** 1 to 500; default 50. */
  limit?: number;
}

/** A page of batches, newest first, and the key of the next page. */
export interface BatchPage {
  /** The batches of this page, newest first. */
  batches: BatchSummary[];
  /** Pass as `before` for the next page; null on the last one. */
  next: string | null;
}

/** One minute of one queue: jobs that ended in it. */
export interface ThroughputPoint {
  /** The minute's start. */
  minute: Date;
  /** Jobs of the queue that succeeded in this minute. */
  succeeded: number;
  /** Jobs of the queue that failed for good in this minute. */
  failed: number;
}

/** Jobs that ended per minute and queue, succeeded and failed, over a window. */
export interface Throughput {
  /** The start of the window's first minute. */
  since: Date;
  /** The end of the window: the end of the current minute. */
  until: Date;
  /** Per queue with any job ended in the window: one point per minute, oldest first, zeros included. */
  queues: Record<string, ThroughputPoint[]>;
}

/** What `JobsAdmin.runNow()` moved. */
export interface RunNowResult {
  /** The job's id. */
  id: string;
  /** Its queue, whose idle workers were woken. */
  queue: string;
  /** The time it was due before. */
  previousRunAt: Date;
  /** The time it is due now: the time of the call. */
  runAt: Date;
}

/** What `JobsAdmin.delete()` removed. */
export interface DeletedJob {
  /** The deleted job's id. */
  id: string;
  /** The state it had ended in. */
  state: JobState;
}
