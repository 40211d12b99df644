import { Inject, Injectable, Optional } from '@nestjs/common';
import {
  checkName,
  checkOptions,
  Clock,
  databaseCall,
  describeValue,
  EARLIEST_TIME,
  JOB_LIST_STATES,
  isUuid,
  JobCipher,
  JobsError,
  JOB_LIST_FILTER_SHAPE,
  optionShape,
  type EncryptionStatus,
  type JobCounts,
  type JobListFilter,
  type JobPage,
  LOCAL_WORKER_STATUS,
  type LocalWorkerStatus,
  type LocalWorkerStatusRead,
  type QueueLag,
  type UnhandledJob,
  type ReplicaLag,
  type StateCounts,
  type WorkerInfo,
} from '../model/index.js';
import { MONITORING_READS, type MonitoringReads } from '../storage/monitoring/monitoring-reads.interface.js';
import { MONITORING_STORAGE, type MonitoringStorage } from '../storage/monitoring/monitoring-storage.interface.js';
import { MONITORING_OPTIONS, type MonitoringOptions } from './monitoring-options.js';

const DAY = 24 * 60 * 60 * 1000;
const HOUR = 60 * 60 * 1000;
const MAX_PAGE = 500;

/** What `counts()` takes. */
export interface CountsOptions {
  since?: Date;
  finished?: boolean;
  /** Read the primary even when `monitoring.replica` is set (what the health indicator does); default false. */
  fromPrimary?: boolean;
}

/** What `workers()` takes. */
export interface WorkersOptions {
  stoppedWithin?: number;
  /** Read the primary even when `monitoring.replica` is set; default false. */
  fromPrimary?: boolean;
}

/** What `queueLag()` and `unhandledJobs()` take. */
export interface MonitorReadOptions {
  /** Read the primary even when `monitoring.replica` is set; default false. */
  fromPrimary?: boolean;
}

const COUNTS_SHAPE = optionShape<CountsOptions>({ since: true, finished: true, fromPrimary: true });
const WORKERS_SHAPE = optionShape<WorkersOptions>({ stoppedWithin: true, fromPrimary: true });
const READ_SHAPE = optionShape<MonitorReadOptions>({ fromPrimary: true });

const emptyCounts = (): StateCounts => ({
  waiting: 0,
  queued: 0,
  scheduled: 0,
  active: 0,
  succeeded: 0,
  failed: 0,
  cancelled: 0,
  skipped: 0,
});

/**
 * What operators ask of the system: how much work is where, which workers
 * are up, which jobs are in a state. One job in detail, retry and cancel are
 * on `JobQueue` (`get`, `retry`, `cancel`). With `monitoring.replica` set it
 * reads the replica (a moment behind the primary: `replicaLag()` says how
 * far), unless a call asks for `fromPrimary`.
 */
@Injectable()
export class JobsMonitor {
  constructor(
    @Inject(MONITORING_STORAGE) private readonly primary: MonitoringStorage,
    @Inject(MONITORING_READS) private readonly reads: MonitoringReads,
    @Inject(MONITORING_OPTIONS) private readonly options: MonitoringOptions,
    private readonly clock: Clock,
    private readonly cipher: JobCipher,
    @Optional() @Inject(LOCAL_WORKER_STATUS) private readonly local?: LocalWorkerStatusRead,
  ) {}

  /**
   * This instance's worker: whether it should run here (`worker.enabled`
   * and a registered handler), whether it runs, and when it last wrote its
   * heartbeat row. What the readiness check (`JobsHealthIndicator.isHealthy`)
   * judges this instance by; no database read.
   */
  localWorker(): LocalWorkerStatus {
    const status = this.local?.() ?? { expected: false, running: false, id: null, lastHeartbeat: null };
    const beat = status.lastHeartbeat;
    const alive =
      status.running && beat !== null && this.clock.now().getTime() - beat.getTime() <= this.options.staleAfter;
    return { ...status, alive };
  }

  /** This process's encryption: its key ids, the current one, and the key ids its worker met on jobs and lacks. */
  encryption(): EncryptionStatus {
    return this.cipher.status();
  }

