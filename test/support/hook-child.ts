/**
 * An instance running HookProbe jobs in its own process, for the crash test
 * of onFailure reruns. Prints "ready <workerId>" once it is claiming. Run
 * with `node --import ./test/support/register-swc.mjs test/support/hook-child.ts`.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { JobsModule } from 'nestjs-durable-jobs';
import { jobsConnection } from './database.js';
import { HookProbe, NoHookProbe, SlowHookProbe } from './hook.jobs.js';

@Module({
  imports: [
    JobsModule.forRoot({
      ...jobsConnection(),
      schema: process.env.CHILD_SCHEMA!,
      unregisteredJobs: 'ignore',
      worker: { lease: 1000, pollInterval: 100 },
    }),
  ],
  providers: [HookProbe, SlowHookProbe, NoHookProbe],
})
class HookChildModule {}

const app = await NestFactory.createApplicationContext(HookChildModule, { logger: ['error'] });
await app.init();
const { JobWorker } = await import('../../lib/worker/job-worker.service.js');
process.stdout.write(`ready ${app.get(JobWorker).id}\n`);
