import { Logger, Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { JobsAdmin } from './admin/jobs-admin.service.js';
import { JOBS_DISCOVERY_OPTIONS, type JobsDiscoveryOptions } from './discovery/discovery-options.js';
import { JobEventsExplorer } from './discovery/job-events.explorer.js';
import { JobRegistry } from './discovery/job-registry.js';
import {
  JOBS_SERVICE,
  resolveServiceName,
  resolveUnhandledJobsOptions,
  UNHANDLED_JOBS_OPTIONS,
} from './discovery/service-name.js';
import { DeclarationsKeeper } from './declarations-keeper.js';
import { JobsExplorer } from './discovery/jobs.explorer.js';
import { JobsLifecycle } from './jobs-lifecycle.js';
import { storageProviders } from './jobs-storage.providers.js';
import {
  JOBS_DATA_SOURCE,
  DEFAULT_SCHEMA,
  JOBS_MODULE_OPTIONS,
  type JobsModuleAsyncOptions,
  type JobsModuleOptions,
  type JobsModuleRootOptions,
  type JobsOptionsFactory,
} from './jobs-options.interface.js';
import { ASYNC_SHAPE, MODULE_SHAPE, ROOT_SHAPE } from './jobs-options.keys.js';
import {
  checkMaxErrorBytes,
  checkContextFrom,
  checkOptions,
  Clock,
  CODE_QUEUES,
  JOB_ROW_BUILDER,
  LOCAL_WORKER_STATUS,
  JobCipher,
  JobEvents,
  JobsError,
  JobTracing,
  NoTracing,
  JOB_WRITE_RULES,
  SCHEDULE_CONTROL,
  SystemClock,
  type CodeQueues,
  type QueueOptions,
  type JobWriteRules,
} from './model/index.js';
import { JobsMonitor } from './monitoring/jobs-monitor.service.js';
import { MONITORING_OPTIONS, type MonitoringOptions } from './monitoring/monitoring-options.js';
import { OtelJobTracing } from './monitoring/otel-job-tracing.js';
import { BatchBuilder } from './queue/batch-builder.service.js';
import { JobFactory } from './queue/job-factory.js';
import { JobQueue } from './queue/job-queue.service.js';
import { JobQueues, QUEUE_DECLARATIONS } from './queue/job-queues.service.js';
import { resolveQueueDeclarations } from './queue/queue-declarations.js';
import { RATE_LIMIT_DECLARATIONS, resolveRateLimitDeclarations } from './queue/rate-limit-declarations.js';
import { WorkflowWriter } from './queue/workflow-writer.js';
import { RecurringSchedules } from './scheduler/recurring-schedules.service.js';
import { ScheduleRunner } from './scheduler/schedule-runner.service.js';
import { resolveSchedulerOptions, SCHEDULER_OPTIONS } from './scheduler/scheduler-options.js';
import { SchedulesExplorer } from './scheduler/schedules.explorer.js';
import { JobsConnection } from './storage/connection/jobs-connection.js';
import { ReplicaConnection, type ReplicaSource } from './storage/connection/replica-connection.js';
import { resolveTimeouts } from './storage/sql/timeouts.js';
import { StorageContext } from './storage/sql/storage-context.js';
import { AttemptRunner } from './worker/attempt-runner.service.js';
import { FailureHooks } from './worker/failure-hooks.service.js';
import { JobRescuer } from './worker/job-rescuer.service.js';
import { JobWorker } from './worker/job-worker.service.js';
import { LeaseKeeper } from './worker/lease-keeper.service.js';
import { RetentionService } from './worker/retention.service.js';
import { RETENTION_OPTIONS, resolveRetentionOptions } from './worker/retention-options.js';
import { resolveWorkerOptions, WORKER_OPTIONS } from './worker/worker-options.js';

const DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024;
const DEFAULT_MAX_RESULT_BYTES = 256 * 1024;

const schemaOf = (o: JobsModuleOptions) => o.schema ?? DEFAULT_SCHEMA;

/** Providers computed from the options, whichever way the options arrived. */
function coreProviders(): Provider[] {
  return [
    {
      provide: JobsConnection,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions) => {
        // Checked before connecting, so a bad value leaves no connection open; StorageContext reads it.
        checkMaxErrorBytes(o.maxErrorBytes);
        return JobsConnection.open({
          dataSource: o.dataSource,
          connection: o.connection as string | Record<string, unknown> | undefined,
          embedded: o.embedded,
          given: { connection: 'connection' in o, dataSource: 'dataSource' in o, embedded: 'embedded' in o },
          pooler: o.pooler,
          directConnection: o.directConnection as string | Record<string, unknown> | undefined,
          maxConnections: o.maxConnections,
          worker: resolveWorkerOptions(o.worker).enabled,
          schema: schemaOf(o),
          migrationsRun: o.migrationsRun ?? true,
          timeouts: resolveTimeouts(o.timeouts),
          // A breaking version waits for older workers; one silent for a lease stopped (as JobsMonitor judges).
          workerStaleAfter: resolveWorkerOptions(o.worker).lease,
        });
      },
    },
    {
      provide: ReplicaConnection,
      inject: [JOBS_MODULE_OPTIONS, JobsConnection],
      useFactory: (o: JobsModuleOptions, primary: JobsConnection) =>
        ReplicaConnection.open(
          o.monitoring?.replica as ReplicaSource | undefined,
          primary.schema,
          primary.timeouts,
          primary.dataSource,
          primary.plan.pooler,
        ),
    },
    // Built at start, so a bad key refuses the boot before any job is read or written.
    {
      provide: JobCipher,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions) => new JobCipher(o.encryption),
    },
    ...storageProviders(),
    { provide: JOBS_DATA_SOURCE, inject: [StorageContext], useFactory: (c: StorageContext) => c.dataSource },
    {
      provide: QUEUE_DECLARATIONS,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions) => resolveQueueDeclarations(o.queues),
    },
    {
      provide: RATE_LIMIT_DECLARATIONS,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions) => resolveRateLimitDeclarations(o.rateLimits),
    },
    {
      provide: CODE_QUEUES,
      inject: [JobRegistry, QUEUE_DECLARATIONS],
      useFactory:
        (registry: JobRegistry, declared: Record<string, unknown>): CodeQueues =>
        () => [...new Set([...Object.keys(declared), ...registry.all().map((j) => j.options.queue)])],
    },
    {
      provide: JOBS_SERVICE,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions) => resolveServiceName(o.service),
    },
    {
      provide: UNHANDLED_JOBS_OPTIONS,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions) => resolveUnhandledJobsOptions(o.unhandledJobs),
    },
    {
      provide: Clock,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions) => o.clock ?? new SystemClock(),
    },
    {
      provide: WORKER_OPTIONS,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions) => resolveWorkerOptions(o.worker),
    },
    {
      provide: JOB_WRITE_RULES,
      inject: [JOBS_MODULE_OPTIONS, QUEUE_DECLARATIONS],
      useFactory: (o: JobsModuleOptions, queues: Record<string, QueueOptions>): JobWriteRules => ({
        maxPayloadBytes: o.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
        maxResultBytes: o.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES,
        contextFrom: checkContextFrom(o.contextFrom),
        groupRated: new Set(Object.keys(queues).filter((q) => queues[q]!.groups?.rateLimit !== undefined)),
      }),
    },
    {
      provide: JOBS_DISCOVERY_OPTIONS,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions): JobsDiscoveryOptions => ({
        defaults: o.defaults,
        keepSucceeded: o.retention?.succeeded !== 0,
        externalJobs: o.externalJobs,
        unregisteredJobs: o.unregisteredJobs,
        interceptors: o.interceptors,
      }),
    },
    {
      provide: SCHEDULER_OPTIONS,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions) => resolveSchedulerOptions(o.scheduler, schemaOf(o)),
    },
    {
      provide: RETENTION_OPTIONS,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions) => resolveRetentionOptions(o.retention),
    },
    {
      provide: MONITORING_OPTIONS,
      inject: [WORKER_OPTIONS],
      useFactory: (w: { lease: number }): MonitoringOptions => ({ staleAfter: w.lease }),
    },
    {
      provide: JobTracing,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions): Promise<JobTracing> | JobTracing =>
        o.tracing ? OtelJobTracing.create() : new NoTracing(),
    },
    JobRegistry,
    JobsExplorer,
    JobFactory,
    { provide: JOB_ROW_BUILDER, useExisting: JobFactory },
    WorkflowWriter,
    JobQueue,
    JobQueues,
    BatchBuilder,
    AttemptRunner,
    FailureHooks,
    LeaseKeeper,
    { provide: LOCAL_WORKER_STATUS, inject: [LeaseKeeper], useFactory: (k: LeaseKeeper) => () => k.status() },
    JobRescuer,
    JobWorker,
    RetentionService,
    SchedulesExplorer,
    ScheduleRunner,
    RecurringSchedules,
    { provide: SCHEDULE_CONTROL, useExisting: RecurringSchedules },
    JobsMonitor,
    DeclarationsKeeper,
    // Listener errors are logged under this context; the model layer has no logger of its own.
    { provide: JobEvents, useFactory: () => new JobEvents(new Logger('JobEvents')) },
    JobEventsExplorer,
    JobsAdmin,
    JobsLifecycle,
  ];
}

