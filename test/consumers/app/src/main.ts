// main.ts: boots the app, runs each kind of job once, and prints what came of it as one JSON line.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { JobQueue, type JobInfo } from 'nestjs-durable-jobs';
import { JobsHealthIndicator } from 'nestjs-durable-jobs/health';
import { AppModule } from './app.module.js';
import { Double, Receipt, StepByStep, Ticks } from './jobs.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, check: () => Promise<T | undefined | null | false>): Promise<T> {
  for (let tries = 0; tries < 600; tries++) {
    const value = await check();
    if (value) return value;
    await sleep(50);
  }
  throw new Error(`Gave up waiting for ${what}`);
}

async function main(): Promise<void> {
  const schema = process.env.JOBS_SCHEMA!;
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  try {
    const jobs = app.get(JobQueue);
    const dataSource = app.get(DataSource);
    const settled = (id: string) =>
      until(`job ${id} to settle`, async () => {
        const job = await jobs.get(id);
        return job && ['succeeded', 'failed', 'cancelled'].includes(job.state) ? job : null;
      });
    const outcome = (job: JobInfo) => ({ state: job.state, result: job.result });

    const double = await settled((await jobs.enqueue(Double, { n: 21 })).id);

    const steps = await settled((await jobs.enqueue(StepByStep, { from: 4 })).id);

    // In the order's transaction: the job exists only if the order commits.
    await dataSource.query(`CREATE TABLE "${schema}".orders (id serial PRIMARY KEY, email text NOT NULL)`);
    const committed = await dataSource.transaction(async (manager) => {
      const [order] = (await manager.query(`INSERT INTO "${schema}".orders (email) VALUES ($1) RETURNING id`, [
        'ada@example.com',
      ])) as [{ id: number }];
      return (await jobs.enqueue(Receipt, { orderId: order.id }, { manager })).id;
    });
    const receipt = await settled(committed);
    let rolledBack = '';
    await dataSource
      .transaction(async (manager) => {
        await manager.query(`INSERT INTO "${schema}".orders (email) VALUES ($1)`, ['grace@example.com']);
        rolledBack = (await jobs.enqueue(Receipt, { orderId: -1 }, { manager })).id;
        throw new Error('roll back');
      })
      .catch(() => undefined);
    const [{ orders }] = (await dataSource.query(`SELECT count(*)::int AS orders FROM "${schema}".orders`)) as [
      { orders: number },
    ];

    const ticks = app.get(Ticks);
    await until('two ticks of the cron job', async () => ticks.jobIds.size >= 2);
    const tickStates = await Promise.all([...ticks.jobIds].slice(0, 2).map(async (id) => (await settled(id)).state));

    const health = await app.get(JobsHealthIndicator).isHealthy();

    console.log(
      JSON.stringify({
        node: process.version,
        moduleSystem: typeof require === 'function' ? 'commonjs' : 'module',
        double: outcome(double),
        steps: { ...outcome(steps), steps: steps.steps.map((s) => s.name) },
        transaction: {
          committed: outcome(receipt),
          rolledBack: { id: Boolean(rolledBack), job: await jobs.get(rolledBack) },
          orders,
        },
        cron: { name: (await jobs.get([...ticks.jobIds][0]!))?.name, states: tickStates },
        health: health.jobs.status,
      }),
    );
  } finally {
    await app.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
