import type { Type } from '@nestjs/common';
import { checkOptions, describeValue, optionShape, type CatchUpMode, type OverlapMode } from '../model/index.js';

/** Options of `@Cron`: time zone, what to do about ticks missed while no instance ran, and overlapping runs. */
export interface CronOptions {
  /** IANA time zone the expression is read in; default `UTC`, so every instance agrees whatever its TZ. */
  timeZone?: string;
  /** The payload each tick's job receives; plain JSON data. */
  payload?: unknown;
  /** The schedule's name; default the job's name. Needed when a class carries several @Cron. */
  name?: string;
  /** Ticks missed while no instance ran: `latest` (default) runs once, `all` runs each (at most 1,000), `none` skips them. */
  catchUp?: CatchUpMode;
  /** `skip`: a tick is skipped, and recorded as skipped, while the previous run is still queued or active. Default `allow`. */
  overlap?: OverlapMode;
}

export interface CronMetadata {
  expression: string;
  options: CronOptions;
}

const CRON_METADATA = 'nestjs-durable-jobs:cron';

const CRON_OPTIONS_SHAPE = optionShape<CronOptions>({
  timeZone: true,
  payload: true,
  name: true,
  catchUp: true,
  overlap: true,
});

/**
 * Runs the `@Job` class on a schedule: each tick becomes exactly one job,
 * however many instances run. Standard cron syntax, with an optional leading
 * seconds field. Checked at start, where an invalid expression or time zone
 * fails the start naming the class; the class must also carry `@Job`.
 *
 * Named like @nestjs/schedule's `Cron`, which runs a method on every
 * instance; import this one from nestjs-durable-jobs.
 */
export function Cron(expression: string, options: CronOptions = {}): ClassDecorator {
  return (target) => {
    const cls = target as unknown as Type;
    // The expression and the values are checked at start; a key no option has cannot wait for it.
    checkOptions(
      `@Cron(${typeof expression === 'string' ? `'${expression}'` : describeValue(expression)}) on class ${cls.name}`,
      options,
      "@Cron('0 3 * * *', { timeZone: 'Europe/Berlin' })",
      CRON_OPTIONS_SHAPE,
    );
    // Several @Cron may share a class (say, two payloads); the start checks their names.
    const existing = getCronMetadata(cls);
    Reflect.defineMetadata(CRON_METADATA, [...existing, { expression, options }] satisfies CronMetadata[], cls);
  };
}

export function getCronMetadata(target: unknown): CronMetadata[] {
  if (typeof target !== 'function') return [];
  return (Reflect.getOwnMetadata(CRON_METADATA, target) as CronMetadata[] | undefined) ?? [];
}
