import { Global, Injectable, Module, type INestApplication, type OnApplicationBootstrap } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Job, JobQueue, JobsModule, type JobHandler } from 'nestjs-durable-jobs';
import { CLAIM_STORAGE, type ClaimStorage } from '../../../lib/storage/jobs/claim/claim-storage.interface.js';
import { PostgresClaimStorage } from '../../../lib/storage/jobs/claim/postgres-claim-storage.js';
import { dropSchemas, jobsConnection, sql, uniqueSchema } from '../../support/database.js';
import { sleep, waitFor } from '../../support/wait.js';

/** A failed boot must leave nothing running: no worker claiming jobs, nobody to stop it. */
const schemas: string[] = [];
const apps: INestApplication[] = [];
let runs = 0;

@Job('life-noop')
class Noop implements JobHandler {
  run() {
    runs++;
  }
}

@Injectable()
class Broken implements OnApplicationBootstrap {
  onApplicationBootstrap(): void {
    throw new Error('this provider fails its bootstrap');
  }
}

@Global()
@Module({ providers: [Broken] })
class BrokenGlobalModule {}

@Module({ providers: [Broken] })
class BrokenModule {}

afterAll(async () => {
  for (const app of apps) await app.close().catch(() => undefined);
  await dropSchemas(...schemas);
});

/** Boots an app expected to fail; returns it (not closed: the caller of a failed boot has nothing to close). */
async function failedBoot(schema: string, imports: unknown[], storage?: (s: ClaimStorage) => ClaimStorage) {
  let builder = Test.createTestingModule({ imports: imports as never[] });
  if (storage) {
    builder = builder
      .overrideProvider(CLAIM_STORAGE)
      .useFactory({ factory: (s: PostgresClaimStorage) => storage(s), inject: [PostgresClaimStorage] });
  }
  const app = (await builder.compile()).createNestApplication({ logger: false });
  apps.push(app);
  await expect(app.init()).rejects.toThrow();
  return app;
}

async function assertNothingRuns(schema: string): Promise<void> {
  // A job that was due all along: a live worker would have run it well within this wait (polls every 50 ms).
  await sleep(700);
  expect(runs).toBe(0);
  const [job] = await sql<{ state: string }>(`SELECT state FROM "${schema}".job`);
  expect(job?.state).toBe('queued');
  const live = await sql(`SELECT id FROM "${schema}".worker WHERE stopped_at IS NULL`);
  expect(live).toEqual([]);
}

async function seed(schema: string): Promise<void> {
  // The schema and one due job, written by an app with no worker.
  const ref = await Test.createTestingModule({
    imports: [JobsModule.forRoot({ ...jobsConnection(), schema, worker: { enabled: false } }), SeedModule],
  }).compile();
  const app = await ref.createNestApplication({ logger: false }).init();
  await app.get(JobQueue).enqueue(Noop, undefined);
  await app.close();
}

@Module({ providers: [Noop] })
class SeedModule {}

const jobs = (schema: string, extra: object = {}) =>
  JobsModule.forRoot({ ...jobsConnection(), schema, worker: { pollInterval: 50 }, ...extra });

describe('a boot that fails', () => {
  it('in a global module imported after JobsModule: no worker ever claims', async () => {
    const schema = uniqueSchema('life');
    schemas.push(schema);
    await seed(schema);
    await failedBoot(schema, [jobs(schema), SeedModule, BrokenGlobalModule]);
    await assertNothingRuns(schema);
  });

  it('in the root module, with JobsModule not global (its hooks would run first): no worker ever claims', async () => {
    const schema = uniqueSchema('life');
    schemas.push(schema);
    await seed(schema);
    @Module({ imports: [jobs(schema, { isGlobal: false })], providers: [Noop] })
    class WorkerModule {}
    await failedBoot(schema, [WorkerModule, BrokenModule]);
    await assertNothingRuns(schema);
  });

  it("in the library's own start, half-way: what started is stopped", async () => {
    const schema = uniqueSchema('life');
    schemas.push(schema);
    await seed(schema);
    const failing = (s: ClaimStorage): ClaimStorage =>
      new Proxy(s, {
        get(target, prop, receiver) {
          if (prop === 'openWorkerConnections') {
            return () => Promise.reject(new Error('the worker pool cannot connect'));
          }
          const value = Reflect.get(target, prop, receiver) as unknown;
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    await failedBoot(schema, [jobs(schema), SeedModule], failing);
    // It got as far as registering its worker row; the stop marked it stopped.
    const rows = await sql<{ stopped_at: Date | null }>(`SELECT stopped_at FROM "${schema}".worker`);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.stopped_at).not.toBeNull();
    await assertNothingRuns(schema);
  });

  it('the same app without the failing provider runs the job (the checks above can see a worker)', async () => {
    const schema = uniqueSchema('life');
    schemas.push(schema);
    await seed(schema);
    const ref = await Test.createTestingModule({ imports: [jobs(schema), SeedModule] }).compile();
    const app = await ref.createNestApplication({ logger: false }).init();
    apps.push(app);
    await waitFor('the job to run', async () => runs === 1);
    runs = 0;
  });
});
