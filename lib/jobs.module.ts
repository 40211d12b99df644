import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { JOBS_DISCOVERY_OPTIONS, type JobsDiscoveryOptions } from './discovery/discovery-options.js';
import { JobRegistry } from './discovery/job-registry.js';
import { JobsExplorer } from './discovery/jobs.explorer.js';
import {
  JOBS_DATA_SOURCE,
  JOBS_MODULE_OPTIONS,
  type JobsModuleAsyncOptions,
  type JobsModuleOptions,
  type JobsModuleRootOptions,
  type JobsOptionsFactory,
} from './jobs-options.interface.js';
import { Clock, JOB_ROW_BUILDER, JobEvents, JobTracing, NoTracing, SystemClock } from './model/index.js';
import { OtelJobTracing } from './monitoring/otel-job-tracing.js';
import { BatchBuilder } from './queue/batch-builder.service.js';
import { JobFactory } from './queue/job-factory.js';
import { JobQueue } from './queue/job-queue.service.js';
import { WorkflowWriter } from './queue/workflow-writer.js';
import { QUEUE_SETTINGS, type QueueSettings } from './model/index.js';
import { RecurringSchedules } from './scheduler/recurring-schedules.service.js';
import { ScheduleRunner } from './scheduler/schedule-runner.service.js';
import { resolveSchedulerOptions, SCHEDULER_OPTIONS } from './scheduler/scheduler-options.js';
import { SchedulesExplorer } from './scheduler/schedules.explorer.js';
import { JOB_STORAGE, type JobStorage } from './storage/job-storage.interface.js';
import { JobsConnection } from './storage/jobs-connection.js';
import { NotificationListener } from './storage/notification-listener.js';
import { PostgresJobStorage } from './storage/postgres-job-storage.js';
import { PostgresScheduleStorage } from './storage/postgres-schedule-storage.js';
import { SCHEDULE_STORAGE } from './storage/schedule-storage.interface.js';
import { PostgresWorkflowStorage } from './storage/postgres-workflow-storage.js';
import { WORKFLOW_STORAGE } from './storage/workflow-storage.interface.js';
import { JobsMonitor } from './monitoring/jobs-monitor.service.js';
import { MONITORING_OPTIONS, type MonitoringOptions } from './monitoring/monitoring-options.js';
import { MONITORING_STORAGE } from './storage/monitoring-storage.interface.js';
import { PostgresMonitoringStorage } from './storage/postgres-monitoring-storage.js';
import { JobWorker } from './worker/job-worker.service.js';
import { RETENTION_OPTIONS, RetentionService } from './worker/retention.service.js';
import { resolveWorkerOptions, WORKER_OPTIONS } from './worker/worker-options.js';

const DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024;

