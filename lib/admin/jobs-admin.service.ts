import { Inject, Injectable } from '@nestjs/common';
import {
  BATCH_STATES,
  CODE_QUEUES,
  checkId,
  checkInteger,
  checkName,
  checkOptions,
  BATCH_LIST_FILTER_SHAPE,
  JOB_SEARCH_SHAPE,
  optionShape,
  Clock,
  JobCipher,
  databaseCall,
  JOB_LIST_STATES,
  toDatabaseError,
  JobsError,
  SCHEDULE_CONTROL,
  type BatchInfo,
  type BatchListFilter,
  type BatchPage,
  type CancelAllFilter,
  type CancelAllResult,
  type CodeQueues,
  type ExecutionPageOptions,
  type JobExecutionPage,
  type JobInfo,
  type DeletedJob,
  type JobDetail,
  type JobSearch,
  type JobSearchPage,
  type PurgeOptions,
  type PurgeResult,
  type ReencryptResult,
  type QueueInfo,
  type RetryAllFilter,
  type RetryAllResult,
  type RunNowResult,
  type ScheduleControl,
  type ScheduleInfo,
  type Throughput,
  type ForgottenService,
  type ServiceInfo,
} from '../model/index.js';
import { JobReads, type BatchMembersOptions } from '../queue/job-reads.js';
import { GET_JOB_SHAPE, type GetJobOptions } from '../queue/queue-options.js';
import { JobQueues } from '../queue/job-queues.service.js';
import { listQueues } from '../queue/queue-list.js';
import { ADMIN_STORAGE, type AdminStorage } from '../storage/admin/admin-storage.interface.js';
import { MONITORING_READS, type MonitoringReads } from '../storage/monitoring/monitoring-reads.interface.js';
import type { BatchGraph, BatchMember } from '../storage/workflows/workflow-storage.interface.js';
import { SERVICE_STORAGE, type ServiceStorage } from '../storage/services/service-storage.interface.js';
import { forgetService, listServices } from './service-admin.js';
import { checkCursor, checkFilter, checkLimit, checkStates } from './admin-checks.js';
import { BULK_CHUNK, BulkActions } from './bulk-actions.js';
import { deletedOrThrow, movedOrThrow } from './job-action-errors.js';
import { checkPurgeOptions, PurgeRun } from './purge-run.js';
import { reencryptAll } from './reencrypt-run.js';
import { denseThroughput, throughputWindow } from './throughput.js';

/** The most children a job's detail lists. */
export const MAX_DETAIL_CHILDREN = 500;

/** What `throughput()` takes. */
export interface ThroughputOptions {
  minutes?: number;
  queue?: string;
}

const THROUGHPUT_SHAPE = optionShape<ThroughputOptions>({ minutes: true, queue: true });

/**
 * Operators' actions, for the dashboard, the CLI and your own tools: find
 * jobs, look at one with its edges, retry, cancel or delete them one by one
 * or in bulk, make a delayed job due, purge history, and look after
 * schedules. Single-job retry and cancel are `JobQueue`'s, with its rules
 * and messages; bulk actions work in chunks of `BULK_CHUNK` rows, each its
 * own short transaction, so they never hold what workers need for long.
 * Every refusal is a `JobsError` naming the fix.
 *
 * Its reads (search, detail, executions, batches, throughput, the lists of
 * queues and schedules) go to the monitoring replica when
 * `monitoring.replica` is set, so they may be a moment behind; every action
 * runs on the primary and is checked against the row there.
 */
@Injectable()
export class JobsAdmin {
  private readonly bulk: BulkActions;
  private readonly byId: JobReads;

  constructor(
    @Inject(ADMIN_STORAGE) private readonly storage: AdminStorage,
    @Inject(MONITORING_READS) private readonly reads: MonitoringReads,
    private readonly clock: Clock,
    @Inject(SCHEDULE_CONTROL) private readonly schedules: ScheduleControl,
    private readonly queues: JobQueues,
    private readonly cipher: JobCipher,
    @Inject(CODE_QUEUES) private readonly codeQueues: CodeQueues,
    @Inject(SERVICE_STORAGE) private readonly services_: ServiceStorage,
  ) {
    this.bulk = new BulkActions(storage, clock);
    this.byId = new JobReads(reads.jobs, reads.batches, 'JobsAdmin.');
  }

  /**
   * Jobs newest first, by any mix of state (`scheduled` included: queued
   * for later), queue, name or part of a name, batch and id prefix; page
   * with `before: next`.
   */
  async search(filter: JobSearch = {}): Promise<JobSearchPage> {
    const where = 'JobsAdmin.search()';
    const f = checkOptions(where, filter, "{ state: 'failed', queue: 'emails' }", JOB_SEARCH_SHAPE) ?? {};
    const checked = checkFilter(where, f, JOB_LIST_STATES, 'failed');
    if (checked.ids) throw new JobsError(`${where}: "ids" is not a search field. Potential fix: use idPrefix.`);
    const limit = checkLimit(where, f.limit, 500, 50);
    const before = checkCursor(where, 'before', f.before);
    const nameContains =
      f.nameContains === undefined ? null : checkName(where, 'nameContains', f.nameContains, 'receipt');
    // One more than asked tells whether a next page exists.
    const rows = await databaseCall(where, () =>
      this.reads.admin.searchJobs({ ...checked, nameContains, now: this.clock.now(), before, limit: limit + 1 }),
    );
    const jobs = rows.slice(0, limit);
    return { jobs, next: rows.length > limit ? jobs[jobs.length - 1]!.id : null };
  }

