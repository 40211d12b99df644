import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { startEmbeddedPostgres } from 'nestjs-durable-jobs';
import { AppModule } from './app.module.js';

/**
 * `npm start`: the sample on DATABASE_URL, or on an embedded PostgreSQL kept
 * in .jobs-data/ when none is set, so a bare machine needs nothing else.
 */
async function main(): Promise<void> {
  const logger = new Logger('Sample');
  let databaseUrl = process.env.DATABASE_URL;
  const embedded = databaseUrl
    ? null
    : await startEmbeddedPostgres({ dataDir: '.jobs-data/sample', logger: new Logger('EmbeddedPostgres') });
  if (embedded) {
    databaseUrl = embedded.url;
    logger.warn(`DATABASE_URL is not set: using an embedded PostgreSQL in .jobs-data/sample (development only)`);
  }
  const app = await NestFactory.create(AppModule.forRoot({ databaseUrl: databaseUrl!, demo: true }), {
    // 'debug' shows the worker's line for every job that succeeds.
    logger: ['log', 'warn', 'error', 'debug'],
  });
  // Ctrl-C and SIGTERM close the app: running jobs finish within the grace period or are handed back.
  // process.exit() after that (rather than re-raising the signal) also stops the embedded server,
  // which startEmbeddedPostgres signals when the process exits.
  app.enableShutdownHooks([], { useProcessExit: true });
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port);
  logger.log(
    `Sample app on http://localhost:${port} — POST /orders, GET /jobs/:id, DELETE /jobs/:id, GET /schedules; dashboard at /dashboard`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
