/**
 * A worker in its own process, for crash tests: the sample app with a short
 * lease. Prints "ready <workerId>" once it is claiming. Run with
 * `node --import ./test/support/register-swc.mjs test/support/worker-child.ts`.
 */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from '../../sample/app.module.js';
import { sampleDatabase } from './sample-app.js';

const schema = process.env.CHILD_SCHEMA!;
const lease = Number(process.env.CHILD_LEASE ?? 1000);
const app = await NestFactory.createApplicationContext(
  AppModule.forRoot({ ...sampleDatabase(), schema, worker: { lease, pollInterval: 100 } }),
  { logger: ['error'] },
);
const { JobWorker } = await import('../../lib/worker/job-worker.service.js');
process.stdout.write(`ready ${app.get(JobWorker).id}\n`);
