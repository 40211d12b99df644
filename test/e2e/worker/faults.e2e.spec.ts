import { Injectable, Module, type INestApplication, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  Job,
  JobQueue,
  JobsDatabaseError,
  JobsError,
  JobsModule,
  JobsMonitor,
  type JobContext,
  type JobHandler,
  type JobsModuleOptions,
} from 'nestjs-durable-jobs';
import { databaseUrl, dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { SilentProxy } from '../../support/silent-proxy.js';
import { waitFor } from '../../support/wait.js';

/** What the database does to the library, and what the library must do then: fail, never hang. */
const schemas: string[] = [];
const apps: INestApplication[] = [];
const proxies: SilentProxy[] = [];

@Injectable()
class Gates {
  readonly waiting = new Map<string, () => void>();
  open(id: string): void {
    this.waiting.get(id)?.();
  }
}

@Job('fault-gate')
class Gate implements JobHandler<{ hold: boolean }, string> {
  constructor(private readonly gates: Gates) {}
  async run(p: { hold: boolean }, ctx: JobContext): Promise<string> {
    if (p.hold) await new Promise<void>((resolve) => this.gates.waiting.set(ctx.jobId, resolve));
    return 'done';
  }
}

/** Every log line, so a test can see what the library said. */
class Recorder implements LoggerService {
  readonly lines: string[] = [];
  log = (m: unknown) => this.lines.push(String(m));
  warn = (m: unknown) => this.lines.push(String(m));
  error = (m: unknown) => this.lines.push(String(m));
  debug = () => undefined;
  verbose = () => undefined;
}

async function boot(schema: string, options: Partial<JobsModuleOptions>, logger: LoggerService | false = false) {
  @Module({ providers: [Gates, Gate] })
  class Own {}
  const ref = await Test.createTestingModule({
    imports: [JobsModule.forRoot({ connection: databaseUrl(), schema, unregisteredJobs: 'ignore', ...options }), Own],
  }).compile();
  const app = ref.createNestApplication({ logger });
  apps.push(app);
  await app.init();
  return app;
}

/** Fails the test naming `what` if `work` neither resolves nor rejects within `ms`: a hang, not a slow answer. */
async function settles<T>(what: string, work: Promise<T>, ms: number): Promise<PromiseSettledResult<T>> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} hung for ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([Promise.allSettled([work]).then(([r]) => r!), hung]);
  } finally {
    clearTimeout(timer);
  }
}

afterAll(async () => {
  for (const app of apps) await app.close().catch(() => undefined);
  for (const p of proxies) await p.close();
  await dropSchemas(...schemas);
});

describe('a database that stops answering, sockets open', () => {
  it('fails calls with a JobsDatabaseError after the query timeout, and shutdown still ends', async () => {
    const schema = uniqueSchema('silent');
    schemas.push(schema);
    const target = new URL(databaseUrl());
    const proxy = await SilentProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
    proxies.push(proxy);
    const app = await boot(schema, {
      connection: proxy.url(databaseUrl()),
      timeouts: { query: 1_500, connect: 1_000, statement: 1_000 },
      worker: { lease: 3_000, pollInterval: 100, shutdownGrace: 300 },
    });
    const jobs = app.get(JobQueue);
    const { id } = await jobs.enqueue(Gate, { hold: false });
    await waitFor('the job to run while the database answers', async () => (await jobs.get(id))?.state === 'succeeded');

    proxy.silence();
    const calls: Array<[string, () => Promise<unknown>]> = [
      ['enqueue()', () => jobs.enqueue(Gate, { hold: false })],
      ['get()', () => jobs.get(id)],
      ['JobsMonitor.counts()', () => app.get(JobsMonitor).counts()],
    ];
    for (const [what, call] of calls) {
      const result = await settles(what, call(), 10_000);
      expect(result.status).toBe('rejected');
      const error = (result as PromiseRejectedResult).reason as Error;
      expect(error).toBeInstanceOf(JobsDatabaseError);
      expect(error).toBeInstanceOf(JobsError);
      expect(error.message).toMatch(/the database call failed .*Potential fix/);
    }

    // Back again: the connections that timed out were dropped, new ones work.
    proxy.restore();
    await waitFor('an enqueue to succeed again', () =>
      jobs.enqueue(Gate, { hold: false }).then(
        () => true,
        () => false,
      ),
    );

    proxy.silence();
    const closed = await settles('app.close()', app.close(), 40_000);
    expect(closed.status).toBe('fulfilled');
    apps.splice(apps.indexOf(app), 1);
  });
});

describe('the connections the library opens', () => {
  it('carry an application_name operators can find them by', async () => {
    const schema = uniqueSchema('appname');
    schemas.push(schema);
    const target = new URL(databaseUrl());
    const proxy = await SilentProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
    proxies.push(proxy);
    const app = await boot(schema, { connection: proxy.url(databaseUrl()), worker: { pollInterval: 100 } });
    const { id } = await app.get(JobQueue).enqueue(Gate, { hold: false });
    await waitFor('the job to run', async () => (await app.get(JobQueue).get(id))?.state === 'succeeded');
    const names = await sql<{ application_name: string }>(
      `SELECT DISTINCT application_name FROM pg_stat_activity WHERE client_port = ANY($1::int[]) ORDER BY 1`,
      [proxy.upstreamPorts()],
    );
    // The module's own pool, the worker's pool, its renewals' connection and the LISTEN connection: every
    // session through the proxy is named.
    expect(names.map((n) => n.application_name)).toEqual([
      'nestjs-durable-jobs',
      'nestjs-durable-jobs listener',
      'nestjs-durable-jobs renewals',
      'nestjs-durable-jobs worker',
    ]);
  });
});

describe('a worker that lost its job', () => {
  it('has its late outcome refused by the fence, and says so in the log', async () => {
    const schema = uniqueSchema('late');
    schemas.push(schema);
    const logger = new Recorder();
    // A long lease: no renewal comes between the theft and the outcome, so the fence is what refuses it.
    const app = await boot(schema, { worker: { lease: 60_000, pollInterval: 100 } }, logger);
    const jobs = app.get(JobQueue);
    const { id } = await jobs.enqueue(Gate, { hold: true });
    await waitFor('the job to be held', () => app.get(Gates).waiting.has(id));
    await sql(`UPDATE "${schema}".job SET worker_id = 'another-worker' WHERE id = $1`, [id]);
    app.get(Gates).open(id);
    await waitFor('the refusal to be logged', () =>
      logger.lines.some((l) => l.includes(id) && l.includes('succeeded outcome was not recorded')),
    );
    expect(await jobs.get(id)).toMatchObject({ state: 'active', workerId: 'another-worker', result: null });
  });
});
