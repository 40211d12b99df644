import type { INestApplication } from '@nestjs/common';
import {
  BatchBuilder,
  Cron,
  Job,
  JobQueue,
  JobsError,
  RecurringSchedules,
  type JobContext,
  type JobHandler,
} from 'nestjs-durable-jobs';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

// Serial keys and groups declared on the job type (@Job's serialKey and group, fixed or a function
// of the payload): every way of writing a job takes them, a call's own replaces them, a schedule's
// ticks carry them, and what a key function does wrong is a JobsError at the call.

type Account = { account: string; seq?: number };

/** Records each run's start and end, so the test can see runs of one key overlap or not. */
@Job('dk-ledger', { serialKey: (p: Account) => `account-${p.account}` })
class Ledger implements JobHandler<Account> {
  async run(p: Account): Promise<void> {
    const table = `"${schemaOfRun}".dk_run`;
    await sql(`INSERT INTO ${table} (account, seq, phase) VALUES ($1, $2, 'start')`, [p.account, p.seq ?? 0]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await sql(`INSERT INTO ${table} (account, seq, phase) VALUES ($1, $2, 'end')`, [p.account, p.seq ?? 0]);
  }
}
/** The schema of the test that runs Ledger jobs: one at a time in this file. */
let schemaOfRun = '';

type Tenant = { tenant: string; next?: boolean };

/** A group per tenant; with `next`, stages a continuation of itself. */
@Job('dk-report', { group: (p: Tenant) => `tenant-${p.tenant}` })
class Report implements JobHandler<Tenant> {
  run(p: Tenant, ctx: JobContext): void {
    if (p.next) ctx.continueWith(Report, { tenant: p.tenant });
  }
}

@Cron('0 3 * * *', { name: 'dk-nightly', payload: { tenant: 'acme' } })
@Job('dk-nightly', { group: (p: Tenant) => `tenant-${p.tenant}`, queue: 'dk-nightly' })
class Nightly implements JobHandler<Tenant> {
  run(): void {}
}

/** A fixed serial key: every job of the type in one line. */
@Job('dk-migrate', { serialKey: 'schema-migrations' })
class Migrate implements JobHandler<{ step: number }> {
  run(): void {}
}

@Job('dk-picky', {
  serialKey: (p: { account?: unknown }) => {
    if (p.account === undefined) throw new Error('no account in the payload');
    return p.account as string;
  },
})
class Picky implements JobHandler<{ account?: unknown }> {
  run(): void {}
}

const schemas: string[] = [];
const apps: INestApplication[] = [];

afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});
afterAll(() => dropSchemas(...schemas));

async function boot(prefix: string, worker = false, clock?: ManualClock) {
  // The schedule test's ticks come from runDue() after it moves the clock, not from a timer.
  const schema = uniqueSchema(prefix);
  schemas.push(schema);
  const app = await startJobsApp(
    schema,
    {
      ...(clock ? { clock } : {}),
      worker: worker ? { concurrency: 8, pollInterval: 50 } : { enabled: false },
      scheduler: clock ? { pollInterval: 60_000 } : { enabled: false },
    },
    { providers: [Ledger, Report, Nightly, Migrate, Picky] },
  );
  apps.push(app);
  return { app, schema, jobs: app.get(JobQueue) };
}

const keysOf = (schema: string, name: string) =>
  sql<{ serial_key: string | null; group_key: string | null; payload: Record<string, unknown> }>(
    `SELECT serial_key, group_key, payload FROM "${schema}".job WHERE name = $1 ORDER BY id`,
    [name],
  );

