/**
 * One worker process of the chaos suite: JobsModule with a short lease and
 * the chaos handlers (ChaosWork, and --invoke's ChaosParent and ChaosChild),
 * nothing else. Started by chaos/main.ts; prints "ready" once it is claiming.
 * Settings come from the environment (CHAOS_*).
 */
import 'reflect-metadata';
import { Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { JobsModule } from 'nestjs-durable-jobs';
import { ChaosChild, ChaosParent, ChaosWork, JOBS_SCHEMA } from './chaos-work.job.js';

/** How a worker reaches PostgreSQL: straight, or through the chaos' PgBouncer (--pooler). */
interface Reach {
  url: string;
  pooler: 'transaction' | 'session' | null;
  /** The server's own URL, for LISTEN and migrations, behind a pooler. */
  directUrl: string | null;
  /** Set behind a session pooler: this worker's share of PgBouncer's server connections (chaos/pooler-sizing.ts). */
  maxConnections: number | null;
}

@Module({})
class ChaosWorkerModule {
  static forRoot(reach: Reach, lease: number, concurrency: number, synchronousCommit: boolean): DynamicModule {
    const { url, pooler, directUrl, maxConnections } = reach;
    return {
      module: ChaosWorkerModule,
      imports: [
        JobsModule.forRoot({
          // Room for every handler's ctx.transaction() at once beside the module's own pool queries
          // (the budget rises to fit: 15 + worker 2 + renewals 1 + LISTEN 1). Through a transaction
          // pooler too: 3 workers then open up to 54 client connections (LISTEN goes direct) for
          // PgBouncer's 20 server connections, well under its max_client_conn of 100, and a client
          // waits for a server connection only while others run transactions: the --ci runs saw no
          // query_wait_timeout and no client timeout. A session keeps its server connection, so
          // behind a session pooler the worker keeps to maxConnections instead (chaos/pooler-sizing.ts) and
          // the library sizes the pool.
          connection: maxConnections === null ? { url, poolSize: concurrency + 5 } : url,
          ...(pooler ? { pooler, directConnection: directUrl! } : {}),
          ...(maxConnections === null ? {} : { maxConnections }),
          schema: JOBS_SCHEMA,
          // A short poll: after PostgreSQL comes back, the LISTEN connection may still be reconnecting.
          worker: { lease, concurrency, pollInterval: 250, shutdownGrace: 1_000, synchronousCommit },
          scheduler: { enabled: false },
        }),
      ],
      providers: [ChaosWork, ChaosParent, ChaosChild],
    };
  }
}

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: chaos/worker.ts is started by chaos/main.ts`);
  return value;
};

// Without its orchestrator (killed, even by SIGKILL) a worker would run on
// against a server nobody stops: the closed stdin pipe says it is gone.
process.stdin.resume();
process.stdin.on('end', () => process.exit(3));

const app = await NestFactory.createApplicationContext(
  ChaosWorkerModule.forRoot(
    {
      url: env('CHAOS_DATABASE_URL'),
      pooler: (process.env.CHAOS_POOLER || null) as Reach['pooler'],
      directUrl: process.env.CHAOS_DIRECT_URL || null,
      maxConnections: process.env.CHAOS_MAX_CONNECTIONS ? Number(process.env.CHAOS_MAX_CONNECTIONS) : null,
    },
    Number(env('CHAOS_LEASE')),
    Number(env('CHAOS_CONCURRENCY')),
    process.env.CHAOS_SYNCHRONOUS_COMMIT === '1',
  ),
  { logger: ['error', 'warn'] },
);
app.enableShutdownHooks(['SIGTERM']);
process.stdout.write('ready\n');