  /**
   * Jobs by queue and state. Waiting, queued, scheduled and active are exact
   * and cheap at any history size; finished states count the jobs created
   * since `since` (default: the last 24 hours), read by key range. With
   * `finished: false` they are left at 0 and not read at all (for health
   * checks and frequent polls).
   */
  async counts(options: CountsOptions = {}): Promise<JobCounts> {
    options =
      checkOptions('JobsMonitor.counts()', options, '{ since: new Date(Date.now() - 3_600_000) }', COUNTS_SHAPE) ?? {};
    const now = this.clock.now();
    const since = options.since ?? new Date(now.getTime() - DAY);
    if (!(since instanceof Date) || Number.isNaN(since.getTime())) {
      throw new JobsError(
        `JobsMonitor.counts(): "since" must be a valid Date, got ${describeValue(options.since)}. Potential fix: pass new Date(...) or leave it out for the last 24 hours.`,
      );
    }
    if (options.finished !== undefined && typeof options.finished !== 'boolean') {
      throw new JobsError(
        `JobsMonitor.counts(): "finished" must be true or false, got ${describeValue(options.finished)}. Potential fix: { finished: false } for the live states only.`,
      );
    }
    const total = emptyCounts();
    const queues: Record<string, StateCounts> = {};
    const finishedSince = options.finished === false ? null : since;
    const storage = this.source('JobsMonitor.counts()', options.fromPrimary);
    const rows = await databaseCall('JobsMonitor.counts()', () => storage.counts(now, finishedSince));
    for (const { queue, state, n } of rows) {
      const byQueue = (queues[queue] ??= emptyCounts());
      byQueue[state] += n;
      total[state] += n;
    }
    return { since, total, queues };
  }

  /**
   * Worker processes: the running ones, and those stopped within
   * `stoppedWithin` ms (default an hour). `alive` is false for a worker
   * that stopped, or that has not beaten for `staleAfter` (it crashed or
   * stalled; its leases expire and its jobs run elsewhere).
   */
  async workers(options: WorkersOptions = {}): Promise<WorkerInfo[]> {
    options = checkOptions('JobsMonitor.workers()', options, '{ stoppedWithin: 3_600_000 }', WORKERS_SHAPE) ?? {};
    const now = this.clock.now().getTime();
    const within = options.stoppedWithin ?? HOUR;
    if (typeof within !== 'number' || !Number.isFinite(within) || within < 0) {
      throw new JobsError(
        `JobsMonitor.workers(): "stoppedWithin" must be a duration in ms (>= 0), got ${describeValue(within)}. Potential fix: pass e.g. 3_600_000 for an hour.`,
      );
    }
    // No worker stopped before 1970: a longer window is all of them, not a date PostgreSQL refuses.
    const stoppedSince = new Date(Math.max(now - within, EARLIEST_TIME));
    const storage = this.source('JobsMonitor.workers()', options.fromPrimary);
    const rows = await databaseCall('JobsMonitor.workers()', () => storage.workers(stoppedSince));
    return rows.map((w) => ({
      ...w,
      alive: w.stoppedAt === null && now - w.lastHeartbeat.getTime() <= this.options.staleAfter,
    }));
  }

