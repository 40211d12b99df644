import type { ModuleMetadata, Type, InjectionToken, OptionalFactoryDependency } from '@nestjs/common';
import type { DataSource, DataSourceOptions } from 'typeorm';
import type { ExternalJobs, JobDefaults } from './discovery/job-registry.js';
import type {
  Clock,
  EncryptionOptions,
  JobContextSource,
  JobInterceptorClass,
  QueueOptions,
  RateLimit,
} from './model/index.js';
import type { SchedulerOptions } from './scheduler/scheduler-options.js';
import type { EmbeddedPostgresOptions } from './storage/embedded/embedded-postgres.js';
import type { DatabaseTimeouts } from './storage/sql/timeouts.js';
import type { RetentionOptions } from './worker/retention-options.js';
import type { WorkerOptions } from './worker/worker-options.js';

type PostgresConnectionOptions = Extract<DataSourceOptions, { type: 'postgres' }>;
/** TypeORM's PostgreSQL options for a connection the module opens, owns and closes itself. */
export type JobsConnectionOptions = Partial<Omit<PostgresConnectionOptions, 'type' | 'entities' | 'migrations'>>;

/** Where operators' reads go (`JobsModuleOptions.monitoring`). */
export interface JobsMonitoringOptions {
  /**
   * A read replica of the database (a streaming standby): JobsMonitor's and
   * JobsAdmin's reads, and the dashboard's and the CLI's views, go there;
   * every action and every worker statement stays on the primary. The
   * app's DataSource on the replica, a postgres URL, or TypeORM postgres
   * options (then the module owns and closes the connection).
   */
  replica?: DataSource | string | JobsConnectionOptions;
}

/** Everything `JobsModule` can be configured with; every field has a default. */
export interface JobsModuleOptions {
  /** Share the app's TypeORM DataSource (e.g. from @nestjs/typeorm); the app keeps owning it. */
  dataSource?: DataSource;
  /** A postgres URL or TypeORM postgres options: the module owns and closes this connection. */
  connection?: string | JobsConnectionOptions;
  /**
   * What sits between this app and PostgreSQL on `connection` (or the
   * `dataSource`): `'transaction'` for PgBouncer in transaction mode,
   * Supavisor's or Neon's pooled URL, RDS Proxy; `'session'` for a session
   * pooler; left out for a direct connection. With `'transaction'` the
   * library uses no named prepared statements, no session state past a
   * transaction, no session-level lock and no LISTEN on the pooled URL. A
   * transaction pooler the option does not declare fails the start.
   */
  pooler?: 'transaction' | 'session';
  /**
   * A URL (or TypeORM postgres options) straight to the server, for what a
   * transaction pooler cannot carry: LISTEN (wake-ups on commit) and this
   * start's migrations. Without it, behind a transaction pooler, workers
   * and the scheduler poll (`worker.pollInterval`).
   */
  directConnection?: string | JobsConnectionOptions;
  /**
   * The most connections this instance opens: its own pool when the module
   * owns the connection, the worker's, one kept for lease renewals, and the
   * LISTEN connection. Default 10 when the module owns its connection; with
   * the app's `dataSource`, it bounds the library's own connections beside
   * the app's pool (default 6). See the Operating guide.
   */
  maxConnections?: number;
  /** Options of the embedded development database, used when neither of the above is given. */
  embedded?: EmbeddedPostgresOptions;
  /** The PostgreSQL schema holding every table; default `jobs`. */
  schema?: string;
  /** Create and migrate the schema at start (default true); false when the app runs `createJobsMigrations()` itself. */
  migrationsRun?: boolean;
  /** How long to wait on the database before a call fails instead of hanging (ms). */
  timeouts?: DatabaseTimeouts;
  /** This instance's worker: whether it runs, which queues it serves, and how it claims, leases and shuts down. */
  worker?: WorkerOptions;
  /** How long finished jobs stay queryable before they are pruned. */
  retention?: RetentionOptions;
  /**
   * Flow control per queue, enforced across instances: `{ emails: {
   * concurrency: 5, rateLimit: { max: 100, per: 60_000 } } }`. Changeable
   * at run time through JobQueues; a change holds until the code changes
   * the same field.
   */
  queues?: Record<string, QueueOptions>;
  /**
   * Rate limits by key, shared across job types and queues: `{ 'partner-api':
   * { max: 10, per: 1_000 } }`, referred to by `@Job(name, { rateLimit:
   * 'partner-api' })`. One window counts every job referring to the key.
   * Changeable at run time through JobQueues.setRateLimit().
   */
  rateLimits?: Record<string, RateLimit>;
  /** Defaults for jobs whose `@Job` options leave them out. */
  defaults?: JobDefaults;
  /**
   * Interceptors around every job's attempts, outermost first, outside each
   * job's own (`@Job(name, { interceptors })`), as Nest's global
   * interceptors are outside a controller's. Each is a provider of some module.
   */
  interceptors?: readonly JobInterceptorClass[];
  /**
   * Jobs this app may enqueue although another service runs them: by name
   * with the options its `@Job` declares (`{ 'send-receipt': { queue:
   * 'emails' } }`), or names only (then each enqueue must pass `queue`).
   */
  externalJobs?: ExternalJobs;
  /**
   * What a `@Job` class that no module registers does to the start: 'error'
   * (default) fails it; 'warn' suits test modules that register only some
   * handlers. Enqueueing such a class still throws at the call site.
   */
  unregisteredJobs?: 'error' | 'warn' | 'ignore';
  /**
   * Jobs that are due but that no live worker handles (a removed job type, a
   * service never deployed): `{ failAfter: 3_600_000 }` fails each such job
   * once it has been due that long (ms), with an error naming the job type.
   * Left out, they wait and JobsMonitor.unhandledJobs() reports them.
   */
  unhandledJobs?: UnhandledJobsOptions;
  /**
   * The deployable this app is (an API, a billing service): it owns the
   * schedules and limits its code declares, and never removes another
   * service's. Default: the `name` in the package.json of the working
   * directory, else `'app'`.
   */
  service?: string;
  /** Largest accepted payload, in bytes of JSON; default 256 KiB. */
  maxPayloadBytes?: number;
  /**
   * The context (`ctx.context`) of a job whose enqueue gives none, read at
   * the call: `() => ({ tenantId: cls.get('tenantId') })` captures the
   * request's tenant. Inside a handler, the running job's context comes
   * first. A plain object of JSON values of at most 8 KiB, or undefined
   * for none; default none.
   */
  contextFrom?: JobContextSource;
  /**
   * Largest result a job or a step (ctx.step) may return, in bytes of JSON;
   * default 256 KiB. A larger one fails the attempt for good, naming the step.
   */
  maxResultBytes?: number;
  /**
   * The most UTF-8 bytes a stored error (the job's last error, each attempt's
   * in the history) keeps of its message, and of its stack; default 8 KiB,
   * at least 256. A longer text keeps its start and ends "… [cut N bytes]".
   */
  maxErrorBytes?: number;
  /** Where operators' reads go: `{ replica }` sends them to a read replica. */
  monitoring?: JobsMonitoringOptions;
  /** Recurring schedules (@Cron and RecurringSchedules) on this instance. */
  scheduler?: SchedulerOptions;
  /**
   * OpenTelemetry tracing: enqueues store the caller's trace context and
   * each attempt runs in a span continuing it. Needs @opentelemetry/api;
   * default false.
   */
  tracing?: boolean;
  /**
   * Encryption at rest of payloads, results, step results, errors and
   * progress messages (AES-256-GCM): `{ keys: { '2026-12': base64Key },
   * current: '2026-12' }`, for jobs declared `encrypted: true`, or every job
   * with `all: true`. Any listed key decrypts; new values use `current`.
   */
  encryption?: EncryptionOptions;
  /** Replaces the system clock (tests). */
  clock?: Clock;
}

