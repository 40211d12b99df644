import { Module, ValidationPipe, type DynamicModule, type Provider } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import pg from 'pg';
import { JobsErrorFilter, JobsModule, type Clock, type WorkerOptions } from 'nestjs-durable-jobs';
import { JobsDashboardModule } from 'nestjs-durable-jobs/dashboard';
import { JobsHealthIndicator } from 'nestjs-durable-jobs/health';
import { JOBS_METRICS_REGISTRY, JobsMetrics } from 'nestjs-durable-jobs/metrics';
import { Registry } from 'prom-client';
import { DemoService } from './demo/demo.service.js';
import { FlakySync } from './jobs/flaky-sync.job.js';
import { Heartbeat } from './jobs/heartbeat.job.js';
import { NightlyReport } from './jobs/nightly-report.job.js';
import { SendReceipt } from './jobs/send-receipt.job.js';
import { SlowReport } from './jobs/slow-report.job.js';
import { ImportCleanup, ImportFile, NotifyAdmin, NotifyUser } from './imports/import.jobs.js';
import { ImportsController } from './imports/imports.controller.js';
import { Mailer } from './orders/mailer.service.js';
import { Order } from './orders/order.entity.js';
import { OrderStats } from './orders/order-stats.service.js';
import { OrdersController } from './orders/orders.controller.js';
import { SchedulesController } from './schedules/schedules.controller.js';
import { HealthController } from './operations/health.controller.js';
import { MetricsController } from './operations/metrics.controller.js';
import { OperationsController } from './operations/operations.controller.js';

export interface SampleConfig {
  databaseUrl: string;
  /**
   * Set when databaseUrl is a connection pooler such as PgBouncer: its pool mode, and the server's own
   * URL for what a pooler cannot carry. Passed to JobsModule as its `pooler` and `directConnection`.
   */
  pooled?: {
    pooler: 'transaction' | 'session';
    directConnection: string;
    /** Sessions of the app's DataSource, and the library's own beside it (its maxConnections). */
    budget?: { poolSize: number; maxConnections: number };
  };
  /** One schema for the sample's tables and the jobs, so test files stay apart. */
  schema?: string;
  worker?: WorkerOptions;
  clock?: Clock;
  /** Enqueue a few demo jobs at start (npm start). */
  demo?: boolean;
  /** Extra providers (tests add probe jobs here). */
  providers?: Provider[];
  /** For test files whose own @Job classes this app does not register. */
  unregisteredJobs?: 'error' | 'warn' | 'ignore';
}

@Module({})
export class AppModule {
  static forRoot(config: SampleConfig): DynamicModule {
    const schema = config.schema ?? 'public';
    return {
      module: AppModule,
      imports: [
        TypeOrmModule.forRootAsync({
          useFactory: async () => {
            await ensureSchema(config.databaseUrl, schema);
            const poolSize = config.pooled?.budget?.poolSize;
            return {
              type: 'postgres',
              url: config.databaseUrl,
              schema,
              entities: [Order],
              synchronize: true,
              ...(poolSize ? { poolSize } : {}),
            };
          },
        }),
        // The jobs share the app's DataSource: that is what makes `enqueue(…, { manager })` transactional.
        JobsModule.forRootAsync({
          inject: [DataSource],
          useFactory: (dataSource: DataSource) => ({
            dataSource,
            ...(config.pooled && {
              pooler: config.pooled.pooler,
              directConnection: config.pooled.directConnection,
              maxConnections: config.pooled.budget?.maxConnections,
            }),
            schema: schema === 'public' ? 'jobs' : `${schema}_jobs`,
            worker: config.worker,
            clock: config.clock,
            unregisteredJobs: config.unregisteredJobs,
          }),
        }),
        TerminusModule,
        // public: true opens the dashboard to anyone who reaches the port: fine for a local demo only.
        // Production apps pass their authentication guard instead: register({ guards: [AdminGuard] }).
        JobsDashboardModule.register({ path: 'dashboard', title: 'Sample jobs', public: true }),
      ],
      controllers: [
        OrdersController,
        ImportsController,
        SchedulesController,
        OperationsController,
        HealthController,
        MetricsController,
      ],
      providers: [
        // Bad input to the library (JobsError) answers 400 with its message, in every controller.
        { provide: APP_FILTER, useClass: JobsErrorFilter },
        // Every body, param and query declared with a DTO class is checked before its handler runs: a bad one
        // is a 400 naming the field, never a driver error (a 500). whitelist + forbidNonWhitelisted refuse
        // fields the DTO does not declare; stopAtFirstError keeps it to one message per field.
        {
          provide: APP_PIPE,
          useValue: new ValidationPipe({
            transform: true,
            whitelist: true,
            forbidNonWhitelisted: true,
            stopAtFirstError: true,
          }),
        },
        JobsHealthIndicator,
        JobsMetrics,
        { provide: JOBS_METRICS_REGISTRY, useFactory: () => new Registry() },
        Mailer,
        SendReceipt,
        FlakySync,
        SlowReport,
        ImportFile,
        NotifyUser,
        NotifyAdmin,
        ImportCleanup,
        OrderStats,
        NightlyReport,
        Heartbeat,
        ...(config.demo ? [DemoService] : []),
        ...(config.providers ?? []),
      ],
    };
  }
}

async function ensureSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  } finally {
    await client.end();
  }
}