/** What other modules of the app may inject. */
const EXPORTS = [
  JobQueue,
  JobQueues,
  BatchBuilder,
  RecurringSchedules,
  JobsMonitor,
  JobsAdmin,
  JobEvents,
  RetentionService,
  Clock,
  JOBS_DATA_SOURCE,
  CODE_QUEUES,
];

/**
 * The module that stores, runs and schedules jobs: import `JobsModule.forRoot(options)` (or
 * `forRootAsync`) once in the app's root module. With neither `dataSource` nor `connection`, it starts
 * an embedded PostgreSQL for development.
 */
@Module({})
export class JobsModule {
  /**
   * The module with these options, global unless `isGlobal: false`. Throws a JobsError at the call
   * when the options are not an object, hold a key no option has (here or in a nested options
   * object), or give a bad `retention`; the other values are checked at start.
   */
  static forRoot(options: JobsModuleRootOptions = {}): DynamicModule {
    // Checked here, at the line that wrote them; their values are checked at start.
    const { isGlobal = true, ...rest } =
      checkOptions('JobsModule.forRoot()', options, EXAMPLE, ROOT_SHAPE) ?? ({} as JobsModuleRootOptions);
    // Retention's values too: a bad one fails here, before anything connects.
    resolveRetentionOptions(rest.retention);
    return {
      module: JobsModule,
      global: isGlobal,
      imports: [DiscoveryModule],
      providers: [{ provide: JOBS_MODULE_OPTIONS, useValue: rest }, ...coreProviders()],
      exports: EXPORTS,
    };
  }

