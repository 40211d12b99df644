/**
 * One deployable of a multi-service system, in its own process, for the tests of services
 * sharing a schema. SERVICE picks the service ('api', 'billing', or 'rival': one that declares
 * api's schedule and queue limits differently), SERVICE_BUILD its release ('v1', or 'v2':
 * billing's next release, with one more schedule and another limit). Every handler returns the
 * service that ran it. ENQUEUE lists jobs to enqueue once started ('name:count,...'), whoever
 * runs them. Prints "ready" once it runs. Run with
 * `node --import ./test/support/register-swc.mjs test/support/service-app.ts`.
 */
import 'reflect-metadata';
import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { JobQueue, JobsModule, type JobsModuleOptions } from 'nestjs-durable-jobs';
import { jobsConnection } from './database.js';

const service = process.env.SERVICE!;
const build = process.env.SERVICE_BUILD ?? 'v1';

interface Variant {
  providers: Type[];
  options: JobsModuleOptions;
}

/** Each service's code holds only its own handlers: their classes are loaded for it alone. */
async function variant(): Promise<Variant> {
  if (service === 'api') {
    const { ApiTick, ApiWork } = await import('./services/api.jobs.js');
    return {
      providers: [ApiTick, ApiWork],
      options: { queues: { api: { concurrency: 5 } }, externalJobs: { 'billing-work': { queue: 'billing' } } },
    };
  }
  if (service === 'billing') {
    const v2 = build === 'v2';
    const { BillingTick, BillingWork } = await import('./services/billing.jobs.js');
    const added = v2 ? [(await import('./services/billing-v2.jobs.js')).BillingReport] : [];
    return {
      providers: [BillingTick, BillingWork, ...added],
      options: {
        queues: { billing: { concurrency: v2 ? 4 : 2 } },
        externalJobs: { 'api-work': { queue: 'api' } },
      },
    };
  }
  if (service === 'rival') {
    const { RivalTick } = await import('./services/rival.jobs.js');
    return {
      providers: [RivalTick],
      options: { queues: process.env.RIVAL_LIMITS ? { api: { concurrency: 9 } } : {} },
    };
  }
  throw new Error(`unknown SERVICE ${service}`);
}

async function appModule(): Promise<DynamicModule> {
  const { providers, options } = await variant();
  @Module({})
  class ServiceAppModule {}
  return {
    module: ServiceAppModule,
    imports: [
      JobsModule.forRoot({
        ...jobsConnection(),
        ...options,
        schema: process.env.CHILD_SCHEMA!,
        service,
        worker: { pollInterval: 100 },
        scheduler: { pollInterval: 200 },
      }),
    ],
    providers,
  };
}

const app = await NestFactory.createApplicationContext(await appModule(), { logger: ['error', 'warn'] });
app.enableShutdownHooks();
await app.init();
for (const item of (process.env.ENQUEUE ?? '').split(',').filter(Boolean)) {
  const [name, count] = item.split(':');
  for (let i = 0; i < Number(count); i++) await app.get(JobQueue).enqueue(name!, {});
}
process.stdout.write('ready\n');
