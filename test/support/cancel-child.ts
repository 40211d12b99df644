/**
 * A worker in its own process that runs HoldOn, for the tests of a cancel whose worker dies,
 * stalls or stops before acting on it. CHILD_SCHEMA the jobs schema, CHILD_LEASE the lease (ms),
 * CHILD_GRACE the shutdown grace (ms). Prints "ready" once it claims, and Nest's log lines (the
 * worker's "Waiting up to … running job(s)" among them). Run with
 * `node --import ./test/support/register-swc.mjs test/support/cancel-child.ts`.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { JobsModule } from 'nestjs-durable-jobs';
import { HoldOn } from './cancel.jobs.js';
import { jobsConnection } from './database.js';

@Module({
  imports: [
    JobsModule.forRoot({
      ...jobsConnection(),
      schema: process.env.CHILD_SCHEMA!,
      // cancel.jobs.ts holds a job of the in-process tests too.
      unregisteredJobs: 'ignore',
      worker: {
        lease: Number(process.env.CHILD_LEASE),
        shutdownGrace: Number(process.env.CHILD_GRACE ?? 1_000),
        pollInterval: 100,
      },
    }),
  ],
  providers: [HoldOn],
})
class CancelChildModule {}

const app = await NestFactory.createApplicationContext(CancelChildModule, { logger: ['log', 'warn', 'error'] });
app.enableShutdownHooks();
process.stdout.write('ready\n');