it('every way of writing a job takes the serial key its type declares, computed from its payload', async () => {
  const { app, schema, jobs } = await boot('dkwrite');
  await jobs.enqueue(Ledger, { account: 'a' });
  await jobs.enqueueMany([
    { job: Ledger, payload: { account: 'b' } },
    { job: Ledger, payload: { account: 'c' } },
  ]);
  await app.get(BatchBuilder).create('dk').add(Ledger, { account: 'd' }).then(Ledger, { account: 'e' }).dispatch();
  await jobs.chain().then(Ledger, { account: 'f' }).then(Ledger, { account: 'g' }).dispatch();
  await jobs
    .flow()
    .add('x', Ledger, { account: 'h' })
    .add('y', Ledger, { account: 'i' }, { after: ['x'] })
    .dispatch();
  await jobs.enqueue(Migrate, { step: 1 });

  const rows = await keysOf(schema, 'dk-ledger');
  expect(rows.map((r) => [r.payload.account, r.serial_key, r.group_key]).sort()).toEqual(
    ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'].map((a) => [a, `account-${a}`, null]),
  );
  expect((await keysOf(schema, 'dk-migrate')).map((r) => r.serial_key)).toEqual(['schema-migrations']);
  // Written with serial keys, the queue is served by the claim that keeps them.
  expect(await sql(`SELECT has_serial FROM "${schema}".job_queue WHERE name = 'default'`)).toEqual([
    { has_serial: true },
  ]);
});

it("a call's own serialKey or group replaces the declared key", async () => {
  const { schema, jobs } = await boot('dkcall');
  await jobs.enqueue(Ledger, { account: 'a', seq: 1 }, { serialKey: 'by-hand' });
  await jobs.enqueue(Ledger, { account: 'a', seq: 2 }, { group: 'tenant-9' });
  await jobs.enqueue(Report, { tenant: 't', next: false }, { serialKey: 'report-line' });
  const ledger = await keysOf(schema, 'dk-ledger');
  expect(ledger.map((r) => [r.payload.seq, r.serial_key, r.group_key])).toEqual([
    [1, 'by-hand', null],
    [2, null, 'tenant-9'],
  ]);
  expect((await keysOf(schema, 'dk-report')).map((r) => [r.serial_key, r.group_key])).toEqual([['report-line', null]]);
});

