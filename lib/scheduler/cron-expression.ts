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

/** A sign and a digit, bare or after UTC/GMT/UT/Z: '+02:00', '-0500', '+2', 'UTC+2', 'GMT-05:30'. */
const OFFSET_LIKE = /^\s*(?:UTC|GMT|UT|Z)?\s*[+\-\u2212]\s*\d/i;
/** The tz database's own names of that shape (links to UTC), accepted as names. */
const ZONE_NAMES_LIKE_OFFSETS = /^GMT[+-]0$/i;
/** An offset of hours and minutes: sign, hours, minutes. */
const OFFSET = /^\s*(?:UTC|GMT|UT|Z)?\s*([+\-\u2212])\s*(\d{2}|\d(?!\d))(?::?(\d{2}))?\s*$/i;

/**
 * Whether `timeZone` is written as a UTC offset rather than a zone name.
 *
 * Offsets are refused, on every Node version alike. Node 22 and 24 accept
 * '+02:00', '-0500' and '+02' in Intl.DateTimeFormat (ECMA-402's offset time
 * zones) and Node 20 throws; the cron package's luxon accepts 'UTC+2', which
 * Intl refuses everywhere, and '+02:00' only where Intl does. A rule that
 * asks those parsers answers differently per Node version, so a fleet in
 * the middle of an upgrade would disagree about which schedules are valid.
 * A fixed offset is also rarely what is meant ('+02:00' for Berlin is an hour
 * off all winter): a zone name says it, and reads the same everywhere. A
 * fixed offset that is really wanted has a name too (fixedOffsetZone).
 */
export function isUtcOffset(timeZone: string): boolean {
  return OFFSET_LIKE.test(timeZone) && !ZONE_NAMES_LIKE_OFFSETS.test(timeZone);
}

/**
 * The tz database's zone for the fixed offset `timeZone` is written as:
 * 'UTC' for zero, 'Etc/GMT-2' for '+02:00' (those names carry the POSIX
 * sign, the inverse of ISO 8601's). Null where there is none: part of an
 * hour, beyond Etc/GMT-14 .. Etc/GMT+12, or not an offset this reads.
 */
export function fixedOffsetZone(timeZone: string): string | null {
  const m = OFFSET.exec(timeZone);
  if (!m) return null;
  const east = m[1] === '+';
  const minutes = Number(m[2]) * 60 + Number(m[3] ?? 0);
  if (minutes === 0) return 'UTC';
  if (minutes % 60 !== 0 || minutes > (east ? 14 : 12) * 60) return null;
  return `Etc/GMT${east ? '-' : '+'}${minutes / 60}`;
}

/**
 * Canonical IANA name (`europe/berlin` → `Europe/Berlin`), or null. Intl
 * refuses `local` and `system`, which would mean a different zone on each
 * instance; UTC offsets are refused before Intl is asked (isUtcOffset).
 * Which names exist and which canonical name a link has come from the tz data
 * Node's ICU carries (Node 22 and 24 agree; Node 20 turned 'EST5EDT' into
 * 'America/New_York').
 */
export function canonicalTimeZone(timeZone: string): string | null {
  if (isUtcOffset(timeZone)) return null;
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