  /**
   * A job with its history, its steps, its dependency edges (parents,
   * children), the children its ctx.invoke() enqueued (and, in `invokedBy`,
   * the parent that invoked it) and its batch; null if unknown. `stepResults: true` adds each
   * step's stored result.
   */
  async detail(id: string, options: GetJobOptions = {}): Promise<JobDetail | null> {
    const jobId = checkId('JobsAdmin.detail()', id);
    const where = `JobsAdmin.detail(${jobId})`;
    const o = checkOptions(where, options, '{ stepResults: true }', GET_JOB_SHAPE) ?? {};
    const job = await this.byId.get(jobId, o);
    if (!job) return null;
    const [edges, batch] = await Promise.all([
      databaseCall(where, () => this.reads.admin.jobEdges(jobId, MAX_DETAIL_CHILDREN + 1)),
      job.batchId ? this.byId.batchStatus(job.batchId) : Promise.resolve(null),
    ]);
    return {
      ...job,
      parents: edges.parents,
      children: edges.children.slice(0, MAX_DETAIL_CHILDREN),
      moreChildren: edges.children.length > MAX_DETAIL_CHILDREN,
      invoked: edges.invoked.slice(0, MAX_DETAIL_CHILDREN),
      batch,
    };
  }

  /** The job with its latest history and its steps, as `JobQueue.get()` returns it; null if unknown. */
  get(id: string, options: GetJobOptions = {}): Promise<JobInfo | null> {
    return this.byId.get(id, options);
  }

  /** A page of the job's history, newest first, as `JobQueue.executions()` returns it; null if unknown. */
  executions(id: string, options: ExecutionPageOptions = {}): Promise<JobExecutionPage | null> {
    return this.byId.executions(id, options);
  }

  /** One batch with its counts; null if unknown. */
  batchStatus(id: string): Promise<BatchInfo | null> {
    return this.byId.batchStatus(id);
  }

  /** A batch's members in its order, filtered by state, a page at a time. */
  batchMembers(id: string, options: BatchMembersOptions = {}): Promise<BatchMember[]> {
    return this.byId.batchMembers(id, options);
  }

  /** A batch's members and the edges between them, for drawing; null if unknown. */
  batchGraph(id: string): Promise<BatchGraph | null> {
    return this.byId.batchGraph(id);
  }

  /** Deletes one ended job and its history; refuses a live one, a batch member, or a parent a live job waits on. */
  async delete(id: string): Promise<DeletedJob> {
    const jobId = checkId('JobsAdmin.delete()', id);
    const where = `JobsAdmin.delete(${jobId})`;
    return deletedOrThrow(where, jobId, await databaseCall(where, () => this.storage.deleteJob(jobId)));
  }

  /** A job queued for later (a delay, a retry's backoff) becomes due now, and idle workers are woken. */
  async runNow(id: string): Promise<RunNowResult> {
    const jobId = checkId('JobsAdmin.runNow()', id);
    const where = `JobsAdmin.runNow(${jobId})`;
    const now = this.clock.now();
    return movedOrThrow(where, jobId, now, await databaseCall(where, () => this.storage.runNow(jobId, now)));
  }

  /** Failed (by default), cancelled or skipped jobs that match → queued again with fresh attempts. */
  retryAll(filter: RetryAllFilter = {}): Promise<RetryAllResult> {
    return this.bulk.retryAll(filter);
  }

  /**
   * Live jobs that match: waiting and queued ones → cancelled now; active
   * ones are asked to stop (their signal aborts, they end cancelled). A job
   * a worker claims at the very moment its chunk runs may be passed over:
   * run it again to catch those.
   */
  cancelAll(filter: CancelAllFilter = {}): Promise<CancelAllResult> {
    return this.bulk.cancelAll(filter);
  }

  /**
   * Deletes finished jobs that ended before the given times, and settled
   * batches with their members, in rounds of `BULK_CHUNK` rows, each its own
   * short transaction; rows locked by someone else are passed over. Keeps
   * what retention keeps: a job or batch a live job still waits on, and a
   * failed job whose onFailure hook has not run. `pause` rests that many ms
   * between rounds.
   */
  async purge(options: PurgeOptions): Promise<PurgeResult> {
    const where = 'JobsAdmin.purge()';
    const { cutoffs, pause } = checkPurgeOptions(where, options);
    const run = new PurgeRun(this.storage, BULK_CHUNK, pause);
    try {
      return await run.run(cutoffs);
    } catch (error) {
      const { jobs, batches } = run.progress;
      const deleted = Object.values(jobs).reduce((a, b) => a + b, 0);
      const at = deleted || batches ? `${where} (after deleting ${deleted} job(s) and ${batches} batch(es))` : where;
      throw toDatabaseError(at, error);
    }
  }

