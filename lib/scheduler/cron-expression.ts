import { CronTime } from 'cron';
import type { CatchUpMode } from '../model/index.js';

/** Most jobs one tick of catch-up 'all' writes. */
export const MAX_CATCH_UP_TICKS = 1_000;

/**
 * A cron expression in a time zone, parsed by the `cron` package: the same
 * code that times @nestjs/schedule's CronJobs, so the in-process wake-up and
 * the next_run_at stored in the database always name the same instant, DST
 * changes included.
 */
export class CronSchedule {
  private readonly time: CronTime;

  private constructor(
    readonly expression: string,
    readonly timeZone: string,
  ) {
    this.time = new CronTime(expression, timeZone);
  }

  /** Throws the parser's own error on a bad expression or zone; callers add context. */
  static parse(expression: string, timeZone: string): CronSchedule {
    return new CronSchedule(expression, timeZone);
  }

  /**
   * The first tick strictly after `after` (ticks have whole seconds). Throws
   * for an expression that never fires (`0 0 31 2 *` parses, but no date matches).
   */
  next(after: Date): Date {
    return this.time.getNextDateFrom(after, this.timeZone).toJSDate();
  }

  /** The last tick in [notBefore, at], or null when there is none. */
  latestAtOrBefore(at: Date, notBefore: Date): Date | null {
    // No backwards iteration in the parser: take a window back from `at`,
    // widen it until it holds a tick, then walk forward through it. Starting
    // at one period (the gap between the next two ticks) makes regular
    // schedules take one window; irregular ones double a few times.
    const following = this.next(at);
    let span = Math.max(1_000, this.next(following).getTime() - following.getTime());
    for (; ; span *= 2) {
      const from = Math.max(at.getTime() - span, notBefore.getTime() - 1);
      let tick = this.next(new Date(from));
      if (tick <= at) {
        for (let after = this.next(tick); after <= at; after = this.next(after)) tick = after;
        return tick;
      }
      if (from <= notBefore.getTime() - 1) return null;
    }
  }
}

/**
 * Canonical IANA name (`europe/berlin` → `Europe/Berlin`), or null. Intl
 * refuses `local` and `system`, which would mean a different zone on each
 * instance.
 */
export function canonicalTimeZone(timeZone: string): string | null {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

export interface TickPlan {
  /** Ticks to turn into jobs, oldest first. */
  run: Date[];
  /** What next_run_at becomes: the first tick after now. */
  next: Date;
  /** catch-up 'all' found more than MAX_CATCH_UP_TICKS missed ticks and ran only the first ones. */
  truncated: boolean;
}

/**
 * Which of the ticks from `due` to `now` become jobs. The latest tick counts
 * as on time when it is at most `misfireThresholdMs` old (a timer fires a
 * little after its tick, a poll later); anything older was missed while no
 * instance was running, and `catchUp` decides about it.
 */
export function planTicks(
  schedule: CronSchedule,
  due: Date,
  now: Date,
  catchUp: CatchUpMode,
  misfireThresholdMs: number,
): TickPlan {
  if (due > now) return { run: [], next: due, truncated: false };
  const onTime = (tick: Date) => now.getTime() - tick.getTime() <= misfireThresholdMs;
  const afterDue = schedule.next(due);
  // The common case, one tick due: the parser is slow enough (about a
  // millisecond a call) that skipping the search below is worth it.
  if (afterDue > now) return { run: catchUp !== 'none' || onTime(due) ? [due] : [], next: afterDue, truncated: false };
  const next = schedule.next(now);
  if (catchUp === 'all') {
    const run: Date[] = [];
    for (let tick = due; tick <= now; tick = schedule.next(tick)) {
      if (run.length === MAX_CATCH_UP_TICKS) return { run, next, truncated: true };
      run.push(tick);
    }
    return { run, next, truncated: false };
  }
  // `due` is itself a tick (or the first one after a redefinition), so the latest is never before it.
  const latest = schedule.latestAtOrBefore(now, due) ?? due;
  return { run: catchUp === 'latest' || onTime(latest) ? [latest] : [], next, truncated: false };
}
