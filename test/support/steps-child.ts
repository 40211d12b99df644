/**
 * A worker in its own process for the step crash tests: JobsModule with the
 * ThreeSteps job as a victim, which hangs where each job's payload says, for
 * a SIGKILL to land there. Prints "ready <workerId>" once it is claiming. Run
 * with `node --import ./test/support/register-swc.mjs test/support/steps-child.ts`.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { JobsModule } from 'nestjs-durable-jobs';
import { jobsConnection } from './database.js';
import { STEP_RUNS, ThreeSteps, VICTIM } from './steps.jobs.js';

const schema = process.env.CHILD_SCHEMA!;

@Module({
  imports: [
    JobsModule.forRoot({
      ...jobsConnection(),
      schema,
      unregisteredJobs: 'ignore',
      // A minute-long lease: no stall of a shared machine ends it while the child lives.
      worker: { lease: 60_000, pollInterval: 100 },
      scheduler: { enabled: false },
    }),
  ],
  providers: [
    ThreeSteps,
    { provide: STEP_RUNS, useValue: `"${schema}".step_run` },
    { provide: VICTIM, useValue: true },
  ],
})
class StepsChildModule {}

const app = await NestFactory.createApplicationContext(StepsChildModule, { logger: ['error'] });
const { JobWorker } = await import('../../lib/worker/job-worker.service.js');
process.stdout.write(`ready ${app.get(JobWorker).id}\n`);
