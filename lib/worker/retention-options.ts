import { describeValue, INT4_MAX, JobsError } from '../model/index.js';

/** How long ended jobs, settled batches and stopped workers' rows are kept before they are pruned. */
export interface RetentionOptions {
  /**
   * How long succeeded jobs stay queryable, in ms; default 7 days; false keeps them. 0 forgets
   * them: each success deletes its job in the outcome's write (the default of `@Job`'s
   * `keep.succeeded`), and a pass deletes the successes that had to be kept a while.
   */
  succeeded?: number | false;
  /**
   * How long failed and skipped jobs and settled batches stay, in ms; default 30 days; false keeps
   * them. Cancelled jobs and batches too, unless `cancelled` is set.
   */
  failed?: number | false;
  /**
   * How long cancelled jobs and cancelled batches stay, in ms; false keeps them. Left out, they
   * follow `failed` (its value, or its default), as they did before this option existed.
   */
  cancelled?: number | false;
  /** How long the rows of stopped (or crashed) workers stay, in ms; default 7 days; false keeps them. */
  workers?: number | false;
  /** How often to prune, in ms; default 60 000. */
  interval?: number;
  /**
   * Rest between two chunks of a pass, in ms; default 100. A pass over a large
   * backlog of expired rows then takes a sixth or so of one database core
   * instead of deleting flat out (a chunk of 2000 deletes in about 20 ms), so
   * the workers beside it keep the rest; 0 deletes without rest.
   */
  pause?: number;
  /** Rows deleted per statement, each its own short transaction; default 2000. */
  chunk?: number;
}

/** Retention's options with every default filled in. */
export interface ResolvedRetentionOptions {
  succeeded: number | false;
  failed: number | false;
  cancelled: number | false;
  workers: number | false;
  interval: number;
  pause: number;
  chunk: number;
}

export const RETENTION_OPTIONS = Symbol('RETENTION_OPTIONS');

const DAY = 86_400_000;
const WHERE = 'JobsModule: retention';
const MAX_CHUNK = 100_000;

// A timer's delay is a 32-bit int: a longer one fires at once.
function checkMs(field: string, value: unknown, min: number, example: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > INT4_MAX) {
    throw new JobsError(
      `${WHERE}.${field} must be an integer number of ms from ${min} to ${INT4_MAX}, got ${describeValue(value)}. ` +
        `Potential fix: retention: { ${field}: ${example} }.`,
    );
  }
  return value;
}

/** `min`: 0 for `succeeded`, whose 0 forgets each success as it is written. */
function checkKeep(field: string, value: unknown, fallback: number | false, min = 1): number | false {
  if (value === undefined) return fallback;
  if (value === false) return false;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > Number.MAX_SAFE_INTEGER) {
    const what = min === 0 ? 'an integer number of ms from 0' : 'a positive integer number of ms';
    throw new JobsError(
      `${WHERE}.${field} must be ${what}, or false to keep the rows, got ${describeValue(value)}. ` +
        `Potential fix: retention: { ${field}: 7 * 86_400_000 }.`,
    );
  }
  return value;
}

/** Checks retention's options at start (forRoot and forRootAsync alike), a JobsError naming the field. */
export function resolveRetentionOptions(o: RetentionOptions = {}): ResolvedRetentionOptions {
  const chunk = o.chunk ?? 2_000;
  if (typeof chunk !== 'number' || !Number.isInteger(chunk) || chunk < 1 || chunk > MAX_CHUNK) {
    throw new JobsError(
      `${WHERE}.chunk must be an integer from 1 to ${MAX_CHUNK}, got ${describeValue(chunk)}. ` +
        `Potential fix: retention: { chunk: 2000 }.`,
    );
  }
  const failed = checkKeep('failed', o.failed, 30 * DAY);
  return {
    succeeded: checkKeep('succeeded', o.succeeded, 7 * DAY, 0),
    failed,
    cancelled: checkKeep('cancelled', o.cancelled, failed),
    workers: checkKeep('workers', o.workers, 7 * DAY),
    interval: checkMs('interval', o.interval ?? 60_000, 1, '60_000'),
    pause: checkMs('pause', o.pause ?? 100, 0, '100'),
    chunk,
  };
}