  /**
   * The module with options built at start by `useFactory`, `useClass` or `useExisting`, global
   * unless `isGlobal: false`. Throws a JobsError at the call when the options are missing, hold an
   * unknown key, or name none of the three; what the factory returns is checked at start, as
   * `forRoot()`'s options are.
   */
  static forRootAsync(options: JobsModuleAsyncOptions): DynamicModule {
    const where = 'JobsModule.forRootAsync()';
    if (checkOptions(where, options, ASYNC_EXAMPLE, ASYNC_SHAPE) === undefined) {
      throw new JobsError(`${where}: no options given. Potential fix: ${ASYNC_EXAMPLE}.`);
    }
    return {
      module: JobsModule,
      global: options.isGlobal ?? true,
      imports: [DiscoveryModule, ...(options.imports ?? [])],
      providers: [...asyncOptionsProviders(options), ...coreProviders()],
      exports: EXPORTS,
    };
  }
}

const EXAMPLE = 'JobsModule.forRoot({ connection: process.env.DATABASE_URL })';
const ASYNC_EXAMPLE =
  'forRootAsync({ inject: [ConfigService], useFactory: (config) => ({ connection: config.get("DATABASE_URL") }) })';

/** What a factory of forRootAsync made, checked as forRoot checks its options. */
function checkFactoryOptions(from: string, options: unknown): JobsModuleOptions {
  const where = `JobsModule.forRootAsync(): the options ${from} returned`;
  const checked = checkOptions(
    where,
    options as JobsModuleOptions,
    '{ connection: process.env.DATABASE_URL }',
    MODULE_SHAPE,
  );
  // A forgotten return would otherwise start the embedded development database.
  if (checked === undefined) {
    throw new JobsError(`${where}: undefined. Potential fix: return the options, e.g. { connection: url }.`);
  }
  resolveRetentionOptions(checked.retention);
  return checked;
}

function asyncOptionsProviders(options: JobsModuleAsyncOptions): Provider[] {
  const { useFactory } = options;
  if (useFactory) {
    return [
      {
        provide: JOBS_MODULE_OPTIONS,
        useFactory: async (...args: unknown[]) => checkFactoryOptions('useFactory', await useFactory(...args)),
        inject: options.inject ?? [],
      },
    ];
  }
  const factoryClass = options.useClass ?? options.useExisting;
  if (!factoryClass) {
    throw new JobsError(
      `JobsModule.forRootAsync() needs useFactory, useClass or useExisting. Potential fix: ${ASYNC_EXAMPLE}.`,
    );
  }
  const providers: Provider[] = [
    {
      provide: JOBS_MODULE_OPTIONS,
      inject: [factoryClass],
      useFactory: async (factory: JobsOptionsFactory) =>
        checkFactoryOptions(`${factoryClass.name}.createJobsOptions()`, await factory.createJobsOptions()),
    },
  ];
  if (options.useClass) providers.push({ provide: options.useClass, useClass: options.useClass });
  return providers;
}
