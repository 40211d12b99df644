import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Module, type INestApplication, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { Job, JobQueue, JobsModule, createJobsMigrations, type JobHandler } from 'nestjs-durable-jobs';
import { databaseUrl, dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { waitFor } from '../../support/wait.js';
import { schemaMigrations } from '../../../lib/storage/migrations/migration-files.js';

const ALL_VERSIONS = schemaMigrations().map((m) => m.version);

// This file defines its job classes inside the tests, so each test's strays
// are visible to the later ones: those boot with unregisteredJobs 'ignore',
// except the last, which is about exactly that check.
const schemas: string[] = [];
const apps: INestApplication[] = [];

async function boot(schema: string, providers: Type[], extra: Partial<Parameters<typeof JobsModule.forRoot>[0]> = {}) {
  @Module({ providers })
  class Jobs {}
  const ref = await Test.createTestingModule({
    imports: [
      JobsModule.forRoot({
        connection: databaseUrl(),
        schema,
        worker: { pollInterval: 100 },
        unregisteredJobs: 'ignore',
        ...extra,
      }),
      Jobs,
    ],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  apps.push(app);
  return app;
}

/** PostgreSQL processes whose command line or working directory is under `dir`. */
function serverProcesses(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if (cmdline.includes(dir) || cwd.startsWith(dir)) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

afterAll(async () => {
  for (const app of apps) await app.close().catch(() => undefined);
  await dropSchemas(...schemas);
});

it('three instances starting at once migrate the schema once, without error', async () => {
  const schema = uniqueSchema('migrate');
  schemas.push(schema);
  @Job('noop')
  class Noop implements JobHandler {
    run() {
      return 'ok';
    }
  }
  const started = await Promise.all([boot(schema, [Noop]), boot(schema, [Noop]), boot(schema, [Noop])]);
  const versions = await sql<{ version: number }>(`SELECT version FROM "${schema}".schema_version`);
  expect(versions.map((v) => v.version).sort((a, b) => a - b)).toEqual(ALL_VERSIONS);
  const { id } = await started[0]!.get(JobQueue).enqueue(Noop, undefined);
  await waitFor('the job to run', async () => (await started[1]!.get(JobQueue).get(id))?.state === 'succeeded');
  expect((await started[2]!.get(JobQueue).get(id))!.result).toBe('ok');
});

it('with migrationsRun: false the start fails on a missing schema, and the exported migrations create it', async () => {
  const schema = uniqueSchema('manual');
  schemas.push(schema);
  await expect(boot(schema, [], { migrationsRun: false })).rejects.toThrow(
    new RegExp(
      `lacks migration\\(s\\) ${ALL_VERSIONS.join(', ')} and migrationsRun is false\\. Potential fix: add createJobsMigrations`,
    ),
  );
  const ds = new DataSource({ type: 'postgres', url: databaseUrl(), migrations: createJobsMigrations(schema) });
  await ds.initialize();
  await ds.runMigrations();
  await ds.query(`DELETE FROM migrations WHERE name LIKE $1`, [`DurableJobs_${schema}_%`]);
  await ds.destroy();
  const app = await boot(schema, [], { migrationsRun: false });
  expect(app.get(JobQueue)).toBeDefined();
});

it('a schema written by a different build of the same version is refused with the fix', async () => {
  const schema = uniqueSchema('stale');
  schemas.push(schema);
  const app = await boot(schema, []);
  await app.close();
  apps.splice(apps.indexOf(app), 1);
  await sql(`UPDATE "${schema}".schema_version SET checksum = 'from-another-build' WHERE version = 1`);
  await expect(boot(schema, [])).rejects.toThrow(
    /Schema "t_stale_\w+" holds version 1 of the job tables as written by a different build.*Potential fix: in development, drop it \(DROP SCHEMA/,
  );
});

it('worker.synchronousCommit: true runs jobs the same way, committing with the flush', async () => {
  const schema = uniqueSchema('sync');
  schemas.push(schema);
  @Job('sync-noop')
  class SyncNoop implements JobHandler<{ n: number }> {
    run(p: { n: number }) {
      return p.n;
    }
  }
  const app = await boot(schema, [SyncNoop], { worker: { pollInterval: 100, synchronousCommit: true } });
  const { id } = await app.get(JobQueue).enqueue(SyncNoop, { n: 7 });
  await waitFor('the job to run', async () => (await app.get(JobQueue).get(id))?.state === 'succeeded');
  expect((await app.get(JobQueue).get(id))!.result).toBe(7);
});

it('forRootAsync takes its options from a factory with injected dependencies', async () => {
  const schema = uniqueSchema('async');
  schemas.push(schema);
  @Job('async-noop')
  class AsyncNoop implements JobHandler<{ n: number }> {
    run(p: { n: number }) {
      return p.n + 1;
    }
  }
  const CONFIG = 'CONFIG';
  @Module({ providers: [{ provide: CONFIG, useValue: { url: databaseUrl(), schema } }], exports: [CONFIG] })
  class ConfigModule {}
  @Module({ providers: [AsyncNoop] })
  class Jobs {}
  const ref = await Test.createTestingModule({
    imports: [
      JobsModule.forRootAsync({
        imports: [ConfigModule],
        inject: [CONFIG],
        useFactory: (config: { url: string; schema: string }) => ({
          connection: config.url,
          schema: config.schema,
          worker: { pollInterval: 100 },
          unregisteredJobs: 'warn',
        }),
      }),
      Jobs,
    ],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  apps.push(app);
  const { id } = await app.get(JobQueue).enqueue(AsyncNoop, { n: 41 });
  await waitFor('the job to run', async () => (await app.get(JobQueue).get(id))?.state === 'succeeded');
  expect((await app.get(JobQueue).get(id))!.result).toBe(42);
});

it('with neither connection nor dataSource, an embedded PostgreSQL starts, runs a job and stops cleanly', async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'jobs-default-'));
  await fs.chmod(dir, 0o755);
  try {
    @Job('embedded-noop')
    class EmbeddedNoop implements JobHandler<{ n: number }> {
      run(p: { n: number }) {
        return p.n * 2;
      }
    }
    @Module({ providers: [EmbeddedNoop] })
    class Jobs {}
    const ref = await Test.createTestingModule({
      imports: [
        JobsModule.forRoot({ embedded: { dataDir: dir }, unregisteredJobs: 'ignore', worker: { pollInterval: 100 } }),
        Jobs,
      ],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    expect(serverProcesses(dir).length).toBeGreaterThan(0);
    const { id } = await app.get(JobQueue).enqueue(EmbeddedNoop, { n: 21 });
    await waitFor(
      'the job to run on the embedded server',
      async () => (await app.get(JobQueue).get(id))?.state === 'succeeded',
    );
    expect((await app.get(JobQueue).get(id))!.result).toBe(42);
    await app.close();
    expect(serverProcesses(dir)).toEqual([]);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

it('an unset DATABASE_URL, or NODE_ENV=production with no connection, is refused: no throwaway database starts', async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'jobs-refused-'));
  const start = async (options: Parameters<typeof JobsModule.forRoot>[0]) => {
    const ref = await Test.createTestingModule({ imports: [JobsModule.forRoot(options)] }).compile();
    const app = ref.createNestApplication({ logger: false });
    try {
      await app.init();
    } finally {
      await app.close();
    }
  };
  const production = process.env.NODE_ENV;
  try {
    await expect(start({ connection: process.env.NO_SUCH_VARIABLE, embedded: { dataDir: dir } })).rejects.toThrow(
      /"connection" is undefined, as when it is read from an unset environment variable.*Potential fix: set the variable/,
    );
    process.env.NODE_ENV = 'production';
    await expect(start({ embedded: { dataDir: dir } })).rejects.toThrow(
      /NODE_ENV is "production": the embedded PostgreSQL is for development only/,
    );
    // Nothing was started in the folder either time.
    expect(serverProcesses(dir)).toEqual([]);
    expect(await fs.readdir(dir)).toEqual([]);
  } finally {
    process.env.NODE_ENV = production;
    if (production === undefined) delete process.env.NODE_ENV;
    await fs.rm(dir, { recursive: true, force: true });
  }
});

it('a @Job class without run() fails the start, naming the class', async () => {
  const schema = uniqueSchema('norun');
  schemas.push(schema);
  @Job('no-run')
  class NoRun {}
  await expect(boot(schema, [NoRun])).rejects.toThrow(
    /NoRun is marked @Job\('no-run'\) but has no run\(payload, ctx\) method\. Potential fix/,
  );
});

it('duplicate @Job names fail the start with both class names', async () => {
  const schema = uniqueSchema('dup');
  schemas.push(schema);
  @Job('same-name')
  class First implements JobHandler {
    run() {}
  }
  @Job('same-name')
  class Second implements JobHandler {
    run() {}
  }
  await expect(boot(schema, [First, Second])).rejects.toThrow(
    /Job name "same-name" is used by two classes: First and Second\. Potential fix/,
  );
});

it('a @Job class that no module registers fails the start, unless listed as external', async () => {
  const schema = uniqueSchema('unreg');
  schemas.push(schema);
  @Job('orphan')
  class Orphan implements JobHandler {
    run() {}
  }
  @Job('present')
  class Present implements JobHandler {
    run() {}
  }
  const externals = ['no-run', 'same-name', 'noop', 'upgrade-noop', 'async-noop', 'embedded-noop', 'sync-noop'];
  await expect(boot(schema, [Present], { externalJobs: externals, unregisteredJobs: 'error' })).rejects.toThrow(
    /Orphan is marked @Job\('orphan'\) but is not registered as a provider in any module.*Potential fix: add Orphan to the "providers"/,
  );
  const byName = await boot(schema, [Present], { externalJobs: [...externals, 'orphan'], unregisteredJobs: 'error' });
  // Listed by name only, its queue is unknown here: the enqueue must say where, or it could wait forever.
  await expect(byName.get(JobQueue).enqueue('orphan', undefined)).rejects.toThrow(
    /"orphan" is an external job listed by name only, so the queue its workers serve is unknown here.*Potential fix: externalJobs: \{ 'orphan': \{ queue: 'its-queue' \} \}/,
  );
  const placed = await byName.get(JobQueue).enqueue('orphan', undefined, { queue: 'elsewhere' });
  expect((await byName.get(JobQueue).get(placed.id))!.queue).toBe('elsewhere');

  // With its options, an external job is enqueued as the service that runs it declares.
  const external = Object.fromEntries([
    ...externals.map((n) => [n, {}]),
    ['orphan', { queue: 'reports', maxAttempts: 5 }],
  ]);
  const app = await boot(schema, [Present], { externalJobs: external, unregisteredJobs: 'error' });
  const { id } = await app.get(JobQueue).enqueue(Orphan, undefined);
  expect(await app.get(JobQueue).get(id)).toMatchObject({ state: 'queued', queue: 'reports', maxAttempts: 5 });
});
