import type { INestApplication } from '@nestjs/common';
import { JobQueue, type JobsModuleOptions } from 'nestjs-durable-jobs';
import { sql } from './database.js';
import { FC_RUN_TABLE, flowProviders, Work } from './flow.jobs.js';
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

/**
 * An instance that only enqueues and lends its storage, over a queue `limited` to `concurrency`,
 * with `n` jobs in it: the storage-level tests of a limited queue's claims. Returns the app and
 * the jobs' ids in enqueue order.
 */
export async function limitedQueueOf(
  boot: ReturnType<typeof flowApps>['boot'],
  schema: string,
  concurrency: number,
  n: number,
) {
  const app = await boot(schema, { worker: { enabled: false }, queues: { limited: { concurrency } } });
  const refs = await app
    .get(JobQueue)
    .enqueueMany(
      Array.from({ length: n }, (_, seq) => ({ job: Work, payload: { seq }, options: { queue: 'limited' } })),
    );
  return { app, order: refs.map((r) => r.id) };
}
