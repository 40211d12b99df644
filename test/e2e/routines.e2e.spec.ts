import type { INestApplication } from '@nestjs/common';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { createJobsMigrations, Job, JobQueue, JobsError, type JobHandler } from 'nestjs-durable-jobs';
import { migrationSql, schemaMigrations } from '../../lib/storage/migrations/migration-files.js';
import { migrateSchema, type SchemaMigrationResult } from '../../lib/storage/migrations/schema-migrator.js';
import { CLAIM_CONTROLLED } from '../../lib/storage/routines/claim-controlled.routine.js';
import { defineRoutine, routineSql } from '../../lib/storage/routines/routine.js';
import { ROUTINES } from '../../lib/storage/routines/routine-catalog.js';
import { databaseUrl, dropSchemas, sql, uniqueSchema } from '../support/database.js';
import { startJobsApp } from '../support/jobs-app.js';
import { waitFor } from '../support/wait.js';

/** Routines as code: installed under hashed names, side by side across builds; breaking versions. */
const schemas: string[] = [];
const apps: INestApplication[] = [];
const LATEST = Math.max(...schemaMigrations().map((m) => m.version));
/** Release 0.1.0's functions, under the plain names it calls; unreleased builds also made a plain claim_controlled. */
const RELEASED_FUNCTIONS = ['settle_jobs', 'release_children', 'reopen_job'];
const UNSUFFIXED = ['claim_controlled', ...RELEASED_FUNCTIONS];

afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});
afterAll(async () => {
  await dropSchemas(...schemas);
});

function newSchema(prefix: string): string {
  const schema = uniqueSchema(prefix);
  schemas.push(schema);
  return schema;
}

async function migrate(schema: string): Promise<SchemaMigrationResult> {
  const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
  await ds.initialize();
  try {
    return await migrateSchema(ds, schema);
  } finally {
    await ds.destroy();
  }
}

/** The functions of a schema, by name. */
async function functionsOf(schema: string): Promise<string[]> {
  const rows = await sql<{ name: string }>(
    `SELECT p.proname AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = $1 ORDER BY 1`,
    [schema],
  );
  return rows.map((r) => r.name);
}

/** A worker row as a build that knows versions up to `known` (null: release 0.1.0, which records none) registers it. */
async function olderWorker(schema: string, id: string, known: number | null): Promise<void> {
  await sql(
    `INSERT INTO "${schema}".worker (id, host, pid, concurrency, started_at, last_heartbeat, schema_version)
     VALUES ($1, 'old-host', 1, 1, now(), now(), $2)`,
    [id, known],
  );
}

/** The breaking version: it drops the functions release 0.1.0 calls. */
const BREAKING = 5;

/** Undoes the breaking version the way TypeORM's migration:revert does: its down, and its row. */
async function revertBreaking(schema: string): Promise<void> {
  const breaking = schemaMigrations().find((m) => m.version === BREAKING)!;
  await sql(migrationSql(breaking.down, schema));
  await sql(`DELETE FROM "${schema}".schema_version WHERE version = $1`, [BREAKING]);
}

@Job('routine-work', { queue: 'limited' })
class RoutineWork implements JobHandler<{ n: number }> {
  run(p: { n: number }) {
    return p.n + 1;
  }
}

