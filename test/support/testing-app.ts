import { Module, type INestApplication, type ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { JobQueue } from 'nestjs-durable-jobs';
import {
  JobsTester,
  JobsTestingModule,
  type JobsTestingAsyncOptions,
  type JobsTestingOptions,
} from 'nestjs-durable-jobs/testing';
import { jobsConnection } from './database.js';
import { KitJobsModule, KitLog } from './kit.jobs.js';

export interface TestingApp {
  app: INestApplication;
  tester: JobsTester;
  jobs: JobQueue;
  log: KitLog;
}

/**
 * An app built as the README tells users to build theirs: JobsTestingModule
 * beside the modules under test (here the kit's jobs), logs quiet unless
 * TEST_LOGS is set. Other files' @Job classes may be loaded in this
 * process, so unregistered ones are ignored.
 */
export async function startTestingApp(
  options: JobsTestingOptions | { async: JobsTestingAsyncOptions } = {},
  own: Pick<ModuleMetadata, 'imports' | 'providers'> = { imports: [KitJobsModule] },
): Promise<TestingApp> {
  @Module(own)
  class Own {}
  const kit =
    'async' in options
      ? JobsTestingModule.forRootAsync(options.async)
      : JobsTestingModule.forRoot({ ...jobsConnection(), unregisteredJobs: 'ignore', ...options });
  const ref = await Test.createTestingModule({ imports: [kit, Own] }).compile();
  const app = ref.createNestApplication({ logger: process.env.TEST_LOGS ? undefined : false });
  try {
    await app.init();
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
  return { app, tester: app.get(JobsTester), jobs: app.get(JobQueue), log: app.get(KitLog, { strict: false }) };
}
