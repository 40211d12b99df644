import type { QueueLag, StateCounts, UnhandledJob, WorkerInfo } from '../../model/index.js';

/** One count of the `counts` statement: a queue, a state ('scheduled' for queued-for-later), a number. */
export interface CountRow {
  queue: string;
  state: keyof StateCounts;
  n: number;
}

/** A worker's row; whether it is alive is the monitor's call. */
export type WorkerRow = Omit<WorkerInfo, 'alive'>;

/** Read-only queries for operators; nothing here is on a worker's path. */
export interface MonitoringStorage {
  /** Finished states are not read when `finishedSince` is null. */
  counts(now: Date, finishedSince: Date | null): Promise<CountRow[]>;
  workers(stoppedSince: Date): Promise<WorkerRow[]>;
  /** Per queue with due jobs: how many are due at `now`, and the oldest one's run_at. */
  queueLag(now: Date): Promise<QueueLag[]>;
  /**
   * Job names with jobs due at `now` that no live worker (not stopped, its heartbeat at or after
   * `liveSince`) handles in their queue, by queue and name.
   */
  unhandledJobs(now: Date, liveSince: Date): Promise<UnhandledJob[]>;
}

export const MONITORING_STORAGE = Symbol('MONITORING_STORAGE');
