import { randomBytes } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import {
  Job,
  JobQueue,
  JobsAdmin,
  JobsError,
  type JobContext,
  type JobExecution,
  type JobHandler,
  type JobsModuleOptions,
} from 'nestjs-durable-jobs';
import { JobsDashboardModule } from 'nestjs-durable-jobs/dashboard';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

/** Fails every attempt but its 50th: 49 failed attempts in the history, then the success. */
@Job('hist-flaky', { queue: 'hist', maxAttempts: 50, backoff: { type: 'fixed', delay: 0 } })
class FlakyJob implements JobHandler<Record<string, never>> {
  run(_: Record<string, never>, ctx: JobContext): string {
    if (ctx.attempt < 50) throw new Error(`attempt ${ctx.attempt} broke`);
    return 'fiftieth';
  }
}

/** One MiB of message (and so of stack), two attempts: a history row and the job's last error. */
const MIB = 1024 * 1024;
@Job('hist-loud', { queue: 'hist', maxAttempts: 2, backoff: { type: 'fixed', delay: 0 } })
class LoudJob implements JobHandler<{ char: string }> {
  run({ char }: { char: string }): never {
    throw new Error(char.repeat(MIB / Buffer.byteLength(char)));
  }
}

/** The same, encrypted: the cut happens before sealing, so readers see a cut plaintext. */
@Job('hist-loud-secret', { queue: 'hist', maxAttempts: 2, backoff: { type: 'fixed', delay: 0 }, encrypted: true })
class LoudSecretJob implements JobHandler<Record<string, never>> {
  run(): never {
    throw new Error('s'.repeat(MIB));
  }
}

const KEYS = { keys: { k1: randomBytes(32).toString('base64') }, current: 'k1' };
const schemas: string[] = [];
const apps: INestApplication[] = [];

async function boot(options: Partial<JobsModuleOptions> = {}, dashboard = false) {
  const schema = uniqueSchema('hist');
  schemas.push(schema);
  const app = await startJobsApp(
    schema,
    { worker: { queues: ['hist'], pollInterval: 100 }, encryption: KEYS, ...options },
    {
      imports: dashboard ? [JobsDashboardModule.register({ public: true })] : [],
      providers: [FlakyJob, LoudJob, LoudSecretJob],
    },
  );
  apps.push(app);
  return { app, schema, jobs: app.get(JobQueue), admin: app.get(JobsAdmin) };
}

const ended = (jobs: JobQueue, id: string, state: string) =>
  waitFor(`job ${id} to be ${state}`, async () => (await jobs.get(id))?.state === state);

afterEach(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
});

afterAll(async () => {
  await dropSchemas(...schemas);
});

