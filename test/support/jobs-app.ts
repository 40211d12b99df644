import { Module, type INestApplication, type ModuleMetadata } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { JobsModule, type JobsModuleOptions } from 'nestjs-durable-jobs';
import { jobsConnection } from './database.js';

/**
 * A purpose-built app: JobsModule on `schema` of the test server plus one
 * module of the test's own (its handlers and whatever it observes with),
 * logs quiet unless TEST_LOGS is set. Other files' @Job classes may be
 * loaded in the same process, so unregistered ones are ignored.
 * `beforeInit` sees the providers before the worker starts (it starts in
 * init), for a test that must observe its very first claim.
 */
export async function startJobsApp(
  schema: string,
  options: Partial<JobsModuleOptions>,
  own: Pick<ModuleMetadata, 'imports' | 'providers'>,
  beforeInit?: (ref: TestingModule) => void,
): Promise<INestApplication> {
  @Module(own)
  class Own {}
  const ref = await Test.createTestingModule({
    imports: [JobsModule.forRoot({ ...jobsConnection(), schema, unregisteredJobs: 'ignore', ...options }), Own],
  }).compile();
  beforeInit?.(ref);
  const app = ref.createNestApplication({ logger: process.env.TEST_LOGS ? undefined : false });
  try {
    await app.init();
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
  return app;
}
