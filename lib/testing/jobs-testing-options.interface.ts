import { randomBytes } from 'node:crypto';
import type { InjectionToken, ModuleMetadata, OptionalFactoryDependency } from '@nestjs/common';
import type { JobsModuleOptions } from '../jobs-options.interface.js';
import { FACTORY_FIXES, MODULE_FIELDS } from '../jobs-options.keys.js';
import {
  checkOptionKeys,
  Clock,
  describeValue,
  JobsError,
  optionShape,
  SystemClock,
  withFixes,
} from '../model/index.js';
import { ManualClock } from './manual-clock.js';

/**
 * How jobs run in a test app:
 * - `manual`: only when the test calls `drain()` (or `advance()` then `drain()`);
 * - `inline`: right after the write that made them due commits, in the caller's
 *   process, before the call (or the caller's transaction) returns;
 * - `worker`: as in production, by the module's worker; wait with `waitFor()`.
 */
export type JobsTestingMode = 'manual' | 'inline' | 'worker';

/** What `JobsTestingModule.forRoot()` takes: `JobsModule`'s options (but `schema` and `clock`), and the test mode. */
export interface JobsTestingOptions extends Omit<JobsModuleOptions, 'schema' | 'clock'> {
  /** Default `manual`. */
  mode?: JobsTestingMode;
  /**
   * Default: a new `ManualClock` at the current time, so delays, backoffs,
   * leases and schedules move only with `advance()`. `'system'` for real time.
   */
  clock?: Clock | 'system';
  /** The start of the schema's name (a random suffix follows); default `jobs_test`. */
  schemaPrefix?: string;
  /** Leave the schema in place at close, to look at it after a test; default false. */
  keepSchema?: boolean;
  /** Register JobQueue, JobsTester & co. for every module; default true. */
  isGlobal?: boolean;
}

/** What `JobsTestingModule.forRootAsync()` takes: options built from other providers. */
export interface JobsTestingAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  /** Register JobQueue, JobsTester & co. for every module; default true. */
  isGlobal?: boolean;
  /** The providers `useFactory` gets as its arguments, in this order. */
  inject?: Array<InjectionToken | OptionalFactoryDependency>;
  /**
   * Builds the options from the `inject`ed providers, at start; may be async. What it returns is
   * checked as `forRoot()`'s options are (`isGlobal` is refused there: it belongs to this call).
   */
  useFactory: (
    ...args: any[] // eslint-disable-line @typescript-eslint/no-explicit-any
  ) => Promise<Omit<JobsTestingOptions, 'isGlobal'>> | Omit<JobsTestingOptions, 'isGlobal'>;
}

/** The options once resolved: the schema picked, the clock made, and what JobsModule gets. */
export interface JobsTestingSettings {
  mode: JobsTestingMode;
  schema: string;
  clock: Clock;
  keepSchema: boolean;
  jobs: JobsModuleOptions;
}

export const JOBS_TESTING_SETTINGS = Symbol('JOBS_TESTING_SETTINGS');

// "schema" is JobsModule's, refused here with a message of its own before the keys are checked.
const { schema: _schema, ...JOBS_FIELDS } = MODULE_FIELDS;
const TESTING_FIELDS = { ...JOBS_FIELDS, mode: true, clock: true, schemaPrefix: true, keepSchema: true } as const;
const TESTING_SHAPE = optionShape<JobsTestingOptions>({ ...TESTING_FIELDS, isGlobal: true });
/** What a factory of forRootAsync returns: `isGlobal` belongs to the forRootAsync call. */
const FACTORY_SHAPE = withFixes(optionShape<Omit<JobsTestingOptions, 'isGlobal'>>(TESTING_FIELDS), FACTORY_FIXES);
export const TESTING_ASYNC_SHAPE = optionShape<JobsTestingAsyncOptions>({
  imports: true,
  isGlobal: true,
  inject: true,
  useFactory: true,
});

const MODES: readonly JobsTestingMode[] = ['manual', 'inline', 'worker'];
const DEFAULT_PREFIX = 'jobs_test';
/** Leaves room for "_<time>_<random>" within PostgreSQL's 63 bytes. */
const PREFIX = /^[A-Za-z_][A-Za-z0-9_]{0,39}$/;

