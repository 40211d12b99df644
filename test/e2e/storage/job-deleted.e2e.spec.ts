import { Job, JobQueue, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { appFixture } from '../../support/app-fixture.js';
import { sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';

// The rows that refer to a job (its executions, steps, signals, published values and dependency
// links) go with it through the trigger of the routine job_deleted: no foreign key cascades them
// since schema 7. Any statement that deletes jobs counts, whichever build sends it.

/** Jobs of del-rich that already failed once. */
const failedOnce = new Set<string>();

@Job('del-rich', { maxAttempts: 2, backoff: { type: 'fixed', delay: 10 } })
class Rich implements JobHandler<Record<string, never>> {
  async run(_p: unknown, ctx: JobContext): Promise<string> {
    await ctx.step('charge', () => 'charged');
    await ctx.setEvent('status', 'charged');
    if (!failedOnce.has(ctx.jobId)) {
      failedOnce.add(ctx.jobId);
      throw new Error('the ledger was busy');
    }
    return 'done';
  }
}

@Job('del-plain', { maxAttempts: 1 })
class Plain implements JobHandler<Record<string, never>> {
  run(): string {
    return 'ok';
  }
}

const { apps, schemas } = appFixture();

/** What refers to `ids` in each table that holds rows of a job. */
async function rowsOf(schema: string, ids: string[]): Promise<Record<string, number>> {
  const [row] = await sql<Record<string, number>>(
    `SELECT (SELECT count(*)::int FROM "${schema}".job_execution WHERE job_id = ANY($1::uuid[])) AS executions,
            (SELECT count(*)::int FROM "${schema}".job_step WHERE job_id = ANY($1::uuid[])) AS steps,
            (SELECT count(*)::int FROM "${schema}".job_signal WHERE job_id = ANY($1::uuid[])) AS signals,
            (SELECT count(*)::int FROM "${schema}".job_event_value WHERE job_id = ANY($1::uuid[])) AS "values",
            (SELECT count(*)::int FROM "${schema}".job_dependency
              WHERE child_id = ANY($1::uuid[]) OR parent_job_id = ANY($1::uuid[])) AS dependencies`,
    [ids],
  );
  return row!;
}

/** One job of each kind of referring row: a retried job with a step and a value, a parent and its child, a signalled job. */
async function jobsWithRows(jobs: JobQueue): Promise<string[]> {
  const rich = await jobs.enqueue(Rich, {});
  const parent = await jobs.enqueue(Plain, {});
  const child = await jobs.enqueue(Plain, {}, { after: [{ job: parent.id, on: 'always' }] });
  const signalled = await jobs.enqueue(Plain, {}, { delay: 3_600_000 });
  await jobs.signal(signalled.id, 'approval', { ok: true });
  for (const id of [rich.id, parent.id, child.id]) await jobs.waitFor(id, { timeout: 30_000 });
  return [rich.id, parent.id, child.id, signalled.id];
}

describe('deleting jobs (schema 7)', () => {
  it("takes every row that refers to the deleted jobs with them, in one statement, and leaves other jobs' rows", async () => {
    const schema = uniqueSchema('job_deleted');
    schemas.push(schema);
    const app = await startJobsApp(
      schema,
      { worker: { concurrency: 4, pollInterval: 100 }, scheduler: { enabled: false } },
      { providers: [Rich, Plain] },
    );
    apps.push(app);
    const jobs = app.get(JobQueue);
    const doomed = await jobsWithRows(jobs);
    const kept = await jobsWithRows(jobs);
    // The failed attempt's execution (a success leaves none); the step and the value's own step.
    const before = { executions: 1, steps: 2, signals: 1, values: 1, dependencies: 1 };
    expect(await rowsOf(schema, doomed)).toEqual(before);
    expect(await rowsOf(schema, kept)).toEqual(before);
    // A plain multi-row DELETE, as any build's retention or purge sends it (a build of schema 6
    // included, which relied on the foreign keys and deletes nothing else).
    await sql(`DELETE FROM "${schema}".job WHERE id = ANY($1::uuid[])`, [doomed]);
    expect(await rowsOf(schema, doomed)).toEqual({ executions: 0, steps: 0, signals: 0, values: 0, dependencies: 0 });
    expect(await rowsOf(schema, kept)).toEqual(before);
  });

  it('no foreign key cascades a delete of a job any more: the trigger alone does it', async () => {
    const schema = uniqueSchema('job_deleted_keys');
    schemas.push(schema);
    const app = await startJobsApp(
      schema,
      { worker: { enabled: false }, scheduler: { enabled: false } },
      { providers: [] },
    );
    apps.push(app);
    const keys = await sql<{ t: string }>(
      `SELECT conrelid::regclass::text AS t FROM pg_constraint WHERE contype = 'f' AND confrelid = $1::regclass`,
      [`"${schema}".job`],
    );
    expect(keys).toEqual([]);
    const triggers = await sql<{ tgname: string }>(
      `SELECT tgname FROM pg_trigger WHERE tgrelid = $1::regclass AND NOT tgisinternal ORDER BY tgname`,
      [`"${schema}".job`],
    );
    expect(triggers.map((t) => t.tgname)).toEqual(['awaited_job_ended', 'job_deleted']);
  });
});
