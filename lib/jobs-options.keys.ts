import type {
  JobsConnectionOptions,
  JobsMonitoringOptions,
  JobsModuleAsyncOptions,
  JobsModuleOptions,
  JobsModuleRootOptions,
  UnhandledJobsOptions,
} from './jobs-options.interface.js';
import {
  JOB_DEFAULTS_SHAPE,
  JOB_OPTIONS_SHAPE,
  optionShape,
  QUEUE_SHAPE,
  RATE_LIMIT_SHAPE,
  recordOf,
  withFixes,
  type EncryptionOptions,
  type OptionField,
} from './model/index.js';
import type { SchedulerOptions } from './scheduler/scheduler-options.js';
import type { EmbeddedPostgresOptions } from './storage/embedded/embedded-postgres.js';
import { TIMEOUTS_SHAPE } from './storage/sql/timeouts.js';
import type { RetentionOptions } from './worker/retention-options.js';
import type { WorkerOptions, WorkerQueueOptions } from './worker/worker-options.js';

/**
 * The known keys of JobsModule's options and of every options object in
 * them, each stated against its interface: a field added to one of them
 * without its key here does not compile.
 */

/** What a spread of the app's TypeORM config brings along, and the library sets itself. */
const SET_BY_THE_LIBRARY =
  'leave it out: the connection the module opens is always postgres, with the library\'s tables only. To share the app\'s TypeORM connection, pass its DataSource as "dataSource" instead.';

/**
 * TypeORM's postgres options, less the three the library sets itself. Read
 * from the TypeORM this package builds against: a TypeORM that adds a key
 * fails this build, which is where the key is added.
 */
const CONNECTION_FIELDS = optionShape<JobsConnectionOptions>({
  url: true,
  host: true,
  port: true,
  username: true,
  password: true,
  database: true,
  ssl: true,
  applicationName: true,
  schema: true,
  driver: true,
  nativeDriver: true,
  useUTC: true,
  replication: true,
  connectTimeoutMS: true,
  uuidExtension: true,
  poolErrorHandler: true,
  logNotifications: true,
  installExtensions: true,
  parseInt8: true,
  extensions: true,
  subscribers: true,
  isolationLevel: true,
  migrationsTableName: true,
  migrationsTransactionMode: true,
  metadataTableName: true,
  namingStrategy: true,
  logging: true,
  logger: true,
  maxQueryExecutionTime: true,
  poolSize: true,
  synchronize: true,
  migrationsRun: true,
  dropSchema: true,
  entityPrefix: true,
  entitySkipConstructor: true,
  extra: true,
  relationLoadStrategy: true,
  typename: true,
  cache: true,
  isolateWhereStatements: true,
  invalidWhereValuesBehavior: true,
});
const CONNECTION_SHAPE = withFixes(CONNECTION_FIELDS, {
  type: SET_BY_THE_LIBRARY,
  entities: SET_BY_THE_LIBRARY,
  migrations: SET_BY_THE_LIBRARY,
});

const EMBEDDED_SHAPE = optionShape<EmbeddedPostgresOptions>({
  dataDir: true,
  port: true,
  database: true,
  logger: true,
});

/** An array of names holds no options; an object's keys are queue names, each value of this shape. */
const WORKER_QUEUE_SHAPE = optionShape<WorkerQueueOptions>({ concurrency: true });

const WORKER_SHAPE = optionShape<WorkerOptions>({
  enabled: true,
  concurrency: true,
  queues: recordOf(WORKER_QUEUE_SHAPE),
  pollInterval: true,
  lease: true,
  shutdownGrace: true,
  prefetch: true,
  progressThrottle: true,
  synchronousCommit: true,
});

const RETENTION_SHAPE = optionShape<RetentionOptions>({
  succeeded: true,
  failed: true,
  cancelled: true,
  workers: true,
  interval: true,
  pause: true,
  chunk: true,
});

/** The keyring is a record of the app's own key ids: a value, never looked into. */
const ENCRYPTION_SHAPE = optionShape<EncryptionOptions>({ keys: true, current: true, all: true });

/** A replica given as options takes the connection's; a DataSource or URL is a value. */
const MONITORING_SHAPE = optionShape<JobsMonitoringOptions>({ replica: true });

const SCHEDULER_SHAPE = optionShape<SchedulerOptions>({
  enabled: true,
  syncCodeSchedules: true,
  pollInterval: true,
  misfireThreshold: true,
});

const UNHANDLED_JOBS_SHAPE = optionShape<UnhandledJobsOptions>({ failAfter: true });

/** JobsModuleOptions' fields, for the shapes of the modules that take them with fields of their own. */
export const MODULE_FIELDS = {
  dataSource: true,
  connection: CONNECTION_SHAPE,
  pooler: true,
  directConnection: CONNECTION_SHAPE,
  maxConnections: true,
  embedded: EMBEDDED_SHAPE,
  schema: true,
  migrationsRun: true,
  timeouts: TIMEOUTS_SHAPE,
  worker: WORKER_SHAPE,
  retention: RETENTION_SHAPE,
  queues: recordOf(QUEUE_SHAPE),
  rateLimits: recordOf(RATE_LIMIT_SHAPE),
  defaults: JOB_DEFAULTS_SHAPE,
  interceptors: true,
  // A list of names is a value; a record maps each name to its @Job options.
  externalJobs: recordOf(JOB_OPTIONS_SHAPE),
  unregisteredJobs: true,
  unhandledJobs: UNHANDLED_JOBS_SHAPE,
  service: true,
  maxPayloadBytes: true,
  contextFrom: true,
  maxResultBytes: true,
  maxErrorBytes: true,
  monitoring: MONITORING_SHAPE,
  scheduler: SCHEDULER_SHAPE,
  tracing: true,
  encryption: ENCRYPTION_SHAPE,
  clock: true,
} as const satisfies Record<keyof JobsModuleOptions, OptionField>;

/** What a factory of forRootAsync returns, read once the module is registered. */
export const FACTORY_FIXES = {
  isGlobal:
    'pass it to forRootAsync({ isGlobal, useFactory }) itself: the module is registered before its factory runs.',
};

/** What a factory of forRootAsync returns: `isGlobal` belongs to the forRootAsync call. */
export const MODULE_SHAPE = withFixes(optionShape<JobsModuleOptions>(MODULE_FIELDS), FACTORY_FIXES);

export const ROOT_SHAPE = optionShape<JobsModuleRootOptions>({ ...MODULE_FIELDS, isGlobal: true });

export const ASYNC_SHAPE = optionShape<JobsModuleAsyncOptions>({
  imports: true,
  isGlobal: true,
  inject: true,
  useFactory: true,
  useClass: true,
  useExisting: true,
});
