import { callKeyFunction } from './declared-keys.js';
import { JobsError } from './errors.js';
import type { UniqueOptions } from './job-context.js';
import type { JobUniqueOptions } from './job-options.js';
import { UNIQUE_SHAPE } from './option-shapes.js';
import { UNIQUE_WHILE, type NewJob } from './records.js';
import { checkInteger, checkKey, checkOptions, describeValue, INT4_MAX } from './validation.js';

/** A unique key's columns of a new job row. */
export type UniqueColumns = Pick<NewJob, 'uniqueKey' | 'uniqueWhile' | 'uniqueWindow' | 'uniqueTtl' | 'uniqueReplace'>;

/** Ten years: a key held longer than that by a stuck job is not what a ttl is for. */
const MAX_TTL_MS = 10 * 365 * 24 * 3_600_000;

const DECLARED_EXAMPLE = '{ key: (payload) => `digest-${payload.userId}` }';

/** Everything of `unique` but its key: how the key is held, checked in the order a reader meets the fields. */
function checkHolding(where: string, unique: Omit<UniqueOptions, 'key'>): void {
  if (unique.while !== undefined && !UNIQUE_WHILE.includes(unique.while)) {
    throw new JobsError(
      `${where}: "unique.while" must be one of ${UNIQUE_WHILE.join(', ')}, got ${describeValue(unique.while)}. Potential fix: unique: { key, while: 'queued' }.`,
    );
  }
  if (unique.replace !== undefined && typeof unique.replace !== 'boolean') {
    throw new JobsError(`${where}: "unique.replace" must be true or false, got ${describeValue(unique.replace)}.`);
  }
  if (unique.for !== undefined) {
    checkInteger(where, 'unique.for', unique.for, 1, INT4_MAX, 60_000);
    if (unique.while !== undefined) {
      throw new JobsError(
        `${where}: "unique" takes "for" (one job per key per window) or "while" (one job per key while it is queued or running), not both. ` +
          `Potential fix: keep the one you mean.`,
      );
    }
  }
  if (unique.ttl !== undefined) {
    checkInteger(where, 'unique.ttl', unique.ttl, 1, MAX_TTL_MS, 3_600_000);
    if (unique.for !== undefined) {
      throw new JobsError(
        `${where}: "unique.ttl" bounds how long a key is held by its job's state; a key held "for" a window is released when the window ends. ` +
          `Potential fix: drop "ttl", or use while with a ttl: unique: { key, while: 'queued-or-active', ttl: 3_600_000 }.`,
      );
    }
  }
}

/** A job type's `unique` (`@Job` or an `externalJobs` entry), checked where it is declared. */
export function checkJobUnique(where: string, value: unknown): void {
  if (value === undefined) return;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new JobsError(
      `${where}: "unique" must be an object, got ${describeValue(value)}. Potential fix: unique: ${DECLARED_EXAMPLE}.`,
    );
  }
  // Its keys were checked with the options that hold it (JOB_OPTIONS_SHAPE).
  const unique = value as JobUniqueOptions;
  if (typeof unique.key !== 'function') checkKey(where, 'unique.key', unique.key, 'daily-digest');
  checkHolding(where, unique);
}

/** A call's `unique` options, checked, as the row stores them: held by state (default, or until a ttl) or per window. */
export function uniqueColumns(where: string, value: UniqueOptions | undefined, now: Date): UniqueColumns {
  const unique = checkOptions(where, value, "{ key: 'order-7' }", UNIQUE_SHAPE);
  if (!unique) return {};
  const uniqueKey = checkKey(where, 'unique.key', unique.key, 'order-7');
  checkHolding(where, unique);
  const uniqueReplace = unique.replace ?? false;
  if (unique.for !== undefined) {
    return { uniqueKey, uniqueWhile: null, uniqueWindow: Math.floor(now.getTime() / unique.for), uniqueReplace };
  }
  return {
    uniqueKey,
    uniqueWhile: unique.while ?? 'queued-or-active',
    uniqueWindow: null,
    uniqueTtl: unique.ttl ?? null,
    uniqueReplace,
  };
}

/**
 * A job type's unique options for one enqueue: its key function applied to
 * the payload. What the function returns is checked as a call's key is.
 */
export function declaredUnique(where: string, name: string, unique: JobUniqueOptions, payload: unknown): UniqueOptions {
  if (typeof unique.key !== 'function') return unique as UniqueOptions;
  const key = callKeyFunction(where, `the unique key function that @Job('${name}') declares`, unique.key, payload, {
    threw:
      'make unique.key return a string for every payload this job is enqueued with, or pass { unique: { key } } to this call',
    returned: `return a string, e.g. unique: ${DECLARED_EXAMPLE}`,
  });
  return { ...unique, key };
}
