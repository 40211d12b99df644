import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import pg from 'pg';
import { Job, JobQueue, JobsModule, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../../lib/storage/embedded/embedded-postgres.js';
import { freePort } from '../../../lib/storage/embedded/server-process.js';
import { killServersOn } from '../../support/app-process.js';
import { waitFor } from '../../support/wait.js';

// A PostgreSQL restart in the middle of a drain: the server is the test's own (an embedded one on
// a port it keeps, never the shared server), stopped (fast shutdown) while jobs run and more are
// queued, then started again on the same data. The module must get back to work by itself and
// every job must end succeeded: none lost, none failed by the outage.

const quiet = { log: () => undefined, warn: () => undefined };
const JOBS = 240;
/** Jobs below this run at once; the others wait at the gate, which opens while the server is down. */
const BEFORE_GATE = 40;

/** The gate, and the jobs that have run (some may run twice: a restart is at-least-once). */
@Injectable()
class Drain {
  readonly ran = new Set<number>();
  open = false;
  private readonly waiting: Array<() => void> = [];
  release(): void {
    this.open = true;
    for (const go of this.waiting.splice(0)) go();
  }
  gate(): Promise<void> {
    return this.open ? Promise.resolve() : new Promise((resolve) => this.waiting.push(resolve));
  }
}

@Job('pgr-work', { maxAttempts: 5, backoff: { type: 'fixed', delay: 100 } })
class Work implements JobHandler<{ n: number }> {
  constructor(private readonly drain: Drain) {}
  async run({ n }: { n: number }, ctx: JobContext): Promise<void> {
    if (n >= BEFORE_GATE) await this.drain.gate();
    ctx.signal.throwIfAborted();
    this.drain.ran.add(n);
  }
}

let root: string;
let dataDir: string;
let port: number;
let server: EmbeddedPostgresHandle | null = null;
let app: INestApplication | null = null;

async function query<T>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: server!.url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end().catch(() => undefined);
  }
}

const states = async (): Promise<Record<string, number>> =>
  Object.fromEntries(
    (await query<{ state: string; n: number }>(`SELECT state, count(*)::int AS n FROM pgr.job GROUP BY state`)).map(
      (r) => [r.state, r.n],
    ),
  );

beforeAll(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), 'jobs-pg-restart-'));
  // mkdtemp makes a 0700 folder; the server runs as OS user postgres when we are root.
  await fs.chmod(root, 0o755);
  dataDir = path.join(root, 'db');
  // A port of its own, kept across the restart: the module's URL must reach the server again.
  port = await freePort();
  server = await startEmbeddedPostgres({ dataDir, port, logger: quiet });
}, 120_000);

afterAll(async () => {
  await app?.close().catch(() => undefined);
  await server?.stop().catch(() => undefined);
  // Only a failed test leaves a server running.
  killServersOn(path.join(dataDir, 'pgdata'));
  await fs.rm(root, { recursive: true, force: true });
}, 120_000);

it('a PostgreSQL restart in the middle of a drain: the module recovers by itself, 0 jobs lost', async () => {
  @Module({ providers: [Drain, Work] })
  class Own {}
  const ref = await Test.createTestingModule({
    imports: [
      JobsModule.forRoot({
        connection: server!.url,
        schema: 'pgr',
        unregisteredJobs: 'ignore',
        // A short lease: jobs whose renewals the outage stopped are rescued within the test.
        worker: { concurrency: 8, pollInterval: 100, lease: 3_000, shutdownGrace: 1_000 },
        timeouts: { connect: 2_000 },
      }),
      Own,
    ],
  }).compile();
  app = ref.createNestApplication({ logger: process.env.TEST_LOGS ? undefined : false });
  await app.init();
  const jobs = app.get(JobQueue);
  const drain = app.get(Drain);

  await jobs.enqueueMany(Array.from({ length: JOBS }, (_, n) => ({ job: Work, payload: { n } })));
  // Mid-drain: the jobs before the gate done, a worker's worth running at the gate, the rest queued.
  await waitFor('the jobs before the gate, and some at it', async () => {
    const s = await states();
    return s.succeeded === BEFORE_GATE && (s.active ?? 0) > 0 && (s.queued ?? 0) > 0;
  });

  await server!.stop();
  // The running jobs end while the server is down: their outcomes cannot be written then.
  drain.release();
  server = await startEmbeddedPostgres({ dataDir, port, logger: quiet });

  // Back by itself: the jobs from before the restart end, and so do jobs enqueued after it.
  const after = await waitFor(
    'a job enqueued after the restart',
    () =>
      // Unique keys: a call retried after an error whose insert did commit adds no second job.
      jobs
        .enqueueMany(
          Array.from({ length: 20 }, (_, i) => ({
            job: Work,
            payload: { n: JOBS + i },
            options: { unique: { key: `after-${i}` } },
          })),
        )
        .catch(() => null),
    60_000,
    250,
  );
  expect(after).toHaveLength(20);
  await waitFor(
    'every job to succeed',
    async () => {
      const s = await states();
      return s.succeeded === JOBS + 20 ? s : null;
    },
    120_000,
    250,
  );
  expect(await states()).toEqual({ succeeded: JOBS + 20 });
  expect(drain.ran.size).toBe(JOBS + 20);
}, 300_000);