describe('execution history pages', () => {
  it('a job of 50 attempts: get() shows the latest 20 and the success, executions() pages all 50 without gaps or repeats', async () => {
    const { app, schema, jobs } = await boot({}, true);
    const { id } = await jobs.enqueue(FlakyJob, {});
    await ended(jobs, id, 'succeeded');
    const [{ n }] = (await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${schema}.job_execution WHERE job_id = $1`,
      [id],
    )) as [{ n: number }];
    expect(n).toBe(49);

    const job = (await jobs.get(id))!;
    expect(job.executions.map((e) => e.attempt)).toEqual(range(30, 50));
    expect(job.executions.at(-1)!.state).toBe('succeeded');
    expect(job.moreExecutions).toEqual(expect.any(String));

    // Newest first, 7 at a time: every attempt once, in order.
    const seen: JobExecution[] = [];
    let after: string | undefined;
    let pages = 0;
    do {
      const page = (await jobs.executions(id, { limit: 7, ...(after ? { after } : {}) }))!;
      expect(page.executions.length).toBeLessThanOrEqual(7);
      seen.push(...page.executions);
      after = page.next ?? undefined;
      pages++;
    } while (after);
    expect(pages).toBe(8);
    expect(seen.map((e) => e.attempt)).toEqual(range(1, 50).reverse());
    expect(seen[0]!.state).toBe('succeeded');
    expect(seen.slice(1).every((e) => e.state === 'failed' && e.error?.message === `attempt ${e.attempt} broke`)).toBe(
      true,
    );

    // get()'s cursor continues where its executions stop; a page that ends the history says so.
    const older = (await jobs.executions(id, { after: job.moreExecutions!, limit: 100 }))!;
    expect(older.executions.map((e) => e.attempt)).toEqual(range(1, 29).reverse());
    expect(older.next).toBeNull();
    // A page of exactly the newest one: the success; the next starts at the newest recorded attempt.
    const first = (await jobs.executions(id, { limit: 1 }))!;
    expect(first.executions.map((e) => [e.attempt, e.state])).toEqual([[50, 'succeeded']]);
    const second = (await jobs.executions(id, { limit: 1, after: first.next! }))!;
    expect(second.executions.map((e) => e.attempt)).toEqual([49]);

    // The admin detail follows get(); the dashboard pages through its own route.
    const detail = (await app.get(JobsAdmin).detail(id))!;
    expect(detail.executions).toHaveLength(21);
    expect(detail.moreExecutions).toBe(job.moreExecutions);
    const http = request(app.getHttpServer());
    const viaHttp = await http
      .get(`/jobs-dashboard/api/jobs/${id}/executions`)
      .query({ after: job.moreExecutions, limit: 10 })
      .expect(200);
    expect((viaHttp.body as { executions: JobExecution[] }).executions.map((e) => e.attempt)).toEqual(
      range(20, 29).reverse(),
    );
    const bad = await http.get(`/jobs-dashboard/api/jobs/${id}/executions`).query({ after: 'x' }).expect(400);
    expect((bad.body as { message: string }).message).toContain('"after" must be a cursor');
  });

  it('a short history: get() shows it whole with no cursor; executions() of an unknown job is null', async () => {
    const { jobs } = await boot();
    const { id } = await jobs.enqueue(LoudJob, { char: 'a' });
    await ended(jobs, id, 'failed');
    const job = (await jobs.get(id))!;
    expect(job.executions.map((e) => [e.attempt, e.state])).toEqual([
      [1, 'failed'],
      [2, 'failed'],
    ]);
    expect(job.moreExecutions).toBeNull();
    expect((await jobs.executions(id))!.next).toBeNull();
    expect(await jobs.executions('0193a1b2-0000-7000-8000-000000000000')).toBeNull();
  });

  it('refuses bad input with a JobsError naming the field and the fix', async () => {
    const { jobs } = await boot({ worker: { enabled: false } });
    const id = '0193a1b2-0000-7000-8000-000000000000';
    for (const [options, message] of [
      [{ after: 'page-2' }, '"after" must be a cursor'],
      [{ after: 12 }, '"after" must be a cursor'],
      [{ limit: 0 }, '"limit" must be an integer from 1 to 500'],
      [{ limit: 501 }, '"limit" must be an integer from 1 to 500'],
      [{ limit: 2.5 }, '"limit" must be an integer'],
      [{ before: 'x' }, 'before'],
    ] as const) {
      const call = jobs.executions(id, options as never);
      await expect(call).rejects.toThrow(JobsError);
      await expect(jobs.executions(id, options as never)).rejects.toThrow(message);
      await expect(jobs.executions(id, options as never)).rejects.toThrow('Potential fix');
    }
    await expect(jobs.executions('not-an-id')).rejects.toThrow(JobsError);
  });
});

describe('error text is bounded', () => {
  const bounded = async (schema: string, id: string, max: number) => {
    const rows = await sql<{ message: number; stack: number; name: number; text: string }>(
      `SELECT octet_length(e->>'message') AS message, octet_length(e->>'stack') AS stack,
              octet_length(e->>'name') AS name, e->>'message' AS text
         FROM (SELECT last_error AS e FROM ${schema}.job WHERE id = $1
               UNION ALL SELECT error FROM ${schema}.job_execution WHERE job_id = $1) t`,
      [id],
    );
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      expect(row.message).toBeLessThanOrEqual(max);
      expect(row.stack).toBeLessThanOrEqual(max);
      expect(row.message).toBeGreaterThan(max - 64);
      expect(row.text).toMatch(/… \[cut \d+ bytes\]$/);
    }
    return rows;
  };

  it('a handler throwing a 1 MiB message stores at most 8 KiB of message and of stack, marked as cut', async () => {
    const { schema, jobs } = await boot();
    const { id } = await jobs.enqueue(LoudJob, { char: 'x' });
    await ended(jobs, id, 'failed');
    const rows = await bounded(schema, id, 8192);
    const kept = rows[0]!.text.indexOf('…');
    expect(rows[0]!.text).toBe(`${'x'.repeat(kept)}… [cut ${MIB - kept} bytes]`);
    const job = (await jobs.get(id))!;
    expect(job.lastError!.message).toBe(rows[0]!.text);
    expect(job.executions.map((e) => e.error!.message)).toEqual([rows[0]!.text, rows[0]!.text]);
  });

  it('cuts between characters, to the bound maxErrorBytes sets', async () => {
    const { schema, jobs } = await boot({ maxErrorBytes: 1000 });
    const { id } = await jobs.enqueue(LoudJob, { char: 'é' });
    await ended(jobs, id, 'failed');
    const [row] = await bounded(schema, id, 1000);
    expect(row!.text.replace(/… \[cut \d+ bytes\]$/, '')).toMatch(/^é+$/);
  });

  it('an encrypted job is cut before sealing: the stored sealed text is small, readers see the cut message', async () => {
    const { schema, jobs } = await boot();
    const { id } = await jobs.enqueue(LoudSecretJob, {});
    await ended(jobs, id, 'failed');
    const [{ bytes }] = (await sql<{ bytes: number }>(
      `SELECT (SELECT octet_length(last_error::text) FROM ${schema}.job WHERE id = $1)
            + (SELECT sum(octet_length(error::text))::int FROM ${schema}.job_execution WHERE job_id = $1) AS bytes`,
      [id],
    )) as [{ bytes: number }];
    // Three errors, each a sealed message and stack of at most 8 KiB (base64 and the envelope add a third).
    expect(bytes).toBeLessThan(3 * 2 * 8192 * 1.5);
    const job = (await jobs.get(id))!;
    expect(Buffer.byteLength(job.lastError!.message)).toBeLessThanOrEqual(8192);
    expect(job.lastError!.message).toMatch(/^s+… \[cut \d+ bytes\]$/);
  });

  it('refuses a maxErrorBytes below 256 at boot', async () => {
    await expect(boot({ maxErrorBytes: 10 })).rejects.toThrow(/"maxErrorBytes" must be an integer >= 256/);
    await expect(boot({ maxErrorBytes: 10 })).rejects.toThrow(JobsError);
  });
});

describe('JobsAdmin.search({ nameContains })', () => {
  it('matches a part of the name in any case, with %, _ and backslashes as plain characters', async () => {
    const names = ['hist-100%_done', 'hist-100xxdone', 'hist-Report', 'hist-a\\b', 'hist-ab'];
    const { app, admin, jobs } = await boot(
      { worker: { enabled: false }, externalJobs: Object.fromEntries(names.map((n) => [n, { queue: 'x' }])) },
      true,
    );
    for (const name of names) await jobs.enqueue(name, {});
    const found = async (nameContains: string) => (await admin.search({ nameContains })).jobs.map((j) => j.name).sort();
    expect(await found('100%_')).toEqual(['hist-100%_done']);
    expect(await found('%')).toEqual(['hist-100%_done']);
    expect(await found('_')).toEqual(['hist-100%_done']);
    expect(await found('REPORT')).toEqual(['hist-Report']);
    expect(await found('a\\b')).toEqual(['hist-a\\b']);
    expect(await found('hist-')).toEqual([...names].sort());
    expect(await found('nothing')).toEqual([]);
    // With the other filters, and over the dashboard's JSON route.
    expect((await admin.search({ nameContains: '100', name: 'hist-100xxdone' })).jobs.map((j) => j.name)).toEqual([
      'hist-100xxdone',
    ]);
    const res = await request(app.getHttpServer())
      .get('/jobs-dashboard/api/jobs')
      .query({ nameContains: '_done' })
      .expect(200);
    expect((res.body as { jobs: Array<{ name: string }> }).jobs.map((j) => j.name)).toEqual(['hist-100%_done']);

    await expect(admin.search({ nameContains: '' })).rejects.toThrow(/"nameContains" must be a non-empty string/);
    await expect(admin.search({ nameContains: 5 as never })).rejects.toThrow(JobsError);
  });
});

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}