it('jobs of one declared serial key run one at a time and in order, across keys at once', async () => {
  const { schema, jobs } = await boot('dkrun', true);
  schemaOfRun = schema;
  await sql(
    `CREATE TABLE "${schema}".dk_run (id bigserial PRIMARY KEY, account text NOT NULL, seq int NOT NULL, phase text NOT NULL)`,
  );
  await jobs.enqueueMany(
    Array.from({ length: 24 }, (_, i) => ({ job: Ledger, payload: { account: `k${i % 3}`, seq: i } })),
  );
  await waitFor(
    'the 24 jobs to succeed',
    async () =>
      (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".job WHERE state = 'succeeded'`))[0]!.n ===
      24,
    30_000,
  );
  const runs = await sql<{ account: string; seq: number; phase: string }>(
    `SELECT account, seq, phase FROM "${schema}".dk_run ORDER BY id`,
  );
  for (const account of ['k0', 'k1', 'k2']) {
    const own = runs.filter((r) => r.account === account);
    // start, end, start, end, ...: never two of one key at once, and in the order they were enqueued.
    expect(own.map((r) => r.phase)).toEqual(Array.from({ length: 16 }, (_, i) => (i % 2 ? 'end' : 'start')));
    const seqs = own.filter((r) => r.phase === 'start').map((r) => r.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
  }
  // Different keys did run side by side.
  let open = 0;
  let most = 0;
  for (const r of runs) {
    open += r.phase === 'start' ? 1 : -1;
    most = Math.max(most, open);
  }
  expect(most).toBeGreaterThan(1);
});

it('a continuation staged by a handler takes the group its type declares', async () => {
  const { schema, jobs } = await boot('dkcont', true);
  const first = await jobs.enqueue(Report, { tenant: 'acme', next: true });
  await waitFor('both runs to succeed', async () => {
    const rows = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".job WHERE state = 'succeeded'`);
    return rows[0]!.n === 2;
  });
  const rows = await keysOf(schema, 'dk-report');
  expect(rows.map((r) => r.group_key)).toEqual(['tenant-acme', 'tenant-acme']);
  expect((await jobs.get(first.id))!.state).toBe('succeeded');
});

it("a schedule's ticks carry the group its job type declares for the schedule's payload, and flag their queue", async () => {
  const clock = new ManualClock(new Date('2026-12-01T02:59:00Z'));
  const { app, schema } = await boot('dktick', false, clock);
  const schedules = app.get(RecurringSchedules);
  await schedules.upsert('dk-beta', Nightly, '0 4 * * *', { payload: { tenant: 'beta' } });
  expect(await sql(`SELECT name FROM "${schema}".job_queue WHERE name = 'dk-nightly'`)).toEqual([]);

  // A tick of the @Cron schedule (written at start), and a run of the dynamic one now.
  clock.advance(60_000);
  await schedules.runDue();
  await schedules.runNow('dk-beta');
  const rows = await keysOf(schema, 'dk-nightly');
  expect(rows.map((r) => [r.payload.tenant, r.group_key])).toEqual([
    ['acme', 'tenant-acme'],
    ['beta', 'tenant-beta'],
  ]);
  expect(await sql(`SELECT has_groups FROM "${schema}".job_queue WHERE name = 'dk-nightly'`)).toEqual([
    { has_groups: true },
  ]);
});

describe('what a declaration or its key function gets wrong', () => {
  it('a key function that throws or returns no string is a JobsError at the call naming the job, the field and the fix; nothing of a batch is written', async () => {
    const { app, schema, jobs } = await boot('dkbad');
    await expect(jobs.enqueue(Picky, {})).rejects.toThrow(
      new JobsError(
        `enqueue('dk-picky'): the serialKey function that @Job('dk-picky') declares threw (no account in the payload). ` +
          `Potential fix: make it return a string for every payload this job is enqueued with, or pass { serialKey } to this call.`,
      ),
    );
    await expect(jobs.enqueue(Picky, { account: 42 })).rejects.toThrow(
      /enqueue\('dk-picky'\): the serialKey function that @Job\('dk-picky'\) declares returned 42, not a non-empty string\. Potential fix: return a string/,
    );
    await expect(jobs.enqueue(Picky, { account: 'x'.repeat(300) })).rejects.toThrow(
      /the serialKey @Job\('dk-picky'\) declares\): "serialKey" is 300 characters long; the limit is 256/,
    );
    // The last member's key function throws: the batch is refused whole.
    await expect(
      app.get(BatchBuilder).create('dk-bad').add(Picky, { account: 'ok' }).add(Picky, {}).dispatch(),
    ).rejects.toThrow(JobsError);
    expect(await sql(`SELECT count(*)::int AS n FROM "${schema}".job`)).toEqual([{ n: 0 }]);
    expect(await sql(`SELECT count(*)::int AS n FROM "${schema}".job_batch`)).toEqual([{ n: 0 }]);
    // The call's own key is taken without asking the function.
    await expect(jobs.enqueue(Picky, {}, { serialKey: 'given' })).resolves.toMatchObject({ id: expect.any(String) });
  });

  it('a declaration with both keys, or a key that is neither a string nor a function, is a JobsError where it is declared', () => {
    expect(() => Job('dk-both', { serialKey: 'a', group: 'b' })(class Both {})).toThrow(
      /@Job\('dk-both'\) on class Both: "serialKey" and "group" declared together: .* Potential fix: declare one/,
    );
    expect(() => Job('dk-num', { group: 7 as unknown as string })(class Num {})).toThrow(
      /@Job\('dk-num'\) on class Num: "group" must be a string or a function of the payload that returns one, got 7\. Potential fix: group: \(payload\) =>/,
    );
    expect(() => Job('dk-empty', { serialKey: '' })(class Empty {})).toThrow(
      /@Job\('dk-empty'\) on class Empty: "serialKey" must be a non-empty string/,
    );
  });
});