describe('routines', () => {
  it('a fresh schema gets every routine under its hashed name and none of the unsuffixed functions; a second run installs nothing', async () => {
    const schema = newSchema('rt_fresh');
    const first = await migrate(schema);
    expect(first.applied).toEqual(schemaMigrations().map((m) => m.version));
    expect(first.deferred).toEqual([]);
    expect(first.routines).toEqual(ROUTINES.map((r) => r.name));
    expect(await functionsOf(schema)).toEqual(ROUTINES.map((r) => r.name).sort());
    expect(await migrate(schema)).toEqual({ applied: [], deferred: [], routines: [] });
  });

  it('two builds with different routine texts claim side by side on one schema, within one concurrency limit', async () => {
    const schema = newSchema('rt_side');
    await migrate(schema);
    // What an older build installed: the same routine, another text, so another name beside this build's.
    const older = defineRoutine(
      'claim_controlled',
      CLAIM_CONTROLLED.template.replace('BEGIN', '-- older build\nBEGIN'),
    );
    expect(older.name).not.toBe(CLAIM_CONTROLLED.name);
    await sql(routineSql(older, schema));
    await sql(`INSERT INTO "${schema}".job_queue (name, concurrency) VALUES ('limited', 3)`);
    await sql(
      `INSERT INTO "${schema}".job (id, name, queue, payload, state, run_at, created_at)
       SELECT gen_random_uuid(), 'work', 'limited', '{}', 'queued', now() - interval '1 minute', now() FROM generate_series(1, 10)`,
    );
    const claim = async (fn: string, worker: string, limit: number) => {
      const client = new pg.Client({ connectionString: databaseUrl() });
      await client.connect();
      try {
        const rows = await client.query<{ id: string | null }>(
          `SELECT id FROM "${schema}".${fn}('limited', ARRAY['work'], $1, now(), $2, 30000, 'unheard', false, 0)`,
          [limit, worker],
        );
        return rows.rows.filter((r) => r.id !== null).length;
      } finally {
        await client.end();
      }
    };
    const counts = await Promise.all([
      claim(older.name, 'old-worker', 2),
      claim(CLAIM_CONTROLLED.name, 'new-worker', 2),
      claim(older.name, 'old-worker', 2),
      claim(CLAIM_CONTROLLED.name, 'new-worker', 2),
    ]);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(3);
    const active = async () =>
      sql<{ worker_id: string; n: number }>(
        `SELECT worker_id, count(*)::int AS n FROM "${schema}".job WHERE state = 'active' GROUP BY 1 ORDER BY 1`,
      );
    expect((await active()).reduce((a, r) => a + r.n, 0)).toBe(3);

    // Slots freed: each build claims through its own name, the limit still counted across both.
    await sql(`UPDATE "${schema}".job SET state = 'succeeded', lease_expires_at = NULL WHERE state = 'active'`);
    expect(await claim(older.name, 'old-worker', 2)).toBe(2);
    expect(await claim(CLAIM_CONTROLLED.name, 'new-worker', 2)).toBe(1);
    expect(await active()).toEqual([
      { worker_id: 'new-worker', n: 1 },
      { worker_id: 'old-worker', n: 2 },
    ]);
  });

  it('a start with migrationsRun: false installs the routines the schema lacks, and its jobs run', async () => {
    const schema = newSchema('rt_manual');
    await migrate(schema);
    // CASCADE: the trigger of awaited_job_ended goes with it, and comes back with it.
    for (const r of ROUTINES) await sql(`DROP FUNCTION "${schema}".${r.name} CASCADE`);
    expect(await functionsOf(schema)).toEqual([]);
    const app = await startJobsApp(
      schema,
      { migrationsRun: false, queues: { limited: { concurrency: 2 } }, worker: { pollInterval: 100 } },
      { providers: [RoutineWork] },
    );
    apps.push(app);
    expect(await functionsOf(schema)).toEqual(ROUTINES.map((r) => r.name).sort());
    const triggers = await sql(
      `SELECT tgname FROM pg_trigger WHERE tgrelid = $1::regclass AND tgname = 'awaited_job_ended'`,
      [`"${schema}".job`],
    );
    expect(triggers).toHaveLength(1);
    const { id } = await app.get(JobQueue).enqueue(RoutineWork, { n: 1 });
    await waitFor('the job to run', async () => (await app.get(JobQueue).get(id))?.state === 'succeeded');
  });

  it('a role that may not create functions gets a JobsError naming the routine and the fix', async () => {
    const schema = newSchema('rt_denied');
    await migrate(schema);
    const role = `${schema}_ro`;
    await sql(`CREATE ROLE ${role} NOLOGIN`);
    try {
      await sql(`GRANT USAGE ON SCHEMA "${schema}" TO ${role}`);
      await sql(`DROP FUNCTION "${schema}".${CLAIM_CONTROLLED.name}`);
      const ds = new DataSource({ type: 'postgres', url: databaseUrl(), poolSize: 1 });
      await ds.initialize();
      try {
        await ds.query(`SET ROLE ${role}`);
        const { ensureRoutines } = await import('../../lib/storage/migrations/schema-migrator.js');
        const refused = ensureRoutines(ds, schema);
        await expect(refused).rejects.toThrow(JobsError);
        await expect(refused).rejects.toThrow(
          new RegExp(
            `lacks the database routine ${CLAIM_CONTROLLED.name} .*Potential fix: run "npx nestjs-durable-jobs migrate --schema ${schema}" .*GRANT CREATE ON SCHEMA`,
          ),
        );
      } finally {
        await ds.query(`RESET ROLE`);
        await ds.destroy();
      }
    } finally {
      await sql(`DROP OWNED BY ${role}`);
      await sql(`DROP ROLE ${role}`);
    }
  });
});

