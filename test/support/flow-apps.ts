import type { INestApplication } from '@nestjs/common';
import type { JobsModuleOptions } from 'nestjs-durable-jobs';
import { sql } from './database.js';
import { FC_RUN_TABLE, flowProviders } from './flow.jobs.js';
import { startJobsApp } from './jobs-app.js';

/**
 * The flow-control tests' instances: each boots the flow jobs on a schema
 * (ten slots, a 100 ms poll, unless `options` say otherwise) with its run
 * table. `apps` holds those still open, for the test file to close.
 */
export function flowApps() {
  const apps: INestApplication[] = [];
  async function boot(schema: string, options: Partial<JobsModuleOptions> = {}): Promise<INestApplication> {
    const app = await startJobsApp(
      schema,
      { worker: { concurrency: 10, pollInterval: 100 }, ...options },
      { providers: flowProviders(schema) },
    );
    apps.push(app);
    await sql(FC_RUN_TABLE(schema));
    return app;
  }
  return { apps, boot };
}