/** JobsModule's `unhandledJobs`. */
export interface UnhandledJobsOptions {
  /** How long (ms) a due job that no live worker handles may wait before it fails; default: never. */
  failAfter?: number;
}

/** What `JobsModule.forRoot()` takes: the module's options, and whether it is global. */
export interface JobsModuleRootOptions extends JobsModuleOptions {
  /** Register JobQueue & co. for every module; default true. */
  isGlobal?: boolean;
}

/** A class that builds the module's options, for `forRootAsync({ useClass })` or `useExisting`. */
export interface JobsOptionsFactory {
  /**
   * The module's options, or a promise of them, read once at start and checked as `forRoot()`'s are:
   * an unknown key, `isGlobal` (it belongs to the `forRootAsync()` call) or `undefined` fails the
   * start with a JobsError.
   */
  createJobsOptions(): Promise<JobsModuleOptions> | JobsModuleOptions;
}

/** What `JobsModule.forRootAsync()` takes: options built from other providers (a factory, a class or an existing provider). */
export interface JobsModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  /** Register JobQueue & co. for every module; default true. */
  isGlobal?: boolean;
  /** The providers `useFactory` gets as its arguments, in this order. */
  inject?: Array<InjectionToken | OptionalFactoryDependency>;
  /**
   * Builds the options from the `inject`ed providers, at start; may be async. What it returns is
   * checked as `forRoot()`'s options are (`undefined` and `isGlobal` are refused). Used before
   * `useClass` and `useExisting` when several are given.
   */
  useFactory?: (...args: any[]) => Promise<JobsModuleOptions> | JobsModuleOptions; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** A class the module registers as a provider of its own, whose `createJobsOptions()` builds the options. */
  useClass?: Type<JobsOptionsFactory>;
  /**
   * A provider the app already has (from a module in `imports`, or a global one), whose
   * `createJobsOptions()` builds the options; the module does not register it. Ignored when
   * `useFactory` or `useClass` is given.
   */
  useExisting?: Type<JobsOptionsFactory>;
}

/** The schema the job tables live in when the options name none. */
export const DEFAULT_SCHEMA = 'jobs';

export const JOBS_MODULE_OPTIONS = Symbol('JOBS_MODULE_OPTIONS');
/** Injection token of the TypeORM `DataSource` the module works on (the app's, its own, or the embedded database's). */
export const JOBS_DATA_SOURCE = Symbol('JOBS_DATA_SOURCE');
