import { readFileSync, writeFileSync } from 'node:fs';
import type { INestApplication } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { BatchBuilder, Job, JobQueue, PermanentJobError, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { canTransition, type JobState } from '../../lib/model/job-state.js';
import { migrateSchema } from '../../lib/storage/migrations/schema-migrator.js';
import { LAST_RELEASED_VERSION, schemaMigrations } from '../../lib/storage/migrations/migration-files.js';
import { ROUTINES } from '../../lib/storage/routines/routine-catalog.js';
import { json, runCli } from '../support/cli-process.js';
import { databaseUrl, dropSchemas, sql, uniqueSchema } from '../support/database.js';
import { startJobsApp } from '../support/jobs-app.js';
import { dumpSchema } from '../support/schema-dump.js';
import { waitFor } from '../support/wait.js';

const SNAPSHOT = new URL('../fixtures/schema.snapshot.txt', import.meta.url);
const RELEASE_0_1_0 = new URL('../fixtures/schema-0.1.0.sql', import.meta.url);
const UNRELEASED_DEV = new URL('../fixtures/schema-unreleased-dev.sql', import.meta.url);

const schemas: string[] = [];
const apps: INestApplication[] = [];

afterAll(async () => {
  for (const app of apps) await app.close().catch(() => undefined);
  await dropSchemas(...schemas);
});

async function freshSchema(prefix: string): Promise<string> {
  const schema = uniqueSchema(prefix);
  schemas.push(schema);
  const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
  await ds.initialize();
  try {
    await migrateSchema(ds, schema);
  } finally {
    await ds.destroy();
  }
  return schema;
}

@Job('schema-noop')
class Noop implements JobHandler<{ n: number }> {
  run(p: { n: number }) {
    return p.n * 2;
  }
}

/** The versions a schema records, with their checksums. */
async function recorded(schema: string): Promise<Array<{ version: number; checksum: string }>> {
  return sql(`SELECT version, checksum FROM "${schema}".schema_version ORDER BY version`);
}

/** Two jobs an older build left: one queued, one failed with its history row. */
async function oldJobs(schema: string): Promise<{ queued: string; failed: string }> {
  const queued = '019a0000-0000-7000-8000-000000000001';
  const failed = '019a0000-0000-7000-8000-000000000002';
  await sql(
    `INSERT INTO "${schema}".job (id, name, queue, payload, state, run_at, created_at, attempt, completed_at, last_error)
     VALUES ($1, 'schema-noop', 'default', '{"n": 21}', 'queued', now(), now(), 0, NULL, NULL),
            ($2, 'schema-noop', 'default', '{"n": 1}', 'failed', now(), now(), 3, now(), '{"name":"Error","message":"old"}')`,
    [queued, failed],
  );
  await sql(
    `INSERT INTO "${schema}".job_execution (job_id, attempt, worker_id, state, started_at, ended_at, error)
     VALUES ($1, 3, 'old-worker', 'failed', now(), now(), '{"name":"Error","message":"old"}')`,
    [failed],
  );
  return { queued, failed };
}

/** Starts an app on the schema and checks that the old jobs are there, the queued one runs. */
async function runsOldJobs(schema: string, { queued, failed }: { queued: string; failed: string }): Promise<void> {
  const app = await startJobsApp(schema, { worker: { pollInterval: 100 } }, { providers: [Noop] });
  apps.push(app);
  const jobs = app.get(JobQueue);
  await waitFor('the kept job to run', async () => (await jobs.get(queued))?.state === 'succeeded');
  expect((await jobs.get(queued))!.result).toBe(42);
  const old = (await jobs.get(failed))!;
  expect(old).toMatchObject({ state: 'failed', attempt: 3, lastError: { message: 'old' } });
  expect(old.executions).toMatchObject([{ attempt: 3, workerId: 'old-worker', state: 'failed' }]);
}

const THIS_BUILD = schemaMigrations().map((m) => ({ version: m.version, checksum: m.checksum }));

describe('the schema', () => {
  it('a schema made from nothing by a start matches the committed snapshot (a schema change shows in review)', async () => {
    const schema = uniqueSchema('snap');
    schemas.push(schema);
    const app = await startJobsApp(schema, { worker: { enabled: false } }, { providers: [] });
    apps.push(app);
    expect(await recorded(schema)).toEqual(THIS_BUILD);
    const dump = await dumpSchema(schema);
    if (process.env.UPDATE_SCHEMA_SNAPSHOT) writeFileSync(SNAPSHOT, dump);
    const committed = readFileSync(SNAPSHOT, 'utf8');
    // On purpose: run with UPDATE_SCHEMA_SNAPSHOT=1 to rewrite test/fixtures/schema.snapshot.txt, and commit it.
    expect(dump).toBe(committed);
    expect(await dumpSchema(await freshSchema('fresh'))).toBe(committed);
  });

  it('a schema made by release 0.1.0 upgrades in place, keeps its jobs, and ends shaped like a fresh one', async () => {
    const schema = uniqueSchema('upgrade');
    schemas.push(schema);
    await sql(readFileSync(RELEASE_0_1_0, 'utf8').replaceAll('__SCHEMA__', schema));
    const kept = await oldJobs(schema);

    await runsOldJobs(schema, kept);
    // Versions 1-3 keep the checksums release 0.1.0 recorded; the migrator accepts them.
    expect((await recorded(schema)).map((r) => r.version)).toEqual(THIS_BUILD.map((m) => m.version));
    expect(await dumpSchema(schema)).toBe(readFileSync(SNAPSHOT, 'utf8'));
  });

  it('beside a live 0.1.0 worker, a start applies every version but the breaking one and runs; the breaking version follows once it stopped', async () => {
    const schema = uniqueSchema('beside');
    schemas.push(schema);
    await sql(readFileSync(RELEASE_0_1_0, 'utf8').replaceAll('__SCHEMA__', schema));
    await sql(
      `INSERT INTO "${schema}".worker (id, host, pid, concurrency, started_at, last_heartbeat)
       VALUES ('worker-0.1.0', 'old-host', 1, 1, now(), now())`,
    );
    const kept = await oldJobs(schema);
    const breaking = schemaMigrations().filter((m) => m.breaking !== null);
    expect(breaking.map((m) => m.version)).toEqual([5]);

    await runsOldJobs(schema, kept);
    expect((await recorded(schema)).map((r) => r.version)).toEqual(
      THIS_BUILD.map((m) => m.version).filter((v) => v !== breaking[0]!.version),
    );
    // What the 0.1.0 worker calls is still there.
    const functions = await sql<{ proname: string }>(
      `SELECT proname FROM pg_proc WHERE pronamespace = $1::regnamespace`,
      [schema],
    );
    expect(functions.map((f) => f.proname)).toEqual(
      expect.arrayContaining(['settle_jobs', 'release_children', 'reopen_job']),
    );

    await sql(`UPDATE "${schema}".worker SET stopped_at = now() WHERE id = 'worker-0.1.0'`);
    const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
    await ds.initialize();
    try {
      expect(await migrateSchema(ds, schema)).toEqual({ applied: [breaking[0]!.version], deferred: [], routines: [] });
    } finally {
      await ds.destroy();
    }
    expect(await dumpSchema(schema)).toBe(readFileSync(SNAPSHOT, 'utf8'));
  });

  it('a schema an unreleased build made is refused at start with the fix; migrate --reset-unreleased makes it a fresh one, jobs kept', async () => {
    const schema = uniqueSchema('dev');
    schemas.push(schema);
    await sql(readFileSync(UNRELEASED_DEV, 'utf8').replaceAll('__SCHEMA__', schema));
    const before = await recorded(schema);
    expect(before.map((r) => r.version)).toEqual(Array.from({ length: 22 }, (_, i) => i + 1));
    const kept = await oldJobs(schema);

    const refusal = new RegExp(
      `Schema "${schema}" records version\\(s\\) 4-22 of the job tables as an unreleased build of nestjs-durable-jobs wrote them .*` +
        `Potential fix: stop the apps on it and run "npx nestjs-durable-jobs migrate --reset-unreleased --schema ${schema}"`,
    );
    await expect(startJobsApp(schema, { worker: { enabled: false } }, { providers: [] })).rejects.toThrow(refusal);
    await expect(
      startJobsApp(schema, { worker: { enabled: false }, migrationsRun: false }, { providers: [] }),
    ).rejects.toThrow(refusal);
    const plain = await runCli(['migrate', '--schema', schema]);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(refusal);

    // Not under a running app: a live worker refuses the reset, and nothing changes.
    await sql(
      `INSERT INTO "${schema}".worker (id, host, pid, concurrency, started_at, last_heartbeat, schema_version)
       VALUES ('dev-worker', 'dev-host', 1, 1, now(), now(), 22)`,
    );
    const alive = await runCli(['migrate', '--reset-unreleased', '--schema', schema]);
    expect(alive.code).toBe(1);
    expect(alive.stderr).toMatch(
      /migrate --reset-unreleased: 1 worker\(s\) on schema "\w+" are alive .*nothing was reset.*Potential fix: stop the apps/,
    );
    expect(await recorded(schema)).toEqual(before);

    await sql(`UPDATE "${schema}".worker SET stopped_at = now()`);
    const unreleased = THIS_BUILD.map((m) => m.version).filter((v) => v > LAST_RELEASED_VERSION);
    expect(json(await runCli(['migrate', '--reset-unreleased', '--schema', schema, '--json']))).toEqual({
      schema,
      reset: before.map((r) => r.version).filter((v) => v > LAST_RELEASED_VERSION),
      applied: unreleased,
      version: THIS_BUILD.at(-1)!.version,
      deferred: [],
      routines: ROUTINES.map((r) => r.name),
    });
    expect(await recorded(schema)).toEqual(THIS_BUILD);
    expect(await dumpSchema(schema)).toBe(readFileSync(SNAPSHOT, 'utf8'));
    const again = await runCli(['migrate', '--reset-unreleased', '--schema', schema]);
    expect(again).toMatchObject({ code: 0 });
    expect(again.stdout).toMatch(/no unreleased version of another build to reset\n.* is up to date/);

    await runsOldJobs(schema, kept);
  });
});

// ---------------------------------------------------------------------------
// Every move the SQL makes, against model/job-state.ts' table.

const gates = new Map<string, () => void>();

@Job('moves', { maxAttempts: 2, backoff: { type: 'fixed', delay: 0 } })
class Moves implements JobHandler<{ mode: 'ok' | 'fail' | 'flaky' | 'block' | 'cont' }> {
  async run(p: { mode: string }, ctx: JobContext): Promise<string> {
    if (p.mode === 'fail') throw new PermanentJobError('told to fail');
    if (p.mode === 'flaky' && ctx.attempt === 1) throw new Error('first attempt fails');
    if (p.mode === 'block') {
      await new Promise<void>((resolve, reject) => {
        gates.set(ctx.jobId, resolve);
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error));
      });
    }
    if (p.mode === 'cont') ctx.continueWith(Moves, { mode: 'ok' });
    return p.mode;
  }
}

