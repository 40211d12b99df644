/**
 * A new app on the installed tarball, with the required peers only: boots
 * JobsModule on DATABASE_URL (schema JOBS_SCHEMA), runs one job through the
 * worker, and prints what came of it as one JSON line. Plain JavaScript, so
 * the decorators are called as functions.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createJobsMigrations, Job, JobQueue, JobsModule } from 'nestjs-durable-jobs';

class Double {
  run({ n }) {
    return { doubled: n * 2 };
  }
}
Job('package-double', { queue: 'package' })(Double);

class AppModule {}
Module({
  imports: [
    JobsModule.forRoot({
      connection: process.env.DATABASE_URL,
      schema: process.env.JOBS_SCHEMA,
      worker: { pollInterval: 100 },
    }),
  ],
  providers: [Double],
})(AppModule);

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
app.enableShutdownHooks();
try {
  const jobs = app.get(JobQueue);
  const { id } = await jobs.enqueue('package-double', { n: 21 });
  let job = await jobs.get(id);
  for (let tries = 0; tries < 300 && job?.state !== 'succeeded' && job?.state !== 'failed'; tries++) {
    await sleep(50);
    job = await jobs.get(id);
  }
  const migrations = createJobsMigrations('unused').length;
  console.log(JSON.stringify({ state: job?.state, result: job?.result, migrations }));
} finally {
  await app.close();
}