  /**
   * Re-seals every encrypted job's values (payload, result, errors,
   * progress message, step results) and schedule's payload that use an
   * older key with the current one, in rounds of `BULK_CHUNK` jobs, each its own short transaction;
   * rows locked at that moment (a claim or an outcome in flight) are passed
   * over, so run it again until `values` is 0. Values under a key this
   * process lacks are counted in `unreadable` and left as they are.
   */
  reencrypt(): Promise<ReencryptResult> {
    return reencryptAll(this.storage, this.cipher, BULK_CHUNK);
  }

  /** Batches newest first, with their counts; members through `search({ batchId })` or `JobQueue.batchMembers()`. */
  async listBatches(filter: BatchListFilter = {}): Promise<BatchPage> {
    const where = 'JobsAdmin.listBatches()';
    const f = checkOptions(where, filter, "{ state: 'failed' }", BATCH_LIST_FILTER_SHAPE) ?? {};
    const [state] = checkStates(where, f.state, BATCH_STATES, 'failed') ?? [null];
    const name = f.name === undefined ? null : checkName(where, 'name', f.name, 'import-october');
    const before = checkCursor(where, 'before', f.before);
    const limit = checkLimit(where, f.limit, 500, 50);
    const rows = await databaseCall(where, () =>
      this.reads.admin.listBatches({ state: state ?? null, name, before, limit: limit + 1 }),
    );
    const batches = rows.slice(0, limit);
    return { batches, next: rows.length > limit ? batches[batches.length - 1]!.id : null };
  }

  /**
   * Jobs that succeeded and failed (for good) per queue and minute over the
   * last `minutes` (default 60, at most 1,440), the current minute included.
   * Read among the jobs created since one more window back (a primary-key
   * range): a job created longer before it ended is not counted.
   */
  async throughput(options: ThroughputOptions = {}): Promise<Throughput> {
    const where = 'JobsAdmin.throughput()';
    const o = checkOptions(where, options, '{ minutes: 60 }', THROUGHPUT_SHAPE) ?? {};
    const minutes = o.minutes === undefined ? 60 : checkInteger(where, 'minutes', o.minutes, 1, 1_440, 60);
    const queue = o.queue === undefined ? null : checkName(where, 'queue', o.queue, 'emails');
    const window = throughputWindow(this.clock.now(), minutes);
    const rows = await databaseCall(where, () =>
      this.reads.admin.throughput(window.since, window.until, window.createdSince, queue),
    );
    return denseThroughput(window, rows);
  }

  /**
   * The services sharing the schema (JobsModule's `service`): the build whose declarations are
   * in force, every build seen with its live instances, and how many schedules and limits each owns.
   */
  services(): Promise<ServiceInfo[]> {
    return listServices(this.services_, this.clock);
  }

  /**
   * Releases what a retired or renamed service declared: its schedules and limits lose their
   * owner, so the next service that starts takes those it declares and removes the others, and
   * its records go. An unknown name throws a JobsNotFoundError; a service with live instances is
   * refused (it would write its declarations again).
   */
  forgetService(service: string): Promise<ForgottenService> {
    return forgetService(this.services_, this.clock, service);
  }

  /** Every schedule with its next and last run. */
  listSchedules(): Promise<ScheduleInfo[]> {
    return databaseCall('JobsAdmin.listSchedules()', () => this.reads.schedules.list());
  }

  /**
   * Stops the schedule's ticks until resumed, on every instance and across restarts
   * (RecurringSchedules.pause), and resolves with the schedule as it now stands. An unknown name
   * throws a JobsNotFoundError.
   */
  async pauseSchedule(name: string): Promise<ScheduleInfo> {
    await this.schedules.pause(name);
    return (await this.schedules.get(name))!;
  }

  /**
   * Ticks again from the next tick after now; ticks that passed while paused are not caught up
   * (RecurringSchedules.resume). Resolves with the schedule as it now stands. An unknown name throws
   * a JobsNotFoundError.
   */
  async resumeSchedule(name: string): Promise<ScheduleInfo> {
    await this.schedules.resume(name);
    return (await this.schedules.get(name))!;
  }

  /** One run of the schedule now; its ticks go on as before. */
  runSchedule(name: string): Promise<{
    /** The id of the job this run enqueued. */
    jobId: string;
  }> {
    return this.schedules.runNow(name);
  }

  /** Workers stop claiming from the queue on every instance; running jobs finish (JobQueues.pause). */
  pauseQueue(queue: string): Promise<void> {
    return this.queues.pause(queue);
  }

  /** Workers claim from the queue again on every instance (JobQueues.resume). */
  resumeQueue(queue: string): Promise<void> {
    return this.queues.resume(queue);
  }

  /** Each queue's limits, paused flag and live counts, as `JobQueues.list()` shows them. */
  listQueues(): Promise<QueueInfo[]> {
    return listQueues('JobsAdmin.listQueues()', this.reads, this.codeQueues(), this.clock.now());
  }
}
