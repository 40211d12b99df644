import type { JobListState } from './admin.js';
import type { JobSummary } from './records.js';

/** Jobs of one queue (or of all), by state. */
export interface StateCounts {
  /** Waiting on parents or a batch. */
  waiting: number;
  /** Queued and due now: the backlog a worker would claim. */
  queued: number;
  /** Queued for later (a delay, a retry's backoff, a schedule's next tick). */
  scheduled: number;
  /** Running on a worker now. */
  active: number;
  /** Finished states count jobs created since `JobCounts.since` only. */
  succeeded: number;
  /** Failed for good; like `succeeded`, of the jobs created since `JobCounts.since`. */
  failed: number;
  /** Cancelled; like `succeeded`, of the jobs created since `JobCounts.since`. */
  cancelled: number;
  /** Skipped; like `succeeded`, of the jobs created since `JobCounts.since`. */
  skipped: number;
}

/** What `JobsMonitor.counts()` returns: jobs by state, in total and per queue. */
export interface JobCounts {
  /** Live states are exact; finished ones are jobs created since this time. */
  since: Date;
  /** Every queue, added up. */
  total: StateCounts;
  /** Queues with at least one counted job, by name. */
  queues: Record<string, StateCounts>;
}

/** One worker process, as its heartbeat row says. */
export interface WorkerInfo {
  /** The worker's id, `<host>:<pid>:<6 hex digits>`: a job's `workerId` names it. */
  id: string;
  /** The host name of the worker's machine (`os.hostname()`). */
  host: string;
  /** The process id of the worker on that host. */
  pid: number;
  /** Queues it serves; empty means every queue. */
  queues: string[];
  /** The most jobs it runs at once (its `worker.concurrency` option). */
  concurrency: number;
  /** Jobs it was running at its last heartbeat. */
  active: number;
  /** When it first registered. */
  startedAt: Date;
  /** Its last heartbeat, written with each lease renewal (every third of `worker.lease`). */
  lastHeartbeat: Date;
  /** When it stopped; null while it runs, or when it ended without stopping (a crash). */
  stoppedAt: Date | null;
  /** Not stopped, and its last heartbeat is recent enough (see `JobsMonitor.workers`). */
  alive: boolean;
  /**
   * The database connections its instance held open at its last heartbeat, and the most it may open
   * (`maxConnections`); null for a worker of a build that did not record them.
   */
  connections: {
    /** Connections open at its last heartbeat; null when its build did not count them. */
    open: number | null;
    /** The most its instance may open: its `maxConnections`. */
    max: number;
  } | null;
}

/** A worker as the dashboard's JSON and the CLI show it: `queues: 'all'` for one that serves every queue. */
export type WorkerView = Omit<WorkerInfo, 'queues'> & { queues: string[] | 'all' };

export function workerView(worker: WorkerInfo): WorkerView {
  return { ...worker, queues: worker.queues.length ? worker.queues : 'all' };
}

/** Which jobs `JobsMonitor.jobs()` lists, and the page. */
export interface JobListFilter {
  /**
   * One state or several, read as `counts()` reports them: `queued` is a job
   * due now and `scheduled` one queued for later; default every state.
   */
  state?: JobListState | JobListState[];
  /** Only jobs of this queue. */
  queue?: string;
  /** Only jobs of this name, as in `@Job(name)`. */
  name?: string;
  /** Jobs created before this job (its id): the `next` of the previous page. */
  before?: string;
  /** 1 to 500; default 50. */
  limit?: number;
}

/** A page of jobs, newest first, and the key of the next page. */
export interface JobPage {
  /** The jobs of this page, newest first. */
  jobs: JobSummary[];
  /** Pass as `before` for the next page; null on the last page. */
  next: string | null;
}

/**
 * The queues the app's code names (declared in `queues`, or the queue of a registered job), known
 * before any of them holds a job: a metric or a view can show them at 0 from the first scrape.
 */
export const CODE_QUEUES = Symbol('CODE_QUEUES');
export type CodeQueues = () => readonly string[];

/** One queue's due backlog, as `JobsMonitor.queueLag()` reads it. */
export interface QueueLag {
  /** The queue's name. */
  queue: string;
  /** Its queued jobs that are due now (run_at reached): what a worker of the queue would claim next. */
  due: number;
  /** The run_at of its oldest due job: now minus this is how long the queue's head has waited. */
  oldestDueAt: Date | null;
}

/** This instance's worker, as its readiness check sees it (`JobsMonitor.localWorker()`). */
export interface LocalWorkerStatus {
  /** It should run here: `worker.enabled` and at least one registered handler. */
  expected: boolean;
  /** Started, and not stopping. */
  running: boolean;
  /** Its id (a `WorkerInfo.id`) while it runs; null otherwise. */
  id: string | null;
  /** When its row was last written (registration or heartbeat) on this instance's clock; null before. */
  lastHeartbeat: Date | null;
  /** Running, and its last heartbeat within its lease: alive as `JobsMonitor.workers()` judges workers. */
  alive: boolean;
}

/** Reads this instance's worker status; provided by JobsModule. */
export const LOCAL_WORKER_STATUS = Symbol('LOCAL_WORKER_STATUS');
export type LocalWorkerStatusRead = () => Omit<LocalWorkerStatus, 'alive'>;

/** Due jobs of one name that no live worker handles, as `JobsMonitor.unhandledJobs()` reads them. */
export interface UnhandledJob {
  /** The job name, as in `@Job(name)`. */
  name: string;
  /** The queue they wait in. */
  queue: string;
  /** How many of them are due now. */
  due: number;
  /** The run_at of the oldest of them: how long they have waited. */
  oldestDueAt: Date;
}

/**
 * How far the monitoring replica (`monitoring.replica`) is behind the
 * primary, as `JobsMonitor.replicaLag()` measured it.
 */
export interface ReplicaLag {
  /** False when the replica is not a streaming standby (pg_is_in_recovery() is false): no lag can be measured. */
  standby: boolean;
  /** WAL the primary has written that the replica has not replayed yet, in bytes; null when not a standby. */
  bytes: number | null;
  /**
   * How far behind the replica's reads are, in ms: 0 when it has replayed
   * everything the primary had written when measured, otherwise the time
   * since the last transaction it replayed committed on the primary (an
   * upper bound after the primary was idle). Null when not a standby, or
   * when it has replayed no transaction since it started.
   */
  ms: number | null;
  /** Replay was paused on the replica (pg_wal_replay_pause()): its lag grows until it is resumed. */
  replayPaused: boolean;
  /** When it was measured (the replica's clock). */
  measuredAt: Date;
}
