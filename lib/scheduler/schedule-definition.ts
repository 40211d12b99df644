import type { JobRegistry } from '../discovery/job-registry.js';
import {
  CATCH_UP_MODES,
  checkName,
  describeValue,
  MAX_NAME_LENGTH,
  unstorableText,
  JobsError,
  OVERLAP_MODES,
  type CatchUpMode,
  type OverlapMode,
  type ScheduleDefinition,
  type ScheduledJobOptions,
} from '../model/index.js';
import { applyDeclaredKey, checkGroupRated, serializePayload } from '../model/index.js';
import { canonicalTimeZone, CronSchedule, fixedOffsetZone, isUtcOffset } from './cron-expression.js';

interface ScheduleInput {
  name: string;
  jobName: string;
  cron: unknown;
  timeZone?: unknown;
  payload?: unknown;
  catchUp?: unknown;
  overlap?: unknown;
}

/**
 * Checks a schedule from @Cron or from `RecurringSchedules.upsert` and turns
 * it into what storage writes. `where` names the origin (the class, or the
 * call) in every error, so the message points at the line to change.
 */
export function defineSchedule(
  where: string,
  input: ScheduleInput,
  jobOptions: ScheduledJobOptions,
  maxPayloadBytes: number,
  now: Date,
): ScheduleDefinition {
  checkName(where, 'name', input.name, 'nightly-report');
  if (
    typeof input.cron !== 'string' ||
    input.cron.trim() === '' ||
    input.cron.length > MAX_NAME_LENGTH ||
    unstorableText(input.cron)
  ) {
    throw new JobsError(
      `${where}: the cron expression must be a printable non-empty string, got ${describeValue(input.cron)}. Potential fix: '0 3 * * *' (03:00 daily) or '*/10 * * * * *' (every 10 seconds).`,
    );
  }
  const requestedZone = input.timeZone ?? 'UTC';
  if (typeof requestedZone === 'string' && isUtcOffset(requestedZone)) throw offsetZoneError(where, requestedZone);
  const timeZone = typeof requestedZone === 'string' ? canonicalTimeZone(requestedZone) : null;
  if (!timeZone) {
    throw new JobsError(
      `${where}: time zone ${typeof requestedZone === 'string' ? JSON.stringify(requestedZone) : describeValue(requestedZone)} is not a valid IANA time zone. ` +
        `Potential fix: timeZone: 'Europe/Berlin', 'America/New_York' or 'UTC' (the default); offsets such as '+02:00' and 'local' are not accepted.`,
    );
  }
  const cron = input.cron.trim();
  let nextRunAt: Date;
  try {
    nextRunAt = CronSchedule.parse(cron, timeZone).next(now);
  } catch (error) {
    throw new JobsError(
      `${where}: invalid cron expression "${cron}" (${firstLine(error)}). ` +
        `Potential fix: five fields "minute hour day-of-month month day-of-week" with an optional leading seconds field, e.g. '0 3 * * *' or '*/5 * * * * *'.`,
    );
  }
  const catchUp = (input.catchUp ?? 'latest') as CatchUpMode;
  if (!CATCH_UP_MODES.includes(catchUp)) {
    throw new JobsError(
      `${where}: catchUp must be one of ${CATCH_UP_MODES.map((m) => `'${m}'`).join(', ')}, got ${describeValue(input.catchUp)}. Potential fix: catchUp: 'latest'.`,
    );
  }
  const overlap = (input.overlap ?? 'allow') as OverlapMode;
  if (!OVERLAP_MODES.includes(overlap)) {
    throw new JobsError(
      `${where}: overlap must be 'allow' or 'skip', got ${describeValue(input.overlap)}. Potential fix: overlap: 'skip' to skip ticks while the previous run is unfinished.`,
    );
  }
  return {
    name: input.name,
    jobName: input.jobName,
    cron,
    timeZone,
    payloadJson: serializePayload(input.jobName, input.payload, maxPayloadBytes),
    catchUp,
    overlap,
    jobOptions,
    nextRunAt,
  };
}

/**
 * The options a job of this name runs with, as JobQueue would enqueue it:
 * the serial key or group its type declares is the one of the schedule's
 * payload, fixed like the payload. A job bound for a queue of `groupRated`
 * (its groups have a rate limit) must have a group, as at enqueue.
 */
export function scheduledJobOptions(
  registry: JobRegistry,
  where: string,
  jobName: string,
  payload: unknown,
  groupRated?: ReadonlySet<string>,
): ScheduledJobOptions {
  const o = registry.optionsOf(jobName);
  const options: ScheduledJobOptions = {
    queue: o.queue,
    priority: o.priority,
    maxAttempts: o.maxAttempts,
    timeoutMs: o.timeout,
  };
  const { serialKey, group } = registry.keysOf(jobName);
  if (serialKey !== undefined) options.serialKey = applyDeclaredKey(where, jobName, 'serialKey', serialKey, payload);
  if (group !== undefined) options.groupKey = applyDeclaredKey(where, jobName, 'group', group, payload);
  checkGroupRated(where, jobName, o.queue, options.groupKey, groupRated);
  return options;
}

/** A UTC offset given as a time zone (see isUtcOffset for why it is refused): the zone to name instead. */
function offsetZoneError(where: string, zone: string): JobsError {
  const fixed = fixedOffsetZone(zone);
  const fixedFix =
    fixed === 'UTC'
      ? ", or timeZone: 'UTC' for this offset"
      : fixed
        ? `, or for ${JSON.stringify(zone.trim())} all year round timeZone: '${fixed}' (the sign of an Etc/GMT name is inverted: Etc/GMT-2 is UTC+2)`
        : " (no Etc/GMT zone has this offset: name the place's zone, e.g. 'Asia/Kolkata' for +05:30)";
  return new JobsError(
    `${where}: time zone ${JSON.stringify(zone)} is a UTC offset; schedules take IANA time zone names only, on every Node version. ` +
      `Potential fix: the zone of the place, e.g. timeZone: 'Europe/Berlin' (it follows daylight saving time)${fixedFix}.`,
  );
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!.trim();
}