describe('job state moves', () => {
  it('every state change the SQL makes is one the model allows', async () => {
    const schema = uniqueSchema('moves');
    schemas.push(schema);
    const app = await startJobsApp(schema, { worker: { pollInterval: 50, lease: 1_000 } }, { providers: [Moves] });
    apps.push(app);
    await sql(`CREATE TABLE "${schema}".move (id uuid, from_state text, to_state text)`);
    await sql(`CREATE FUNCTION "${schema}".log_move() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN INSERT INTO "${schema}".move VALUES (NEW.id, NULL, NEW.state);
        ELSIF OLD.state <> NEW.state THEN INSERT INTO "${schema}".move VALUES (NEW.id, OLD.state, NEW.state);
        END IF;
        RETURN NEW;
      END $$`);
    await sql(`CREATE TRIGGER log_move AFTER INSERT OR UPDATE ON "${schema}".job
      FOR EACH ROW EXECUTE FUNCTION "${schema}".log_move()`);
    const jobs = app.get(JobQueue);
    const batches = app.get(BatchBuilder);
    const state = async (id: string) => (await jobs.get(id))?.state;
    const until = (id: string, s: JobState) => waitFor(`${id} to be ${s}`, async () => (await state(id)) === s);

    const ok = await jobs.enqueue(Moves, { mode: 'ok' });
    const flaky = await jobs.enqueue(Moves, { mode: 'flaky' });
    const failing = await jobs.enqueue(Moves, { mode: 'fail' });
    const cont = await jobs.enqueue(Moves, { mode: 'cont' });
    const later = await jobs.enqueue(Moves, { mode: 'block' }, { delay: 3_600_000 });
    const blocked = await jobs.enqueue(Moves, { mode: 'block' });
    await until(ok.id, 'succeeded');
    await until(flaky.id, 'succeeded');
    await until(failing.id, 'failed');
    await until(cont.id, 'succeeded');
    await jobs.retry(failing.id);
    await until(failing.id, 'failed');
    await jobs.cancel(later.id);
    // Retried, it is due at once; blocked on its signal, it is still there to cancel (queued or active).
    await jobs.retry(later.id);
    await jobs.cancel(later.id);
    await until(later.id, 'cancelled');
    await until(blocked.id, 'active');
    await jobs.cancel(blocked.id);
    await until(blocked.id, 'cancelled');

    const { ids } = await jobs
      .flow()
      .add('a', Moves, { mode: 'fail' })
      .add('b', Moves, { mode: 'ok' }, { after: ['a'] })
      .add('c', Moves, { mode: 'ok' }, { after: [{ key: 'a', on: 'failure' }] })
      .dispatch();
    await until(ids.b!, 'skipped');
    await until(ids.c!, 'succeeded');
    // Retrying the parent reopens the child it skipped; the parent fails again, and so the child is skipped again.
    await jobs.retry(ids.a!);
    await until(ids.a!, 'failed');
    await until(ids.b!, 'skipped');
    const pending = await jobs
      .flow()
      .add('x', Moves, { mode: 'ok' }, { delay: 3_600_000 })
      .add('y', Moves, { mode: 'ok' }, { after: ['x'] })
      .dispatch();
    await jobs.cancel(pending.ids.y!);
    await jobs.cancel(pending.ids.x!);

    const batch = await batches
      .create('moves')
      .add(Moves, { mode: 'fail' })
      .add(Moves, { mode: 'ok' }, { delay: 3_600_000 })
      .then(Moves, { mode: 'ok' })
      .catch(Moves, { mode: 'ok' })
      .finally(Moves, { mode: 'ok' })
      .dispatch();
    await waitFor('the batch to settle', async () => (await jobs.batchStatus(batch.id))?.state === 'failed');

    // A worker that vanished: its lease runs out and the rescue takes the job back (or fails it, out of attempts).
    const lost = await jobs.enqueue(Moves, { mode: 'ok' }, { delay: 3_600_000 });
    const spent = await jobs.enqueue(Moves, { mode: 'ok' }, { delay: 3_600_000, maxAttempts: 1 });
    await sql(
      `UPDATE "${schema}".job SET state = 'active', attempt = attempt + 1, worker_id = 'ghost',
              lease_expires_at = now() - interval '1 second', started_at = now(), run_at = now()
        WHERE id = ANY($1::uuid[])`,
      [[lost.id, spent.id]],
    );
    await until(lost.id, 'succeeded');
    await until(spent.id, 'failed');

    const moves = await sql<{ id: string; from_state: JobState | null; to_state: JobState }>(
      `SELECT id, from_state, to_state FROM "${schema}".move`,
    );
    // The test's own hand-made claim above is the one move not made by the library's SQL.
    const made = moves.filter(
      (m) => !([lost.id, spent.id].includes(m.id) && m.to_state === 'active' && m.from_state === 'queued'),
    );
    const illegal = made.filter((m) =>
      m.from_state === null
        ? !['queued', 'waiting', 'skipped'].includes(m.to_state)
        : !canTransition(m.from_state, m.to_state),
    );
    expect(illegal).toEqual([]);
    const seen = new Set(made.map((m) => `${m.from_state ?? 'new'}>${m.to_state}`));
    // The workload above is meant to make each of these; a missing one means it no longer tests what it says.
    for (const move of [
      'new>queued',
      'new>waiting',
      'queued>active',
      'active>succeeded',
      'active>queued',
      'active>failed',
      'active>cancelled',
      'queued>cancelled',
      'waiting>queued',
      'waiting>skipped',
      'waiting>cancelled',
      'failed>queued',
      'cancelled>queued',
      'skipped>waiting',
    ]) {
      expect([...seen]).toContain(move);
    }
  });
});
