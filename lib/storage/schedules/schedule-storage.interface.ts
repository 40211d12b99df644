import type { CatchUpMode, JobState, ScheduleDefinition, ScheduleInfo } from '../../model/index.js';

/** What arms an in-process timer. */
export interface ScheduleTiming {
  name: string;
  cron: string;
  timeZone: string;
  paused: boolean;
}

export interface DueSchedule {
  name: string;
  cron: string;
  timeZone: string;
  catchUp: CatchUpMode;
  nextRunAt: Date;
}

/** One compare-and-set on a due tick. */
export interface FireRequest {
  name: string;
  /** The next_run_at this instance read as due: the compare. */
  due: Date;
  /** What next_run_at becomes: the set. */
  next: Date;
  /** Ticks to turn into jobs (empty when catch-up skips them all). */
  ticks: readonly Date[];
  jobIds: readonly string[];
  now: Date;
}

export interface FireResult {
  /** Whether this instance moved next_run_at; false when another one did first. */
  won: boolean;
  queued: number;
  skipped: number;
}

export type RemoveScheduleResult = 'removed' | 'not-found' | 'code-defined';

export type RunScheduleResult =
  | { outcome: 'queued'; queue: string }
  | { outcome: 'not-found' }
  /** overlap 'skip', and the last run is still live. */
  | { outcome: 'busy'; jobId: string; state: JobState };

export interface ScheduleStorage {
  /** false when a code-defined schedule holds the name. */
  upsertDynamic(definition: ScheduleDefinition, now: Date): Promise<boolean>;
  pause(name: string, now: Date): Promise<boolean>;
  /** false when the schedule is missing, not paused, or its timing changed meanwhile. */
  resume(name: string, next: Date, expected: { cron: string; timeZone: string }, now: Date): Promise<boolean>;
  removeDynamic(name: string): Promise<RemoveScheduleResult>;
  list(): Promise<ScheduleInfo[]>;
  get(name: string): Promise<ScheduleInfo | null>;
  timings(): Promise<ScheduleTiming[]>;
  due(now: Date): Promise<DueSchedule[]>;
  fire(request: FireRequest): Promise<FireResult>;
  /** Writes one job of the schedule, due `now`, with id `jobId`. */
  runNow(name: string, jobId: string, now: Date): Promise<RunScheduleResult>;
}

export const SCHEDULE_STORAGE = Symbol('SCHEDULE_STORAGE');
