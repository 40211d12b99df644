import type { JobState } from './job-state.js';

/** What happens to ticks that passed while no instance was running the scheduler. */
export const CATCH_UP_MODES = ['latest', 'all', 'none'] as const;
/** What a schedule does about ticks missed while no instance ran: one run for all (`latest`), each (`all`) or none. */
export type CatchUpMode = (typeof CATCH_UP_MODES)[number];

/** Whether a tick may start a run while the previous run of the same schedule is still queued or active. */
export const OVERLAP_MODES = ['allow', 'skip'] as const;
/** Whether a tick starts a run while the previous one is still queued or running (`allow`) or is skipped (`skip`). */
export type OverlapMode = (typeof OVERLAP_MODES)[number];

/** `code`: declared with `@Cron` and owned by the deployed code; `dynamic`: created at runtime. */
export type ScheduleSource = 'code' | 'dynamic';

/** The job options a tick's job is written with, fixed when the schedule is written. */
export interface ScheduledJobOptions {
  queue: string;
  priority: number;
  maxAttempts: number;
  timeoutMs: number | null;
}

/** A validated schedule, ready to be stored. */
export interface ScheduleDefinition {
  name: string;
  jobName: string;
  cron: string;
  timeZone: string;
  /** Already serialised JSON. */
  payloadJson: string;
  catchUp: CatchUpMode;
  overlap: OverlapMode;
  jobOptions: ScheduledJobOptions;
  /** The first tick after the definition was written; kept when cron and time zone did not change. */
  nextRunAt: Date;
  /** Its job is encrypted: the payload is stored sealed, and each tick's job carries it so. */
  encrypted?: boolean;
}

/** What `RecurringSchedules.list()` returns for one schedule. */
export interface ScheduleInfo {
  name: string;
  jobName: string;
  cron: string;
  timeZone: string;
  payload: unknown;
  source: ScheduleSource;
  catchUp: CatchUpMode;
  overlap: OverlapMode;
  paused: boolean;
  /** The next tick the database will turn into a job; null while paused. */
  nextRunAt: Date | null;
  /** When the last job this schedule started was due: its tick, or the time of a `runNow()`. */
  lastRunAt: Date | null;
  lastJobId: string | null;
  /** State of that job now, or null when it was deleted. */
  lastJobState: JobState | null;
  /** Ticks recorded as skipped by `overlap: 'skip'`; each also left a job row in state `skipped`. */
  skippedCount: number;
  lastSkippedAt: Date | null;
  updatedAt: Date;
}

/**
 * What operators do to schedules, as the scheduler offers it
 * (`RecurringSchedules`). The admin layer reaches it through this token, so
 * that it never depends on the scheduler.
 */
export interface ScheduleControl {
  list(): Promise<ScheduleInfo[]>;
  get(name: string): Promise<ScheduleInfo | null>;
  pause(name: string): Promise<void>;
  resume(name: string): Promise<void>;
  /** Starts one run now, outside the timing; the ticks go on as before. */
  runNow(name: string): Promise<{ jobId: string }>;
}
export const SCHEDULE_CONTROL = Symbol('SCHEDULE_CONTROL');
