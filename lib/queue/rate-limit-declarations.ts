import {
  checkInteger,
  checkName,
  checkOptions,
  describeValue,
  INT4_MAX,
  JobsError,
  RATE_LIMIT_SHAPE,
  recordOf,
  type JobOptions,
  type RateLimit,
} from '../model/index.js';

/** JobsModule's `rateLimits`, validated. */
export const RATE_LIMIT_DECLARATIONS = Symbol('RATE_LIMIT_DECLARATIONS');

const EXAMPLE = "rateLimits: { 'partner-api': { max: 10, per: 1_000 } }";

/** JobsModule's `rateLimits`, checked at start: a bad key or limit fails the boot naming it and the fix. */
export function resolveRateLimitDeclarations(rateLimits: unknown): Record<string, RateLimit> {
  const where = 'JobsModule "rateLimits"';
  const given = checkOptions(where, rateLimits as object, `{ ${EXAMPLE} }`, recordOf(RATE_LIMIT_SHAPE)) ?? {};
  const out: Record<string, RateLimit> = {};
  for (const [key, limit] of Object.entries(given as Record<string, unknown>)) {
    checkName(where, 'key', key, 'partner-api');
    const at = `JobsModule "rateLimits.${key}"`;
    const r = limit as Partial<RateLimit> | null;
    if (r === null || typeof r !== 'object' || r.max === undefined || r.per === undefined) {
      throw new JobsError(
        `${at}: must be { max, per } (at most max jobs start in any per ms), got ${describeValue(limit)}. Potential fix: ${EXAMPLE}.`,
      );
    }
    out[key] = {
      max: checkInteger(at, 'max', r.max, 1, INT4_MAX, 10),
      per: checkInteger(at, 'per', r.per, 1, INT4_MAX, 1_000),
    };
  }
  return out;
}

/**
 * The key a job type's `rateLimit` refers to, if it names one; a key that
 * JobsModule's `rateLimits` does not declare fails the start.
 */
export function rateKeyOf(
  job: { name: string; declared: JobOptions },
  declared: Readonly<Record<string, RateLimit>>,
): string | undefined {
  const key = job.declared.rateLimit;
  if (typeof key !== 'string') return undefined;
  if (Object.hasOwn(declared, key)) return key;
  const known = Object.keys(declared);
  throw new JobsError(
    `@Job('${job.name}'): "rateLimit" refers to the key '${key}', which JobsModule's "rateLimits" does not declare` +
      `${known.length ? ` (declared: ${known.join(', ')})` : ''}. ` +
      `Potential fix: declare it, e.g. rateLimits: { '${key}': { max: 10, per: 1_000 } }, or correct the key.`,
  );
}
