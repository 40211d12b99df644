import type { INestApplication, Provider } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Clock, WorkerOptions } from 'nestjs-durable-jobs';
import { AppModule, type SampleConfig } from '../../sample/app.module.js';
import { jobsConnection } from './database.js';

export interface SampleAppOptions {
  schema: string;
  worker?: WorkerOptions;
  clock?: Clock;
  providers?: Provider[];
  unregisteredJobs?: 'error' | 'warn' | 'ignore';
  /** Start the demo (DemoService) as `npm start` does. */
  demo?: boolean;
}

/** Where the sample app's DataSource connects, as jobsConnection() says: to the server or through the pooler. */
export function sampleDatabase(): Pick<SampleConfig, 'databaseUrl' | 'pooled'> {
  const { connection, pooler, directConnection } = jobsConnection();
  return pooler
    ? { databaseUrl: connection, pooled: { pooler, directConnection: directConnection! } }
    : { databaseUrl: connection };
}

/** The sample app as the e2e tests run it: its own schema, quiet logs. */
export async function startSampleApp(options: SampleAppOptions): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      AppModule.forRoot({
        ...sampleDatabase(),
        schema: options.schema,
        worker: options.worker,
        clock: options.clock,
        providers: options.providers,
        unregisteredJobs: options.unregisteredJobs,
        demo: options.demo,
      }),
    ],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: process.env.TEST_LOGS ? undefined : ['error'] });
  await app.init();
  return app;
}