describe('breaking versions', () => {
  it('an unknown breaking version recorded in the schema refuses the start; an unknown plain one does not', async () => {
    const schema = newSchema('rt_unknown');
    await migrate(schema);
    await sql(
      `INSERT INTO "${schema}".schema_version (version, name, checksum) VALUES ($1, 'from-a-newer-build', 'x')`,
      [LATEST + 1],
    );
    expect((await migrate(schema)).applied).toEqual([]);
    await sql(
      `INSERT INTO "${schema}".schema_version (version, name, checksum, breaking) VALUES ($1, 'drops-a-thing', 'y', true)`,
      [LATEST + 2],
    );
    const refusal = new RegExp(
      `Schema "${schema}" is at version ${LATEST + 2} of the job tables, a breaking version this build .* does not know .*` +
        `Potential fix: deploy a build that knows version ${LATEST + 2}`,
    );
    await expect(migrate(schema)).rejects.toThrow(refusal);
    await expect(startJobsApp(schema, { worker: { enabled: false } }, { providers: [] })).rejects.toThrow(refusal);
    await expect(
      startJobsApp(schema, { worker: { enabled: false }, migrationsRun: false }, { providers: [] }),
    ).rejects.toThrow(refusal);
  });

  it('a breaking version the migrator applies is recorded as breaking, by the start and by the exported migrations', async () => {
    const breaking = schemaMigrations()
      .filter((m) => m.breaking !== null)
      .map((m) => m.version);
    expect(breaking).toEqual([BREAKING]);
    const started = newSchema('rt_flag_start');
    await migrate(started);
    const exported = newSchema('rt_flag_typeorm');
    const ds = new DataSource({ type: 'postgres', url: databaseUrl(), migrations: createJobsMigrations(exported) });
    await ds.initialize();
    try {
      await ds.runMigrations();
      await ds.query(`DELETE FROM migrations WHERE name LIKE $1`, [`DurableJobs_${exported}_%`]);
    } finally {
      await ds.destroy();
    }
    for (const schema of [started, exported]) {
      const rows = await sql<{ version: number }>(
        `SELECT version FROM "${schema}".schema_version WHERE breaking ORDER BY version`,
      );
      expect({ schema, breaking: rows.map((r) => r.version) }).toEqual({ schema, breaking });
    }
    // What the flag is for: a build that does not know a breaking version refuses the schema. Moved
    // past this build's versions, the row the migrator wrote (its flag untouched) is such a version.
    await sql(`UPDATE "${started}".schema_version SET version = $1 WHERE version = $2`, [LATEST + 1, BREAKING]);
    await expect(migrate(started)).rejects.toThrow(
      new RegExp(`is at version ${LATEST + 1} of the job tables, a breaking version this build .* does not know`),
    );
  });

  it('waits while a worker of an older build is alive, and is applied by the first start after it stopped', async () => {
    const schema = newSchema('rt_defer');
    await migrate(schema);
    await revertBreaking(schema);
    expect(await functionsOf(schema)).toEqual(expect.arrayContaining(RELEASED_FUNCTIONS));
    await olderWorker(schema, 'release-0.1.0', null);
    await olderWorker(schema, 'knows-4', BREAKING - 1);
    // Not older: a build that knows the breaking version, a stopped worker, and one silent for longer than a lease.
    await olderWorker(schema, 'current', LATEST);
    await olderWorker(schema, 'stopped', null);
    await sql(`UPDATE "${schema}".worker SET stopped_at = now() WHERE id = 'stopped'`);
    await olderWorker(schema, 'crashed', null);
    await sql(`UPDATE "${schema}".worker SET last_heartbeat = now() - interval '1 hour' WHERE id = 'crashed'`);

    const deferred = await migrate(schema);
    expect(deferred.applied).toEqual([]);
    expect(deferred.deferred).toEqual([
      { version: BREAKING, breaking: expect.stringMatching(/^drops settle_jobs/), olderWorkers: 2 },
    ]);
    expect(await functionsOf(schema)).toEqual(expect.arrayContaining(RELEASED_FUNCTIONS));

    // This build runs without it: its claims (a limited queue: the controlled claim) and outcomes work.
    const app = await startJobsApp(
      schema,
      { queues: { limited: { concurrency: 2 } }, worker: { pollInterval: 100 } },
      { providers: [RoutineWork] },
    );
    apps.push(app);
    const { id } = await app.get(JobQueue).enqueue(RoutineWork, { n: 41 });
    await waitFor('the job to run', async () => (await app.get(JobQueue).get(id))?.state === 'succeeded');
    expect((await app.get(JobQueue).get(id))!.result).toBe(42);
    const [own] = await sql<{ schema_version: number }>(
      `SELECT schema_version FROM "${schema}".worker WHERE host <> 'old-host'`,
    );
    expect(own!.schema_version).toBe(LATEST);
    expect((await migrate(schema)).deferred.map((d) => d.version)).toEqual([BREAKING]);

    await sql(`UPDATE "${schema}".worker SET stopped_at = now() WHERE id = 'release-0.1.0'`);
    await sql(`UPDATE "${schema}".worker SET last_heartbeat = now() - interval '1 hour' WHERE id = 'knows-4'`);
    const applied = await migrate(schema);
    expect(applied).toEqual({ applied: [BREAKING], deferred: [], routines: [] });
    const functions = await functionsOf(schema);
    for (const name of UNSUFFIXED) expect(functions).not.toContain(name);
    const again = await app.get(JobQueue).enqueue(RoutineWork, { n: 1 });
    await waitFor('a job to run after it', async () => (await app.get(JobQueue).get(again.id))?.state === 'succeeded');
  });
});
