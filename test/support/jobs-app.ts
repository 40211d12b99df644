import { Module, type INestApplication, type ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { JobsModule, type JobsModuleOptions } from 'nestjs-durable-jobs';
import { databaseUrl } from './database.js';

/**
 * A purpose-built app: JobsModule on `schema` of the test server plus one
 * module of the test's own (its handlers and whatever it observes with),
 * logs quiet unless TEST_LOGS is set. Other files' @Job classes may be
 * loaded in the same process, so unregistered ones are ignored.
 */
export async function startJobsApp(
  schema: string,
  options: Partial<JobsModuleOptions>,
  own: Pick<ModuleMetadata, 'imports' | 'providers'>,
): Promise<INestApplication> {
  @Module(own)
  class Own {}
  const ref = await Test.createTestingModule({
    imports: [JobsModule.forRoot({ connection: databaseUrl(), schema, unregisteredJobs: 'ignore', ...options }), Own],
  }).compile();
  const app = ref.createNestApplication({ logger: process.env.TEST_LOGS ? undefined : false });
  try {
    await app.init();
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
  return app;
}
