import { createHash } from 'node:crypto';
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
  /** The serial key the job type declares, for the schedule's payload; absent when none. */
  serialKey?: string;
  /** The group the job type declares, for the schedule's payload; absent when none. */
  groupKey?: string;
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
  /**
   * The schedule's name, its key: the `@Cron`'s `name` (default its job's name), or the one given to
   * `RecurringSchedules.upsert()`.
   */
  name: string;
  /** The job each run enqueues, as in `@Job(name)`. */
  jobName: string;
  /** Its cron expression: five fields, or six with a leading seconds field. */
  cron: string;
  /** The IANA time zone the expression is read in; default `UTC`. */
  timeZone: string;
  /** The payload each run's job gets; a placeholder for an encrypted one this process cannot open. */
  payload: unknown;
  /** `code` for a `@Cron`, `dynamic` for one made with `RecurringSchedules.upsert()`. */
  source: ScheduleSource;
  /**
   * The service whose code declares it (JobsModule's `service`), for a `@Cron`; null for a
   * dynamic schedule, or a code-defined one written before schedules had owners.
   */
  service: string | null;
  /** What it does about ticks missed while no instance ran; default `latest`. */
  catchUp: CatchUpMode;
  /** Whether a tick runs while the previous run is still waiting, queued or active; default `allow`. */
  overlap: OverlapMode;
  /** True from `RecurringSchedules.pause()` until `resume()`: no tick becomes a job. */
  paused: boolean;
  /** The next tick the database will turn into a job; null while paused. */
  nextRunAt: Date | null;
  /** When the last job this schedule started was due: its tick, or the time of a `runNow()`. */
  lastRunAt: Date | null;
  /** The id of the job of its last run (a tick or `runNow()`); null before its first run. */
  lastJobId: string | null;
  /** State of that job now, or null when it was deleted. */
  lastJobState: JobState | null;
  /** Ticks recorded as skipped by `overlap: 'skip'`; each also left a job row in state `skipped`. */
  skippedCount: number;
  /** The time of the latest tick `overlap: 'skip'` skipped; null when none was skipped. */
  lastSkippedAt: Date | null;
  /** When its definition was last written, or it was last paused or resumed. */
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

/**
 * What a definition declares, as a short digest: two services declaring one schedule name agree
 * when their digests do. The next tick is left out (it depends on when the definition was built),
 * and so is the stored payload (sealed differently on every write when encrypted).
 */
export function scheduleDefinitionHash(d: ScheduleDefinition): string {
  const declared = [d.jobName, d.cron, d.timeZone, d.payloadJson, d.jobOptions, d.catchUp, d.overlap, !!d.encrypted];
  return createHash('sha256').update(JSON.stringify(declared)).digest('hex').slice(0, 32);
}
