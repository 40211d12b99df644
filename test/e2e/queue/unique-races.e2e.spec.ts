import type { INestApplication } from '@nestjs/common';
import { JobQueue, JobsError, type UniqueOptions } from 'nestjs-durable-jobs';
import { DataSource } from 'typeorm';
import { dropSchemas, jobsConnection, sql, uniqueSchema } from '../../support/database.js';
import { FC_RUN_TABLE, flowProviders, Work } from '../../support/flow.jobs.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

// A many-job enqueue writes keys nobody visibly holds without ON CONFLICT; a key that another
// transaction takes while it writes makes PostgreSQL refuse the statement, and the enqueue must
// then answer with that holder like any other duplicate, losing none of the call's other jobs.

const schemas: string[] = [];
let app: INestApplication;
let ds: DataSource;

beforeAll(async () => {
  const schema = uniqueSchema('uqrace');
  schemas.push(schema);
  app = await startJobsApp(schema, { worker: { enabled: false } }, { providers: flowProviders(schema) });
  await sql(FC_RUN_TABLE(schema));
  ds = await new DataSource({ type: 'postgres', url: jobsConnection().connection }).initialize();
});

afterAll(async () => {
  await app?.close();
  await ds?.destroy();
  await dropSchemas(...schemas);
});

const schemaOf = () => schemas[0]!;

/**
 * Holds `unique`'s key in an open transaction, starts `call`, commits once its insert waits on the held
 * key's row lock, and returns the call's result (or what it threw) and the holder.
 */
async function raceWith<T>(unique: UniqueOptions, start: () => Promise<T>) {
  const jobs = app.get(JobQueue);
  let commit!: () => void;
  const committed = new Promise<void>((resolve) => (commit = resolve));
  let holder = '';
  const blocker = ds.transaction(async (manager) => {
    holder = (await jobs.enqueue(Work, {}, { unique, manager })).id;
    await committed;
  });
  await waitFor('the blocking transaction to hold its key', () => holder);
  const call: Promise<{ value?: T; error?: unknown }> = start().then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  await waitFor(
    'the enqueue to wait on the held key',
    async () =>
      (
        await sql<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
          [`%"${schemaOf()}".job%`],
        )
      )[0]!.n === 1,
  );
  commit();
  await blocker;
  return { ...(await call), holder };
}

/** raceWith for `enqueueMany` of `uniques`, one job each. */
async function raceFor(key: string, uniques: UniqueOptions[]) {
  const jobs = app.get(JobQueue);
  const { value, error, holder } = await raceWith({ key }, () =>
    jobs.enqueueMany(uniques.map((unique, seq) => ({ job: Work, payload: { seq }, options: { unique } }))),
  );
  if (error) throw error;
  return { results: value!, holder };
}

it('answers a key another transaction took meanwhile with its holder, and writes the other jobs (jobs of one shape)', async () => {
  const { results, holder } = await raceFor('race-a', [{ key: 'a-1' }, { key: 'race-a' }, { key: 'a-2' }]);
  expect(results.map((r) => r.created)).toEqual([true, false, true]);
  expect(results[1]!.id).toBe(holder);
  const rows = await sql<{ id: string; unique_key: string }>(
    `SELECT id, unique_key FROM "${schemaOf()}".job WHERE unique_key LIKE 'a-%' OR unique_key = 'race-a' ORDER BY unique_key`,
  );
  expect(rows).toEqual([
    { id: results[0]!.id, unique_key: 'a-1' },
    { id: results[2]!.id, unique_key: 'a-2' },
    { id: holder, unique_key: 'race-a' },
  ]);
});

it('does the same for jobs that hold their keys in different ways', async () => {
  const { results, holder } = await raceFor('race-b', [
    { key: 'b-1', while: 'queued' },
    { key: 'race-b' },
    { key: 'race-b', while: 'queued' },
    { key: 'b-2', for: 60_000 },
  ]);
  // The held key is taken the default way; the same key held while queued is another key.
  expect(results.map((r) => r.created)).toEqual([true, false, true, true]);
  expect(results[1]!.id).toBe(holder);
  const n = await sql<{ n: number }>(
    `SELECT count(*)::int AS n FROM "${schemaOf()}".job WHERE unique_key IN ('b-1', 'b-2', 'race-b')`,
  );
  expect(n[0]!.n).toBe(4);
});

describe('enqueue() with after', () => {
  const jobCount = async (key: string) =>
    (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schemaOf()}".job WHERE unique_key = $1`, [key]))[0]!.n;
  const edgesOf = async (parent: string) =>
    (
      await sql<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${schemaOf()}".job_dependency WHERE parent_job_id = $1`,
        [parent],
      )
    )[0]!.n;

  it('answers a key another transaction took meanwhile with its holder, and writes no job and no dependency', async () => {
    const jobs = app.get(JobQueue);
    const parent = await jobs.enqueue(Work, {}, { delay: 60_000 });
    const { value, error, holder } = await raceWith({ key: 'race-after' }, () =>
      jobs.enqueue(Work, {}, { after: parent.id, unique: { key: 'race-after' } }),
    );
    expect(error).toBeUndefined();
    expect(value).toEqual({ id: holder, created: false });
    expect(await jobCount('race-after')).toBe(1);
    expect(await edgesOf(parent.id)).toBe(0);
  });

  it('refuses a debounce whose key another transaction took meanwhile, naming the holder, and writes nothing', async () => {
    const jobs = app.get(JobQueue);
    const parent = await jobs.enqueue(Work, {}, { delay: 60_000 });
    const { error, holder } = await raceWith({ key: 'race-debounce', while: 'queued' }, () =>
      jobs.enqueue(Work, {}, { after: parent.id, unique: { key: 'race-debounce', while: 'queued', replace: true } }),
    );
    expect(error).toBeInstanceOf(JobsError);
    expect((error as Error).message).toContain(`"race-debounce" is held by job ${holder}`);
    expect((error as Error).message).toContain('Potential fix');
    expect(await jobCount('race-debounce')).toBe(1);
    expect(await edgesOf(parent.id)).toBe(0);
  });
});
