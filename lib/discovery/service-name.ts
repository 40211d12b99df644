import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkName, checkInteger, INT4_MAX, JobsError, describeValue } from '../model/index.js';

/** The service this app is (JobsModule's `service`, resolved): owner of what its code declares. */
export const JOBS_SERVICE = Symbol('JOBS_SERVICE');

/** JobsModule's `unhandledJobs`, resolved: `failAfter` in ms, or null to let such jobs wait. */
export const UNHANDLED_JOBS_OPTIONS = Symbol('UNHANDLED_JOBS_OPTIONS');

export interface ResolvedUnhandledJobsOptions {
  failAfter: number | null;
}

/** Used when neither `service` nor a package.json name is there to go by. */
export const FALLBACK_SERVICE = 'app';

/**
 * JobsModule's `service`, else the `name` of the package.json in the working directory (what
 * `npm start` and a container's WORKDIR run from), else 'app'. Read once at start: the name must
 * stay the same across restarts and deploys, or the service's declarations change owner.
 */
export function resolveServiceName(given: unknown, cwd: string = process.cwd()): string {
  if (given !== undefined) return checkName('JobsModule', 'service', given, 'billing');
  try {
    const name = (JSON.parse(readFileSync(join(cwd, 'package.json'), 'utf8')) as { name?: unknown }).name;
    if (typeof name === 'string' && name.trim() !== '') return checkName('package.json', 'name', name, 'billing');
  } catch {
    // No readable package.json: the fallback below.
  }
  return FALLBACK_SERVICE;
}

/** JobsModule's `unhandledJobs`, checked at start. */
export function resolveUnhandledJobsOptions(given: { failAfter?: number } | undefined): ResolvedUnhandledJobsOptions {
  if (given === undefined) return { failAfter: null };
  if (given === null || typeof given !== 'object') {
    throw new JobsError(
      `JobsModule: "unhandledJobs" must be an object, got ${describeValue(given)}. Potential fix: unhandledJobs: { failAfter: 3_600_000 }.`,
    );
  }
  const { failAfter } = given;
  return {
    failAfter:
      failAfter === undefined
        ? null
        : checkInteger('JobsModule "unhandledJobs"', 'failAfter', failAfter, 1_000, INT4_MAX, 3_600_000),
  };
}
