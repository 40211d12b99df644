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
  if (!pooler) return { databaseUrl: connection };
  // A session pooler holds a server connection per client session: three instances of the sample must
  // fit PgBouncer's default pool of 20, so each keeps 2 for its DataSource and 4 of the library's own.
  const budget = pooler === 'session' ? { poolSize: 2, maxConnections: 4 } : undefined;
  return { databaseUrl: connection, pooled: { pooler, directConnection: directConnection!, budget } };
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
