import 'reflect-metadata';
import { Logger, type INestApplication, type Provider } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { startEmbeddedPostgres } from 'nestjs-durable-jobs';
import { AppModule } from './app.module.js';

export interface StartSampleOptions {
  /** Enqueue a few demo jobs at start. */
  demo: boolean;
  /** Extra providers (the shutdown tests add a job of their own). */
  providers?: Provider[];
}

/**
 * The sample on DATABASE_URL, or on an embedded PostgreSQL kept in JOBS_DATA_DIR (default
 * .jobs-data/sample) when none is set, so a bare machine needs nothing else. It listens on PORT
 * (default 3000) of HOST (default 127.0.0.1: its dashboard is public, so only this machine may
 * reach it; HOST=0.0.0.0 opens it to every network the machine is on).
 */
export async function startSample(options: StartSampleOptions): Promise<INestApplication> {
  const logger = new Logger('Sample');
  let databaseUrl = process.env.DATABASE_URL;
  const dataDir = process.env.JOBS_DATA_DIR ?? '.jobs-data/sample';
  const embedded = databaseUrl
    ? null
    : await startEmbeddedPostgres({ dataDir, logger: new Logger('EmbeddedPostgres') });
  if (embedded) {
    databaseUrl = embedded.url;
    logger.warn(`DATABASE_URL is not set: using an embedded PostgreSQL in ${dataDir} (development only)`);
  }
  const app = await NestFactory.create(
    AppModule.forRoot({ databaseUrl: databaseUrl!, demo: options.demo, providers: options.providers }),
    // 'debug' shows the worker's line for every job that succeeds.
    { logger: ['log', 'warn', 'error', 'debug'] },
  );
  // Ctrl-C and SIGTERM close the app: running jobs finish within the grace period or are handed
  // back, and their outcomes are written. The embedded server runs in a process group of its own,
  // so the terminal's Ctrl-C does not stop it under the draining app; the process.exit() that
  // follows the close stops it, and only then does the process end.
  app.enableShutdownHooks([], { useProcessExit: true });
  const port = Number(process.env.PORT ?? 3000);
  const host = process.env.HOST ?? '127.0.0.1';
  await app.listen(port, host);
  const shown = host === '127.0.0.1' || host === '0.0.0.0' ? 'localhost' : host;
  logger.log(
    `Sample app on http://${shown}:${port} — POST /orders, GET /jobs/:id, DELETE /jobs/:id, GET /schedules; dashboard at /dashboard`,
  );
  return app;
}
