import { JobsError } from './errors.js';
import { checkOptionKeys, type OptionShape } from './option-keys.js';
import { isUuid } from './uuid.js';

/**
 * Call-site checks shared by every public entry point, so a bad argument is
 * a JobsError naming the call, the field and the fix, never a driver error
 * or a TypeError from deep inside.
 */

/** A value as a message can show it: its type first, so "10" and 10 read differently. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (typeof value === 'string') {
    if (value === '') return 'an empty string';
    const shown = value.length > 60 ? `${value.slice(0, 60)}…` : value;
    return `the string ${JSON.stringify(shown)}${value.length > 60 ? ` (${value.length} characters)` : ''}`;
  }
  if (typeof value === 'number') return String(value);
  if (typeof value === 'bigint') return `the BigInt ${value}n`;
  if (Array.isArray(value)) return `an array (${value.length} items)`;
  if (value instanceof Date)
    return Number.isNaN(value.getTime()) ? 'an invalid Date' : `the Date ${value.toISOString()}`;
  if (typeof value === 'function') return `a function`;
  if (typeof value === 'symbol') return 'a symbol';
  if (typeof value === 'object') return 'an object';
  return typeof value;
}

/** Control characters (NUL included) and lone UTF-16 surrogates: what PostgreSQL text and JSON refuse. */
// eslint-disable-next-line no-control-regex
const UNSTORABLE = /[\u0000-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** What a string holds that PostgreSQL cannot store, or null. */
export function unstorableText(text: string): string | null {
  const m = UNSTORABLE.exec(text);
  if (!m) return null;
  const code = m[0].charCodeAt(0);
  if (code >= 0xd800 && code <= 0xdfff) return `a lone UTF-16 surrogate (\\u${code.toString(16)}) at index ${m.index}`;
  return `a control character (\\u${code.toString(16).padStart(4, '0')}) at index ${m.index}`;
}

export const MAX_NAME_LENGTH = 200;

/**
 * A job, queue or schedule name: stored, indexed and sent in notifications,
 * so printable and bounded (a NOTIFY payload is limited to 8000 bytes).
 */
export function checkName(where: string, field: string, value: unknown, example: string): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new JobsError(
      `${where}: "${field}" must be a non-empty string, got ${describeValue(value)}. Potential fix: ${field}: '${example}'.`,
    );
  }
  if (value.length > MAX_NAME_LENGTH) {
    throw new JobsError(
      `${where}: "${field}" is ${value.length} characters long; the limit is ${MAX_NAME_LENGTH}. Potential fix: a short stable name such as '${example}'.`,
    );
  }
  const bad = unstorableText(value);
  if (bad) {
    throw new JobsError(
      `${where}: "${field}" holds ${bad}. Potential fix: printable characters only, such as '${example}'.`,
    );
  }
  return value;
}

/** Integers as PostgreSQL's int4 stores them. */
export const INT4_MAX = 2_147_483_647;

export function checkInteger(
  where: string,
  field: string,
  value: unknown,
  min: number,
  max: number,
  example: number,
): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    // int4's upper limit is noise in the message, unless it is the limit the value broke.
    const range =
      max === INT4_MAX && !(typeof value === 'number' && value > max) ? `>= ${min}` : `from ${min} to ${max}`;
    throw new JobsError(
      `${where}: "${field}" must be an integer ${range}, got ${describeValue(value)}. Potential fix: ${field}: ${example}.`,
    );
  }
  return value;
}

/** A job or batch id; anything else cannot name a row. */
export function checkId(where: string, value: unknown, kind: 'job' | 'batch' = 'job'): string {
  if (!isUuid(value)) {
    throw new JobsError(
      `${where}: ${describeValue(value)} is not a ${kind} id (a UUID such as 01937c5e-1a2b-7c3d-8e4f-5a6b7c8d9e0f). ` +
        `Potential fix: pass the id ${kind === 'job' ? 'enqueue()' : 'dispatch()'} returned.`,
    );
  }
  return value.toLowerCase();
}

/**
 * An options argument: an object, or left out; with no key that `shape`
 * does not know, in it or in the options objects it holds (see option-keys.ts).
 */
export function checkOptions<T extends object>(
  where: string,
  value: T | null | undefined,
  example: string,
  shape: OptionShape,
): T | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new JobsError(
      `${where}: the options must be an object, got ${describeValue(value)}. Potential fix: ${example}.`,
    );
  }
  checkOptionKeys(where, value, shape);
  return value;
}

/** The range of timestamps this library accepts: PostgreSQL's is wider, JavaScript's Date narrower. */
export const EARLIEST_TIME = Date.UTC(1970, 0, 1);
export const LATEST_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

export function checkDate(where: string, field: string, value: unknown, example: string): Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw new JobsError(
      `${where}: "${field}" must be a valid Date, got ${describeValue(value)}. Potential fix: ${field}: ${example}.`,
    );
  }
  const t = value.getTime();
  if (t < EARLIEST_TIME || t > LATEST_TIME) {
    throw new JobsError(
      `${where}: "${field}" ${value.toISOString()} is outside 1970-01-01 to 9999-12-31. Potential fix: ${field}: ${example}.`,
    );
  }
  return value;
}

/** A concurrency limit and a rate limit, as declared or changed at run time; null removes one. */
export function checkLimits(
  where: string,
  limits: { concurrency?: unknown; rateLimit?: unknown },
): { concurrency?: number | null; rateLimit?: { max: number; per: number } | null } {
  const out: { concurrency?: number | null; rateLimit?: { max: number; per: number } | null } = {};
  if (limits.concurrency !== undefined) {
    out.concurrency =
      limits.concurrency === null ? null : checkInteger(where, 'concurrency', limits.concurrency, 1, INT4_MAX, 5);
  }
  const rate = limits.rateLimit;
  if (rate !== undefined) {
    if (rate === null) {
      out.rateLimit = null;
    } else {
      const r = rate as { max?: unknown; per?: unknown } | null;
      if (typeof r !== 'object' || r === null || r.per === undefined || r.max === undefined) {
        throw new JobsError(
          `${where}: "rateLimit" must be { max, per } (at most max jobs start in any per ms), got ${describeValue(rate)}. ` +
            `Potential fix: rateLimit: { max: 100, per: 60_000 }.`,
        );
      }
      out.rateLimit = {
        max: checkInteger(where, 'rateLimit.max', r.max, 1, INT4_MAX, 100),
        per: checkInteger(where, 'rateLimit.per', r.per, 1, INT4_MAX, 60_000),
      };
    }
  }
  return out;
}

/** Unique keys, serial keys and groups: stored and indexed, so bounded. */
const MAX_KEY_LENGTH = 256;

export function checkKey(where: string, field: string, value: unknown, example: string): string {
  if (typeof value === 'string' && value.length > MAX_KEY_LENGTH) {
    throw new JobsError(
      `${where}: "${field}" is ${value.length} characters long; the limit is ${MAX_KEY_LENGTH}. Potential fix: a shorter key, or a hash of a long one (${field}: '${example}').`,
    );
  }
  if (typeof value !== 'string' || value === '') {
    throw new JobsError(
      `${where}: "${field}" must be a non-empty string, got ${describeValue(value)}. Potential fix: ${field}: '${example}'.`,
    );
  }
  const bad = unstorableText(value);
  if (bad) throw new JobsError(`${where}: "${field}" holds ${bad}. Potential fix: printable characters only.`);
  return value;
}