/** Providers computed from the options, whichever way the options arrived. */
function coreProviders(): Provider[] {
  return [
    {
      provide: JobsConnection,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions) =>
        JobsConnection.open({
          dataSource: o.dataSource,
          connection: o.connection as string | Record<string, unknown> | undefined,
          embedded: o.embedded,
          schema: o.schema ?? 'jobs',
          migrationsRun: o.migrationsRun ?? true,
        }),
    },
    { provide: JOBS_DATA_SOURCE, inject: [JobsConnection], useFactory: (c: JobsConnection) => c.dataSource },
    {
      provide: JOB_STORAGE,
      inject: [JobsConnection, JOBS_MODULE_OPTIONS],
      useFactory: (c: JobsConnection, o: JobsModuleOptions) =>
        new PostgresJobStorage(c.dataSource, o.schema ?? 'jobs', !(o.worker?.synchronousCommit ?? false)),
    },
    {
      provide: WORKFLOW_STORAGE,
      inject: [JobsConnection, JOB_STORAGE],
      useFactory: (c: JobsConnection, s: JobStorage) => new PostgresWorkflowStorage(c.dataSource, s),
    },
    {
      provide: NotificationListener,
      inject: [JobsConnection, JOB_STORAGE],
      useFactory: (c: JobsConnection, s: JobStorage) => new NotificationListener(c.dataSource, s.notifyChannel()),
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
      provide: QUEUE_SETTINGS,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions): QueueSettings => ({
        maxPayloadBytes: o.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
      }),
    },
    {
      provide: JOBS_DISCOVERY_OPTIONS,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions): JobsDiscoveryOptions => ({
        defaults: o.defaults,
        externalJobs: o.externalJobs,
        unregisteredJobs: o.unregisteredJobs,
      }),
    },
    {
      provide: SCHEDULE_STORAGE,
      inject: [JobsConnection, JOB_STORAGE],
      useFactory: (c: JobsConnection, s: JobStorage) =>
        new PostgresScheduleStorage(c.dataSource, s.schema, s.notifyChannel()),
    },
    {
      provide: SCHEDULER_OPTIONS,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions) => resolveSchedulerOptions(o.scheduler),
    },
    JobRegistry,
    JobsExplorer,
    JobFactory,
    { provide: JOB_ROW_BUILDER, useExisting: JobFactory },
    WorkflowWriter,
    JobQueue,
    BatchBuilder,
    JobWorker,
    {
      provide: RETENTION_OPTIONS,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions) => o.retention ?? {},
    },
    RetentionService,
    SchedulesExplorer,
    ScheduleRunner,
    RecurringSchedules,
    {
      provide: MONITORING_STORAGE,
      inject: [JobsConnection, JOB_STORAGE],
      useFactory: (c: JobsConnection, s: JobStorage) => new PostgresMonitoringStorage(c.dataSource, s.schema),
    },
    {
      provide: MONITORING_OPTIONS,
      inject: [WORKER_OPTIONS],
      useFactory: (w: { lease: number }): MonitoringOptions => ({ staleAfter: w.lease }),
    },
    JobsMonitor,
    JobEvents,
    {
      provide: JobTracing,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (o: JobsModuleOptions): Promise<JobTracing> | JobTracing =>
        o.tracing ? OtelJobTracing.create() : new NoTracing(),
    },
  ];
}

const EXPORTS = [
  JobQueue,
  JobsMonitor,
  JobEvents,
  BatchBuilder,
  JobFactory,
  WORKFLOW_STORAGE,
  JobRegistry,
  Clock,
  JOB_STORAGE,
  JOBS_DATA_SOURCE,
  JobWorker,
  JOBS_MODULE_OPTIONS,
  RecurringSchedules,
];

@Module({})
export class JobsModule {
  static forRoot(options: JobsModuleRootOptions = {}): DynamicModule {
    const { isGlobal = true, ...rest } = options;
    return {
      module: JobsModule,
      global: isGlobal,
      imports: [DiscoveryModule],
      providers: [{ provide: JOBS_MODULE_OPTIONS, useValue: rest }, ...coreProviders()],
      exports: EXPORTS,
    };
  }

  static forRootAsync(options: JobsModuleAsyncOptions): DynamicModule {
    return {
      module: JobsModule,
      global: options.isGlobal ?? true,
      imports: [DiscoveryModule, ...(options.imports ?? [])],
      providers: [...asyncOptionsProviders(options), ...coreProviders()],
      exports: EXPORTS,
    };
  }
}

function asyncOptionsProviders(options: JobsModuleAsyncOptions): Provider[] {
  if (options.useFactory) {
    return [{ provide: JOBS_MODULE_OPTIONS, useFactory: options.useFactory, inject: options.inject ?? [] }];
  }
  const factoryClass = options.useClass ?? options.useExisting;
  if (!factoryClass) {
    throw new Error(
      'JobsModule.forRootAsync() needs useFactory, useClass or useExisting. Potential fix: forRootAsync({ inject: [ConfigService], useFactory: (config) => ({ connection: config.get("DATABASE_URL") }) }).',
    );
  }
  const providers: Provider[] = [
    {
      provide: JOBS_MODULE_OPTIONS,
      inject: [factoryClass],
      useFactory: (factory: JobsOptionsFactory) => factory.createJobsOptions(),
    },
  ];
  if (options.useClass) providers.push({ provide: options.useClass, useClass: options.useClass });
  return providers;
}