/** `fromFactory`: the options came from forRootAsync's factory, where `isGlobal` is not one. */
export function resolveTestingSettings(
  options: JobsTestingOptions | undefined,
  fromFactory = false,
): JobsTestingSettings {
  const where = 'JobsTestingModule';
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new JobsError(
      `${where}: the options must be an object, got ${describeValue(options)}. Potential fix: JobsTestingModule.forRoot({ connection: process.env.DATABASE_URL }).`,
    );
  }
  const { mode = 'manual', clock, schemaPrefix = DEFAULT_PREFIX, keepSchema = false, isGlobal: _, ...jobs } = options;
  if ('schema' in jobs) {
    throw new JobsError(
      `${where}: "schema" is not an option here. Every test app gets a schema of its own, created at start and dropped at close, ` +
        `so that nothing else on the database (a dev server, another test file) takes its jobs, and a test never touches a real schema. ` +
        `Potential fix: leave "schema" out; schemaPrefix: '${DEFAULT_PREFIX}' names it.`,
    );
  }
  if (fromFactory) checkOptionKeys(`${where}.forRootAsync(): the options useFactory returned`, options, FACTORY_SHAPE);
  else checkOptionKeys(`${where}.forRoot()`, options, TESTING_SHAPE);
  if (!MODES.includes(mode)) {
    throw new JobsError(
      `${where}: "mode" must be one of ${MODES.map((m) => `'${m}'`).join(', ')}, got ${describeValue(mode)}. Potential fix: mode: 'manual'.`,
    );
  }
  if (typeof schemaPrefix !== 'string' || !PREFIX.test(schemaPrefix) || schemaPrefix.toLowerCase().startsWith('pg_')) {
    throw new JobsError(
      `${where}: "schemaPrefix" must be a plain identifier of 1 to 40 letters, digits and underscores, not starting with a digit or "pg_"; got ${describeValue(schemaPrefix)}. Potential fix: schemaPrefix: '${DEFAULT_PREFIX}'.`,
    );
  }
  if (clock !== undefined && clock !== 'system' && !(clock instanceof Clock)) {
    throw new JobsError(
      `${where}: "clock" must be a Clock (such as a ManualClock) or 'system', got ${describeValue(clock)}. Potential fix: clock: new ManualClock(new Date('2026-01-01T00:00:00Z')).`,
    );
  }
  // JobsModule's fallback, an embedded server in .jobs-data, is the dev server's: a second process
  // on that folder fails, and test files that run in parallel would race for it.
  if (jobs.connection === undefined && jobs.dataSource === undefined && jobs.embedded === undefined) {
    throw new JobsError(
      `${where}: no database: "connection" and "dataSource" are both missing${'connection' in jobs ? ' ("connection" is undefined: is DATABASE_URL set?)' : ''}. ` +
        `Potential fix: connection: process.env.DATABASE_URL (the development server will do: each test app works in a schema of its own), ` +
        `or start one embedded PostgreSQL for the whole run with startEmbeddedPostgres() in a global setup and pass its url.`,
    );
  }
  if (mode !== 'worker' && jobs.worker?.enabled === true) {
    throw new JobsError(
      `${where}: worker.enabled is true in mode '${mode}', where jobs run only through the JobsTester (a worker would race it for them). ` +
        `Potential fix: mode: 'worker' to run them with the real worker, or leave worker.enabled out.`,
    );
  }
  const schema = `${schemaPrefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`.toLowerCase();
  const resolvedClock = clock === 'system' ? new SystemClock() : (clock ?? new ManualClock());
  // Off the worker's path, nothing claims jobs behind the test's back; ticks are turned into
  // jobs by advance(), which calls runDue(), rather than by timers.
  const manual = mode !== 'worker';
  return {
    mode,
    schema,
    clock: resolvedClock,
    keepSchema,
    jobs: {
      ...jobs,
      schema,
      clock: resolvedClock,
      worker: manual ? { ...jobs.worker, enabled: false } : jobs.worker,
      scheduler: manual ? { enabled: false, ...jobs.scheduler } : jobs.scheduler,
    },
  };
}
