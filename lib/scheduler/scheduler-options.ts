import { JobsError } from '../model/index.js';

/** The scheduler of this instance: whether it turns schedule ticks into jobs, and how often it looks for changes. */
export interface SchedulerOptions {
  /**
   * false: this instance arms no timers and turns no ticks into jobs (other
   * instances do). Code-defined schedules are still written at start.
   */
  enabled?: boolean;
  /**
   * false: leave the stored code-defined schedules as they are at start,
   * instead of writing this app's `@Cron` declarations over them (and removing
   * those it does not declare). For processes that boot JobsModule without
   * the app's handlers, such as the CLI; default true.
   */
  syncCodeSchedules?: boolean;
  /** Fallback look at the schedule table, in ms, for a missed change notification; default 5000. */
  pollInterval?: number;
  /**
   * How late a tick may be seen and still count as on time, in ms; default
   * 60 000. Only `catchUp: 'none'` uses it: older ticks count as missed.
   */
  misfireThreshold?: number;
}

export type ResolvedSchedulerOptions = Required<SchedulerOptions> & {
  /** Names this module's timers in a SchedulerRegistry that other modules (other schemas) may share. */
  timerPrefix: string;
};

export const SCHEDULER_OPTIONS = Symbol('SCHEDULER_OPTIONS');

export function resolveSchedulerOptions(o: SchedulerOptions = {}, schema: string): ResolvedSchedulerOptions {
  for (const field of ['pollInterval', 'misfireThreshold'] as const) {
    const v = o[field];
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 1)) {
      throw new JobsError(
        `JobsModule "scheduler.${field}" must be a whole number of milliseconds >= 1, got ${String(v)}. Potential fix: scheduler: { ${field}: ${field === 'pollInterval' ? 5000 : 60000} }.`,
      );
    }
  }
  return {
    enabled: o.enabled ?? true,
    syncCodeSchedules: o.syncCodeSchedules ?? true,
    pollInterval: o.pollInterval ?? 5_000,
    misfireThreshold: o.misfireThreshold ?? 60_000,
    timerPrefix: `nestjs-durable-jobs:${schema}:`,
  };
}
