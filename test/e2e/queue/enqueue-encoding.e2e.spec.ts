import { Module, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Job, JobQueue, JobsError, JobsModule, type JobHandler } from 'nestjs-durable-jobs';
import { DataSource } from 'typeorm';
import { databaseUrl, dropSchemas, sql, uniqueSchema } from '../../support/database.js';

// enqueueMany sends its rows as PostgreSQL array literals built by hand, so
// every character that means something inside one must come back unchanged.
// Jobs that share their columns take a shorter statement (id and payload as
// arrays, the rest once), and calls over 2,000 jobs go in chunks within one
// transaction: both paths must store the same rows, and all or none.
@Job('encoding-probe')
class EncodingProbe implements JobHandler {
  run() {}
}

const schema = uniqueSchema('encoding');
let app: INestApplicationContext;

beforeAll(async () => {
  @Module({
    imports: [
      JobsModule.forRoot({
        connection: databaseUrl(),
        schema,
        worker: { enabled: false },
        unregisteredJobs: 'ignore',
      }),
    ],
    providers: [EncodingProbe],
  })
  class AppModule {}
  const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
  app = await ref.createNestApplication({ logger: false }).init();
});

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema);
});

it('payloads and queue names with quotes, backslashes, braces, commas, NULL and unicode survive a bulk enqueue', async () => {
  const payloads: unknown[] = [
    { text: 'say "hi"', path: 'C:\\temp\\new', braces: '{a,b}', comma: 'a, b', word: 'NULL' },
    'NULL',
    '',
    null,
    '\\"',
    ['{', '}', ',', '"', '\\'],
    { emoji: 'ünïcödé ✓ 🚀', newline: 'a\nb\tc' },
    42.5,
    { nested: { deeper: [1, { x: '"\\"' }] } },
  ];
  const queues = ['default', 'with space', 'q"uote', 'back\\slash', '{braced}', 'a,b', 'NULL', 'ünï', 'default'];
  const queue = app.get(JobQueue);
  const jobs = await queue.enqueueMany(
    payloads.map((payload, i) => ({ job: EncodingProbe, payload, options: { queue: queues[i], priority: i - 4 } })),
  );
  expect(jobs).toHaveLength(payloads.length);
  for (const [i, { id }] of jobs.entries()) {
    const info = await queue.get(id);
    expect(info).toMatchObject({ name: 'encoding-probe', queue: queues[i], priority: i - 4, state: 'queued' });
    expect(info!.payload).toEqual(payloads[i]);
  }
});

const countRows = async () => (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".job`))[0]!.n;
const tricky = (i: number) => (i % 7 === 0 ? { s: `q"\\{${i},NULL}` } : { i });

it('a chunked bulk enqueue of one job type stores every row whole, in the order of the returned ids', async () => {
  const before = await countRows();
  const queue = app.get(JobQueue);
  const t0 = Date.now();
  const options = { queue: 'uniform "q"', priority: 3, delay: 60_000, maxAttempts: 7, timeout: 1234 };
  const ids = await queue.enqueueMany(
    Array.from({ length: 4500 }, (_, i) => ({ job: EncodingProbe, payload: tricky(i), options })),
  );
  expect(ids).toHaveLength(4500);
  const rows = await sql<Record<string, unknown>>(
    `SELECT id, name, queue, priority, max_attempts, timeout_ms, run_at, state, payload
       FROM "${schema}".job WHERE id = ANY($1::uuid[])`,
    [ids.map((r) => r.id)],
  );
  expect(rows).toHaveLength(4500);
  const byId = new Map(rows.map((r) => [r.id as string, r]));
  for (const [i, { id }] of ids.entries()) {
    const row = byId.get(id)!;
    expect(row).toMatchObject({ name: 'encoding-probe', queue: 'uniform "q"', priority: 3, max_attempts: 7 });
    expect(row).toMatchObject({ timeout_ms: 1234, state: 'queued', payload: tricky(i) });
    expect((row.run_at as Date).getTime()).toBeGreaterThanOrEqual(t0 + 60_000);
  }
  expect(await countRows()).toBe(before + 4500);
});

it('a chunked bulk enqueue of jobs that differ in their options stores each one its own', async () => {
  const queue = app.get(JobQueue);
  const ids = await queue.enqueueMany(
    Array.from({ length: 2500 }, (_, i) => ({
      job: EncodingProbe,
      payload: tricky(i),
      options: { queue: i % 2 ? 'odd,queue' : 'even{queue}', priority: i % 5 },
    })),
  );
  const rows = await sql<Record<string, unknown>>(
    `SELECT id, queue, priority, payload FROM "${schema}".job WHERE id = ANY($1::uuid[])`,
    [ids.map((r) => r.id)],
  );
  const byId = new Map(rows.map((r) => [r.id as string, r]));
  expect(byId.size).toBe(2500);
  for (const [i, { id }] of ids.entries()) {
    expect(byId.get(id)).toMatchObject({
      queue: i % 2 ? 'odd,queue' : 'even{queue}',
      priority: i % 5,
      payload: tricky(i),
    });
  }
});

it('a bad job in a late chunk rejects the whole call: the chunks already sent are rolled back', async () => {
  const before = await countRows();
  const items = Array.from({ length: 6000 }, (_, i) => ({ job: EncodingProbe, payload: { i } as unknown }));
  items[5321] = { job: EncodingProbe, payload: { i: 5321, when: new Date() } };
  const error = await app
    .get(JobQueue)
    .enqueueMany(items)
    .then(
      () => null,
      (e: unknown) => e,
    );
  expect(error).toBeInstanceOf(JobsError);
  expect((error as Error).message).toMatch(/encoding-probe.*\$\.when \(a Date/);
  expect(await countRows()).toBe(before);
});

it("a chunked bulk enqueue inside the caller's transaction stands or falls with it", async () => {
  const ds = await new DataSource({ type: 'postgres', url: databaseUrl() }).initialize();
  try {
    const queue = app.get(JobQueue);
    const before = await countRows();
    const items = Array.from({ length: 3000 }, (_, i) => ({ job: EncodingProbe, payload: { i } }));
    await expect(
      ds.transaction(async (manager) => {
        await queue.enqueueMany(items, { manager });
        throw new Error('the caller changes its mind');
      }),
    ).rejects.toThrow('the caller changes its mind');
    expect(await countRows()).toBe(before);
    await ds.transaction((manager) => queue.enqueueMany(items, { manager }));
    expect(await countRows()).toBe(before + 3000);
  } finally {
    await ds.destroy();
  }
});