  /**
   * Jobs newest first, filtered by state(s), queue and name; page with
   * `before: page.next`. States read as `counts()` reports them: `queued`
   * is due now, `scheduled` queued for later.
   */
  async jobs(filter: JobListFilter = {}): Promise<JobPage> {
    filter = checkOptions('JobsMonitor.jobs()', filter, "{ state: 'failed' }", JOB_LIST_FILTER_SHAPE) ?? {};
    const states = filter.state === undefined ? null : [filter.state].flat();
    for (const state of states ?? []) {
      if (!(JOB_LIST_STATES as readonly string[]).includes(state)) {
        throw new JobsError(
          `JobsMonitor.jobs(): unknown state ${typeof state === 'string' && state.length <= 60 ? JSON.stringify(state) : describeValue(state)}. Potential fix: one of ${JOB_LIST_STATES.join(', ')}.`,
        );
      }
    }
    const limit = filter.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
      throw new JobsError(
        `JobsMonitor.jobs(): "limit" must be an integer from 1 to ${MAX_PAGE}, got ${describeValue(limit)}. Potential fix: page with "before" instead of asking for more.`,
      );
    }
    if (filter.before !== undefined && !isUuid(filter.before)) {
      throw new JobsError(
        `JobsMonitor.jobs(): "before" must be a job id (a UUID), got ${describeValue(filter.before)}. Potential fix: pass the "next" of the previous page.`,
      );
    }
    for (const field of ['queue', 'name'] as const) {
      const value = filter[field];
      if (value !== undefined)
        checkName('JobsMonitor.jobs()', field, value, field === 'queue' ? 'emails' : 'send-receipt');
    }
    // One more than asked tells whether a next page exists.
    const rows = await databaseCall('JobsMonitor.jobs()', () =>
      this.reads.admin.searchJobs({
        states,
        queue: filter.queue ?? null,
        name: filter.name ?? null,
        batchId: null,
        idPrefix: null,
        ids: null,
        nameContains: null,
        now: this.clock.now(),
        before: filter.before ?? null,
        limit: limit + 1,
      }),
    );
    const jobs = rows.slice(0, limit);
    return { jobs, next: rows.length > limit ? jobs[jobs.length - 1]!.id : null };
  }

  /**
   * Each queue's due backlog: how many queued jobs are due now and the
   * run_at of the oldest one (how long the queue's head has waited). Only
   * queues with due jobs are listed, by name. Cheap enough for every scrape:
   * it reads the queued jobs' index, as `counts({ finished: false })` does.
   */
  async queueLag(options: MonitorReadOptions = {}): Promise<QueueLag[]> {
    options = checkOptions('JobsMonitor.queueLag()', options, '{ fromPrimary: true }', READ_SHAPE) ?? {};
    const storage = this.source('JobsMonitor.queueLag()', options.fromPrimary);
    const now = this.clock.now();
    return databaseCall('JobsMonitor.queueLag()', () => storage.queueLag(now));
  }

  /**
   * Job names that have due jobs and no live worker to run them: no
   * worker alive (as `workers()` judges it) both serves their queue and
   * registers the name (a job type removed from the code, a service not
   * deployed, a worker that serves other queues). Claims skip such jobs, so
   * without this they wait silently. A live worker of a build that did not
   * record its job names counts as handling every name of its queues.
   * Waiting jobs are not due (they wait on parents). Cheap at any backlog:
   * it looks at the first 100 due jobs of each queue in claim order (and
   * the first 100 with a group or serial key), where such jobs stay, since
   * claims pass over them; behind a larger backlog of jobs that run first,
   * they show once it drains. `unhandledJobs.failAfter` fails them once
   * due that long.
   */
  async unhandledJobs(options: MonitorReadOptions = {}): Promise<UnhandledJob[]> {
    options = checkOptions('JobsMonitor.unhandledJobs()', options, '{ fromPrimary: true }', READ_SHAPE) ?? {};
    const storage = this.source('JobsMonitor.unhandledJobs()', options.fromPrimary);
    const now = this.clock.now();
    const liveSince = new Date(now.getTime() - this.options.staleAfter);
    return databaseCall('JobsMonitor.unhandledJobs()', () => storage.unhandledJobs(now, liveSince));
  }

  /**
   * How far the monitoring replica is behind the primary: the WAL bytes it
   * has yet to replay and the time that stands for. Null when no
   * `monitoring.replica` is set (reads go to the primary).
   */
  async replicaLag(): Promise<ReplicaLag | null> {
    return databaseCall('JobsMonitor.replicaLag()', () => this.reads.lag());
  }

  /** Where a read goes: the primary when asked (or without a replica), the monitoring reads otherwise. */
  private source(where: string, fromPrimary: unknown): MonitoringStorage {
    if (fromPrimary !== undefined && typeof fromPrimary !== 'boolean') {
      throw new JobsError(
        `${where}: "fromPrimary" must be true or false, got ${describeValue(fromPrimary)}. Potential fix: { fromPrimary: true } to read the primary.`,
      );
    }
    return fromPrimary ? this.primary : this.reads.monitoring;
  }
}
