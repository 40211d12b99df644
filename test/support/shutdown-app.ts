/**
 * An app on the embedded PostgreSQL with one job mid-run, for the shutdown-signal tests. Run with
 * `node --import ./test/support/register-swc.mjs test/support/shutdown-app.ts`; JOBS_DATA_DIR is
 * the embedded server's folder, SHUTDOWN_MODE one of:
 *   sample   the sample's own start (its shutdown hooks, its HTTP port from PORT)
 *   library  JobsModule.forRoot() with no connection, and Nest's default shutdown hooks
 *   bare     JobsModule.forRoot() with no connection, and no shutdown hooks at all
 * Prints "running <job id>" once the job's handler runs. The handler finishes only once the worker
 * says it waits for it (a shutdown's drain has begun), a moment later: so a signal always finds it
 * mid-run, and its outcome is written during the drain. Without shutdown hooks it never finishes.
 */
import 'reflect-metadata';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Job, JobQueue, JobsModule, type JobContext, type JobHandler } from 'nestjs-durable-jobs';

const mode = process.env.SHUTDOWN_MODE;
/** What the job still does once the drain began: the server must stay up for its outcome. */
const WORK_DURING_DRAIN_MS = 300;

/** Watches the app's own output for the worker's line, so that nothing here listens to signals. */
const drainBegan = new Promise<void>((resolve) => {
  const write = process.stdout.write.bind(process.stdout) as (...args: unknown[]) => boolean;
  process.stdout.write = ((chunk: unknown, ...rest: unknown[]) => {
    if (/Waiting up to \d+ ms for \d+ running job/.test(String(chunk))) resolve();
    return write(chunk, ...rest);
  }) as typeof process.stdout.write;
});

@Job('shutdown-probe')
class ShutdownProbe implements JobHandler<Record<string, never>, string> {
  async run(_: Record<string, never>, ctx: JobContext): Promise<string> {
    process.stdout.write(`running ${ctx.jobId}\n`);
    await drainBegan;
    await new Promise((resolve) => setTimeout(resolve, WORK_DURING_DRAIN_MS));
    return 'done';
  }
}

async function start(): Promise<INestApplicationContext> {
  if (mode === 'sample') {
    // Imported here only: the sample's job classes would be unregistered handlers in the other modes.
    const { startSample } = await import('../../sample/start-sample.js');
    return startSample({ demo: false, providers: [ShutdownProbe] });
  }
  @Module({ providers: [ShutdownProbe] })
  class ProbeModule {}
  @Module({
    imports: [
      JobsModule.forRoot({ embedded: { dataDir: process.env.JOBS_DATA_DIR }, worker: { pollInterval: 100 } }),
      ProbeModule,
    ],
  })
  class LibraryApp {}
  const app = await NestFactory.createApplicationContext(LibraryApp, { logger: ['log', 'warn', 'error'] });
  if (mode === 'library') app.enableShutdownHooks();
  else if (mode !== 'bare') throw new Error(`SHUTDOWN_MODE must be sample, library or bare; got ${mode}`);
  return app;
}

const app = await start();
await app.get(JobQueue).enqueue(ShutdownProbe, {});
