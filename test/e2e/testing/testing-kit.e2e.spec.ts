import pg from 'pg';
import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { BatchBuilder, JobQueue, JobQueues, JobsError, PermanentJobError } from 'nestjs-durable-jobs';
import { JobsTester, JobsTestingModule, ManualClock, type AttemptReport } from 'nestjs-durable-jobs/testing';
import { DataSource } from 'typeorm';
import { databaseUrl, dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import {
  AwaitDecision,
  Charge,
  Flaky,
  Forever,
  Greet,
  Held,
  KitJobsModule,
  KitLog,
  Scoped,
} from '../../support/kit.jobs.js';
import { startTestingApp, type TestingApp } from '../../support/testing-app.js';

// JobsTestingModule in its default mode ('manual'): a schema per test app,
// and jobs that run only when the test drains them, through the worker's
// own parts, with faults injected on request.

const schemaExists = async (schema: string) =>
  (await sql(`SELECT 1 FROM pg_namespace WHERE nspname = $1`, [schema])).length === 1;

const tags = (reports: AttemptReport[]) =>
  reports.map((r) => `${r.name}:${(r.payload as { tag?: string }).tag ?? ''}#${r.attempt} ${r.outcome}`);

describe("a test app's own schema", () => {
  it('is made by the migrations at start and dropped at close, when the module owns the connection', async () => {
    const { app, tester, jobs } = await startTestingApp();
    expect(tester.schema).toMatch(/^jobs_test_[0-9a-z]+_[0-9a-f]{6}$/);
    const tables = await sql<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = $1`,
      [tester.schema],
    );
    expect(tables.map((t) => t.table_name)).toEqual(expect.arrayContaining(['job', 'job_execution', 'schema_version']));
    await jobs.enqueue(Greet, { tag: 'left behind' });
    await app.close();
    expect(await schemaExists(tester.schema)).toBe(false);
  });

  it("shares the app's DataSource: the schema is dropped at close, and the DataSource stays open and the app's", async () => {
    const dataSource = await new DataSource({ type: 'postgres', url: databaseUrl() }).initialize();
    try {
      const { app, tester, jobs } = await startTestingApp({
        async: { useFactory: () => ({ dataSource, unregisteredJobs: 'ignore' as const, schemaPrefix: 'shared_ds' }) },
      });
      expect(tester.schema).toMatch(/^shared_ds_/);
      await dataSource.transaction((manager) => jobs.enqueue(Greet, { tag: 'in a transaction' }, { manager }));
      expect(tags(await tester.drain())).toEqual(['kit-greet:in a transaction#1 succeeded']);
      await app.close();
      expect(await schemaExists(tester.schema)).toBe(false);
      expect(dataSource.isInitialized).toBe(true);
      expect(await dataSource.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await dataSource.destroy();
    }
  });

  it("drops it on a connection of its own when the app's DataSource closed first", async () => {
    const dataSource = await new DataSource({ type: 'postgres', url: databaseUrl() }).initialize();
    const { app, tester } = await startTestingApp({
      async: { useFactory: () => ({ dataSource, unregisteredJobs: 'ignore' as const }) },
    });
    await dataSource.destroy();
    await app.close();
    expect(await schemaExists(tester.schema)).toBe(false);
  });

  it('is one per app, also for apps compiled from one module definition', async () => {
    @Module({ imports: [JobsTestingModule.forRoot({ connection: databaseUrl() }), KitJobsModule] })
    class DefinedOnce {}
    const apps = await Promise.all(
      [1, 2].map(async () => {
        const ref = await Test.createTestingModule({ imports: [DefinedOnce] }).compile();
        const app = ref.createNestApplication({ logger: false });
        await app.init();
        return app;
      }),
    );
    const [one, two] = apps.map((app) => app.get(JobsTester));
    expect(one!.schema).not.toBe(two!.schema);
    expect(one!.clock).not.toBe(two!.clock);
    await apps[0]!.get(JobQueue).enqueue(Greet, { tag: 'only in one' });
    expect(await two!.enqueued()).toEqual([]);
    await Promise.all(apps.map((app) => app.close()));
    expect([await schemaExists(one!.schema), await schemaExists(two!.schema)]).toEqual([false, false]);
  });

  it('is kept with keepSchema, for a look after the test', async () => {
    const { app, tester } = await startTestingApp({ keepSchema: true });
    await app.close();
    try {
      expect(await schemaExists(tester.schema)).toBe(true);
    } finally {
      await dropSchemas(tester.schema);
    }
  });

  it("keeps two test apps and a dev server's worker on the same database off each other's jobs", async () => {
    const devSchema = uniqueSchema('kitdev');
    const dev = await startJobsApp(devSchema, { worker: { pollInterval: 50 } }, { imports: [KitJobsModule] });
    const a = await startTestingApp();
    const b = await startTestingApp();
    try {
      const { id } = await a.jobs.enqueue(Greet, { tag: 'mine' });
      expect(await b.tester.enqueued()).toEqual([]);
      expect(await b.tester.drain()).toEqual([]);
      // The drain claims it as a first attempt: no one else had taken it.
      expect(tags(await a.tester.drain())).toEqual(['kit-greet:mine#1 succeeded']);
      expect((await a.jobs.get(id))!.workerId).toMatch(/^jobs-tester:/);
      expect(dev.get(KitLog).calls.filter((c) => c.startsWith('greet'))).toEqual([]);
      expect(a.log.calls).toEqual(['greet:mine#1', 'greet-end:mine#1']);
    } finally {
      await Promise.all([a.app.close(), b.app.close(), dev.close()]);
      await dropSchemas(devSchema);
    }
  });
});

describe('drain()', () => {
  let t: TestingApp;
  beforeAll(async () => {
    // Far from a fifth minute: kit-tick's schedule must not fall due while these tests move the clock.
    t = await startTestingApp({ clock: new ManualClock(new Date('2026-05-04T09:00:30Z')) });
  });
  afterAll(async () => {
    await t?.app.close();
  });
  beforeEach(() => {
    t.log.calls.length = 0;
    t.tester.clearFaults();
  });

  it('runs nothing by itself; then each due job and what it made due, one at a time, in order', async () => {
    const { jobs, tester, log } = t;
    const { id } = await jobs.enqueue(Greet, { tag: 'a', then: 'b', spawn: 'c' });
    expect(log.calls).toEqual([]);
    expect((await jobs.get(id))!.state).toBe('queued');
    const ran = await tester.drain();
    expect(tags(ran)).toEqual(['kit-greet:a#1 succeeded', 'kit-greet:b#1 succeeded', 'kit-greet:c#1 succeeded']);
    expect(ran[0]).toMatchObject({ id, queue: 'greetings', maxAttempts: 3, result: { greeted: 'a' }, batchId: null });
    // One job at a time: each handler ends before the next starts.
    expect(log.calls).toEqual([
      'greet:a#1',
      'greet-end:a#1',
      'greet:b#1',
      'greet-end:b#1',
      'greet:c#1',
      'greet-end:c#1',
    ]);
    expect(await jobs.get(id)).toMatchObject({ state: 'succeeded', result: { greeted: 'a' } });
    expect(await tester.drain()).toEqual([]);
  });

  it("settles workflows as a worker would: a batch's callback after its members, a chain stopped by a failure", async () => {
    const { app, jobs, tester } = t;
    const batch = await app
      .get(BatchBuilder)
      .create('greetings')
      .add(Greet, { tag: 'm1' })
      .add(Greet, { tag: 'm2' })
      .then(Greet, { tag: 'all greeted' })
      .dispatch();
    const chain = await jobs
      .chain()
      .then(Greet, { tag: 'step 1' })
      .then(Flaky, { tag: 'step 2', permanent: true })
      .then(Greet, { tag: 'step 3' })
      .dispatch();
    const ran = await tester.drain();
    // Jobs due at one instant run in the order they were enqueued (the callback was written with
    // the batch, before the chain), a queue after another in name order.
    expect(tags(ran)).toEqual([
      'kit-greet:m1#1 succeeded',
      'kit-greet:m2#1 succeeded',
      'kit-greet:all greeted#1 succeeded',
      'kit-greet:step 1#1 succeeded',
      'kit-flaky:step 2#1 failed',
    ]);
    expect(ran.filter((r) => r.batchId === batch.id)).toHaveLength(2);
    expect((await jobs.batchStatus(batch.id))!.state).toBe('succeeded');
    expect((await jobs.get(chain.ids[2]!))!.state).toBe('skipped');
  });

  it('leaves a retry for after its backoff; advance() makes it due without waiting', async () => {
    const { jobs, tester } = t;
    const { id } = await jobs.enqueue(Flaky, { tag: 'f', okFrom: 2 });
    const [first] = await tester.drain();
    expect(first).toMatchObject({ id, outcome: 'retry', error: { message: 'f: attempt 1 broke' } });
    expect(first!.retryAt).toEqual(new Date(tester.clock.now().getTime() + 60_000));
    expect(await tester.advance(59_999)).toEqual([]);
    expect(await tester.drain()).toEqual([]);
    await tester.advance(1);
    expect(tags(await tester.drain())).toEqual(['kit-flaky:f#2 succeeded']);
    expect((await jobs.get(id))!.executions.map((e) => [e.attempt, e.state])).toEqual([
      [1, 'failed'],
      [2, 'succeeded'],
    ]);
  });

  it('claims a due job whose row another transaction held for a moment when it looked, instead of ending with it due', async () => {
    const { jobs, tester } = t;
    const { id } = await jobs.enqueue(Greet, { tag: 'held a moment' });
    // What waitFor() and signal() do to a job's row, held longer: a claim skips a locked row.
    const holder = new pg.Client({ connectionString: databaseUrl() });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM "${tester.schema}".job WHERE id = $1 FOR UPDATE`, [id]);
      const released = new Promise((resolve) => setTimeout(resolve, 200)).then(() => holder.query('COMMIT'));
      expect(tags(await tester.drain())).toEqual(['kit-greet:held a moment#1 succeeded']);
      await released;
    } finally {
      await holder.end();
    }
  });

  it('lets JobQueue.waitFor() resolve when drain() ends the job, also after advance() brought its retry due', async () => {
    const { jobs, tester } = t;
    const { id } = await jobs.enqueue(Flaky, { tag: 'awaited', okFrom: 2 });
    let settled = false;
    const waited = jobs.waitFor(id, { timeout: 30_000 }).finally(() => (settled = true));
    expect((await tester.drain()).map((r) => r.outcome)).toEqual(['retry']);
    expect(settled).toBe(false);
    await tester.advance(60_000);
    expect(tags(await tester.drain())).toEqual(['kit-flaky:awaited#2 succeeded']);
    expect(await waited).toMatchObject({ id, state: 'succeeded', attempt: 2 });
  });

  it('resumes a job waiting for a signal on the next drain after tester.signal(), and times its wait out on advance()', async () => {
    const { jobs, tester } = t;
    const signalled = await jobs.enqueue(AwaitDecision, { tag: 'signalled' });
    const forgotten = await jobs.enqueue(AwaitDecision, { tag: 'forgotten' });
    expect((await tester.drain()).map((r) => r.outcome)).toEqual(['snoozed', 'snoozed']);
    expect(await tester.drain()).toEqual([]);
    await tester.signal(signalled.id, 'decision', { approved: true });
    expect(tags(await tester.drain())).toEqual(['kit-await-decision:signalled#2 succeeded']);
    expect((await jobs.get(signalled.id))!.result).toEqual({ approved: true });
    await tester.advance(60_000);
    expect(tags(await tester.drain())).toEqual(['kit-await-decision:forgotten#2 succeeded']);
    expect((await jobs.get(forgotten.id))!.result).toBeNull();
  });

  it('has run onFailure by the time it resolves with a job failed for good', async () => {
    const { jobs, tester, log } = t;
    const { id } = await jobs.enqueue(Flaky, { tag: 'gone', permanent: true });
    expect(tags(await tester.drain())).toEqual(['kit-flaky:gone#1 failed']);
    expect(log.failures.get(id)).toBe('PermanentJobError: gone: the record is gone');
  });

  it('failNext(): the handler is not called, and the retry decision and onFailure follow from the error', async () => {
    const { jobs, tester, log } = t;
    tester.failNext(Greet, new Error('SMTP down'));
    tester.failNext('kit-flaky', new PermanentJobError('injected for good'));
    tester.failNext(Charge, 'a message is enough');
    expect(tester.pendingFaults()).toEqual({ 'kit-greet': ['fail'], 'kit-flaky': ['fail'], 'kit-charge': ['fail'] });
    const greet = await jobs.enqueue(Greet, { tag: 'g' });
    const flaky = await jobs.enqueue(Flaky, { tag: 'fl', okFrom: 1 });
    const ran = await tester.drain({ names: [Greet, Flaky] });
    expect(ran.map((r) => [r.name, r.outcome, r.injected, r.error?.message])).toEqual([
      ['kit-flaky', 'failed', 'failNext', 'injected for good'],
      ['kit-greet', 'retry', 'failNext', 'SMTP down'],
    ]);
    expect(log.calls).toEqual([]);
    expect(log.failures.get(flaky.id)).toBe('PermanentJobError: injected for good');
    expect(tester.pendingFaults()).toEqual({ 'kit-charge': ['fail'] });
    // The next attempt, once its backoff is over, is the handler's own again.
    await tester.advance(ran[1]!.retryAt!.getTime() - tester.clock.now().getTime());
    expect(tags(await tester.drain({ names: ['kit-greet'] }))).toEqual(['kit-greet:g#2 succeeded']);
    expect((await jobs.get(greet.id))!.executions.map((e) => [e.attempt, e.state, e.error?.message ?? null])).toEqual([
      [1, 'failed', 'SMTP down'],
      [2, 'succeeded', null],
    ]);
  });

  it('resolves request-scoped handlers per run, and a failNext fault still reaches their onFailure', async () => {
    const { jobs, tester, log } = t;
    const { id } = await jobs.enqueue(Scoped, { tag: 's1' });
    expect(await tester.drain()).toEqual([
      expect.objectContaining({ id, outcome: 'succeeded', result: { sameJob: true } }),
    ]);
    tester.failNext(Scoped, 'refused');
    const failed = await jobs.enqueue(Scoped, { tag: 's2' });
    expect(await tester.drain()).toEqual([expect.objectContaining({ id: failed.id, outcome: 'failed' })]);
    expect(log.calls).toEqual(['scoped:s1#1']);
    expect(log.failures.get(failed.id)).toBe('refused (own context: true)');
  });

  it('dieAfterWork(): the work is done but the outcome never saved; past the lease the job runs again', async () => {
    const { jobs, tester, log } = t;
    tester.dieAfterWork(Charge);
    const { id } = await jobs.enqueue(Charge, { amount: 5 });
    expect(await tester.drain()).toEqual([expect.objectContaining({ id, outcome: 'died', injected: 'dieAfterWork' })]);
    expect(log.ledger.get(id)).toBe(5);
    expect((await jobs.get(id))!.state).toBe('active');
    // Its lease (30 s by default) still holds it, as a crashed worker's would.
    expect(await tester.drain()).toEqual([]);
    await tester.advance(30_001);
    expect(await tester.drain()).toEqual([
      expect.objectContaining({ id, attempt: 2, outcome: 'succeeded', result: { charged: false } }),
    ]);
    expect(log.calls).toEqual(['charge:5#1', 'charge:5#2']);
    expect([...log.ledger.values()]).toEqual([5]);
    const job = (await jobs.get(id))!;
    expect(job.executions.map((e) => [e.attempt, e.state, e.error?.name ?? null])).toEqual([
      [1, 'interrupted', 'LeaseLostError'],
      [2, 'succeeded', null],
    ]);
  });

  it("aborts a running job's signal when it is cancelled, as the worker does", async () => {
    const { jobs, tester, log } = t;
    const { id } = await jobs.enqueue(Held, { tag: 'h' });
    const started = log.whenStarted('h');
    const draining = tester.drain();
    await started;
    await jobs.cancel(id);
    expect(await draining).toEqual([expect.objectContaining({ id, outcome: 'cancelled' })]);
    expect(log.aborted.get(id)).toBe('JobCancelledError');
    expect((await jobs.get(id))!.state).toBe('cancelled');
  });

  it('runs only the queue or the jobs asked for', async () => {
    const { jobs, tester } = t;
    await jobs.enqueue(Greet, { tag: 'q' });
    await jobs.enqueue(Charge, { amount: 1 });
    expect((await tester.drain({ queue: 'default' })).map((r) => r.name)).toEqual(['kit-charge']);
    expect(await tester.drain({ names: [Charge] })).toEqual([]);
    expect((await tester.drain({ names: [Greet] })).map((r) => r.name)).toEqual(['kit-greet']);
  });

  it("holds a paused queue's jobs back and runs grouped and serial-key jobs, as a worker would", async () => {
    const { app, jobs, tester } = t;
    const queues = app.get(JobQueues);
    await queues.pause('greetings');
    await jobs.enqueue(Greet, { tag: 'held' });
    expect(await tester.drain()).toEqual([]);
    await queues.resume('greetings');
    expect(tags(await tester.drain())).toEqual(['kit-greet:held#1 succeeded']);
    // Grouped and serial-key jobs go through the controlled claim, which the plain one never takes.
    await jobs.enqueue(Greet, { tag: 'tenant' }, { group: 'acme' });
    await jobs.enqueue(Greet, { tag: 'serial-1' }, { serialKey: 'order-7' });
    await jobs.enqueue(Greet, { tag: 'serial-2' }, { serialKey: 'order-7' });
    expect(tags(await tester.drain()).sort()).toEqual([
      'kit-greet:serial-1#1 succeeded',
      'kit-greet:serial-2#1 succeeded',
      'kit-greet:tenant#1 succeeded',
    ]);
  });

  it('fails past its limit when a job enqueues itself without end, leaving the next one queued', async () => {
    const { jobs, tester } = t;
    await jobs.enqueue(Forever, { n: 0 });
    await expect(tester.drain({ limit: 5 })).rejects.toThrow(
      /drain\(\) ran 5 attempts and jobs are still due \(next: "kit-forever"[\s\S]*Potential fix: drain\(\{ limit: 50 \}\)/,
    );
    const [left] = await tester.expectEnqueued({ name: Forever, payload: { n: 5 }, count: 1 });
    expect(left).toMatchObject({ state: 'queued', attempt: 0 });
    await jobs.cancel(left!.id);
  });

  it('keeps a history of every attempt it ran', async () => {
    const { jobs, tester } = t;
    await jobs.enqueue(Greet, { tag: 'h1' });
    await tester.drain();
    await jobs.enqueue(Greet, { tag: 'h2' });
    await tester.drain();
    expect(tags(tester.history({ name: Greet }).slice(-2))).toEqual([
      'kit-greet:h1#1 succeeded',
      'kit-greet:h2#1 succeeded',
    ]);
    expect(tester.history().length).toBeGreaterThan(tester.history({ name: Greet }).length);
  });

  it('refuses bad input with a JobsError naming the fix', async () => {
    const { tester } = t;
    await expect(async () => tester.drain({ limit: 0 })).rejects.toThrow(/"limit" must be an integer >= 1/);
    expect(() => tester.failNext('no-such-job', new Error('x'))).toThrow(JobsError);
    expect(() => tester.failNext(Greet, 42 as never)).toThrow(/"error" must be an Error or a message, got 42/);
    await expect(tester.advance(-1)).rejects.toThrow(/"ms" must be a finite number of milliseconds >= 0/);
    await expect(async () => tester.drain({ names: 'kit-greet' as never })).rejects.toThrow(/"names" must be an array/);
  });
});

describe('jobs whose successes are forgotten (retention.succeeded: 0)', () => {
  it('drain() reports the success, and waitForJob() says the job was forgotten rather than that the id is wrong', async () => {
    const { app, tester, jobs } = await startTestingApp({ retention: { succeeded: 0 } });
    try {
      const { id } = await jobs.enqueue(Greet, { tag: 'forgotten' });
      expect(tags(await tester.drain())).toEqual(['kit-greet:forgotten#1 succeeded']);
      expect(await jobs.get(id)).toBeNull();
      await expect(tester.waitForJob(id)).rejects.toThrow(/no job has this id.*keep: \{ succeeded: false \}/);
    } finally {
      await app.close();
    }
  });
});
