/**
 * One worker process of the chaos suite: JobsModule with a short lease and
 * the ChaosWork handler, nothing else. Started by chaos/main.ts; prints
 * "ready" once it is claiming. Settings come from the environment (CHAOS_*).
 */
import 'reflect-metadata';
import { Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { JobsModule } from 'nestjs-durable-jobs';
import { ChaosWork, JOBS_SCHEMA } from './chaos-work.job.js';

@Module({})
class ChaosWorkerModule {
  static forRoot(url: string, lease: number, concurrency: number, synchronousCommit: boolean): DynamicModule {
    return {
      module: ChaosWorkerModule,
      imports: [
        JobsModule.forRoot({
          // Room for every handler's ctx.transaction() at once beside the module's own pool queries.
          connection: { url, poolSize: concurrency + 5 },
          schema: JOBS_SCHEMA,
          // A short poll: after PostgreSQL comes back, the LISTEN connection may still be reconnecting.
          worker: { lease, concurrency, pollInterval: 250, shutdownGrace: 1_000, synchronousCommit },
          scheduler: { enabled: false },
        }),
      ],
      providers: [ChaosWork],
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
    env('CHAOS_DATABASE_URL'),
    Number(env('CHAOS_LEASE')),
    Number(env('CHAOS_CONCURRENCY')),
    process.env.CHAOS_SYNCHRONOUS_COMMIT === '1',
  ),
  { logger: ['error', 'warn'] },
);
app.enableShutdownHooks(['SIGTERM']);
process.stdout.write('ready\n');
