/**
 * A worker in its own process that runs only the invoke specs' parents, for
 * a SIGKILL to land while their children run elsewhere. Prints "ready
 * <workerId>" once it is claiming. Run with
 * `node --import ./test/support/register-swc.mjs test/support/invoke-child.ts`.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { JobsModule } from 'nestjs-durable-jobs';
import { jobsConnection } from './database.js';
import { InvokedChild, InvokingParent } from './invoke.jobs.js';

const schema = process.env.CHILD_SCHEMA!;

@Module({
  imports: [
    JobsModule.forRoot({
      ...jobsConnection(),
      schema,
      unregisteredJobs: 'ignore',
      // A short lease: a parent killed while it ran is rescued within seconds.
      worker: { lease: 1_000, pollInterval: 100, queues: ['inv-parents'] },
      scheduler: { enabled: false },
    }),
  ],
  providers: [InvokingParent, InvokedChild],
})
class InvokeChildModule {}

const app = await NestFactory.createApplicationContext(InvokeChildModule, { logger: ['error'] });
const { JobWorker } = await import('../../lib/worker/job-worker.service.js');
process.stdout.write(`ready ${app.get(JobWorker).id}\n`);
