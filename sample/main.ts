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
  const embedded = databaseUrl ? null : await startEmbeddedPostgres({ dataDir: '.jobs-data/sample' });
  if (embedded) {
    databaseUrl = embedded.url;
    logger.warn(`DATABASE_URL is not set: using an embedded PostgreSQL in .jobs-data/sample (development only)`);
  }
  const app = await NestFactory.create(AppModule.forRoot({ databaseUrl: databaseUrl!, demo: true }), {
    // 'debug' shows the worker's line for every job that succeeds.
    logger: ['log', 'warn', 'error', 'debug'],
  });
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port);
  logger.log(`Sample app on http://localhost:${port} — POST /orders, GET /jobs/:id, DELETE /jobs/:id, GET /schedules`);

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.log(`${signal}: shutting down`);
    await app.close();
    await embedded?.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
