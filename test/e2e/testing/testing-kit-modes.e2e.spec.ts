import { Inject, Injectable } from '@nestjs/common';
import {
  BatchBuilder,
  Job,
  JOBS_DATA_SOURCE,
  JobsError,
  RecurringSchedules,
  type JobContext,
  type JobHandler,
} from 'nestjs-durable-jobs';
import { JobsAssertionError, JobsTester, JobsTestingModule, ManualClock } from 'nestjs-durable-jobs/testing';
import { DataSource } from 'typeorm';
import { databaseUrl } from '../../support/database.js';
import { Flaky, Greet, KitJobsModule, KitLog, Tick } from '../../support/kit.jobs.js';
import { startTestingApp, type TestingApp } from '../../support/testing-app.js';

// The other two modes ('inline' and 'worker'), advance() with schedules,
// the expectations' messages, and the module's checks of its options.

/** Reads, on a connection of its own, whether the order its payload names is committed. */
@Injectable()
class OrderCheckSeen {
  readonly visible = new Map<number, boolean>();
}

@Job('kit-order-check')
class OrderCheck implements JobHandler<{ orderId: number; table: string }> {
  constructor(
    @Inject(JOBS_DATA_SOURCE) private readonly dataSource: DataSource,
    private readonly seen: OrderCheckSeen,
    private readonly log: KitLog,
  ) {}

  async run(payload: { orderId: number; table: string }, ctx: JobContext): Promise<void> {
    this.log.record('order', String(payload.orderId), ctx);
    const rows: unknown[] = await this.dataSource.query(`SELECT 1 FROM ${payload.table} WHERE id = $1`, [
      payload.orderId,
    ]);
    this.seen.visible.set(payload.orderId, rows.length === 1);
  }
}

/** Calls drain() from inside a drained job, and keeps what it said. */
@Job('kit-drains-inside')
class DrainsInside implements JobHandler<Record<string, never>> {
  said = '';
  constructor(private readonly tester: JobsTester) {}

  async run(): Promise<void> {
    try {
      await this.tester.drain();
    } catch (error) {
      this.said = (error as Error).message;
    }
  }
}

describe("mode 'inline'", () => {
  let t: TestingApp;
  let dataSource: DataSource;
  const table = `kit_orders_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;

  beforeAll(async () => {
    dataSource = await new DataSource({ type: 'postgres', url: databaseUrl() }).initialize();
    await dataSource.query(`CREATE TABLE ${table} (id int PRIMARY KEY)`);
    t = await startTestingApp(
      { async: { useFactory: () => ({ dataSource, mode: 'inline' as const, unregisteredJobs: 'ignore' as const }) } },
      { imports: [KitJobsModule], providers: [OrderCheck, OrderCheckSeen, DrainsInside] },
    );
  });
  afterAll(async () => {
    await t?.app.close();
    await dataSource?.query(`DROP TABLE IF EXISTS ${table}`);
    await dataSource?.destroy();
  });
  beforeEach(() => {
    t.log.calls.length = 0;
  });

  it('runs the handler, and what it makes due, before enqueue() returns; never inside another handler', async () => {
    const { id } = await t.jobs.enqueue(Greet, { tag: 'a', then: 'b', spawn: 'c' });
    expect(t.log.calls).toEqual([
      'greet:a#1',
      'greet-end:a#1',
      'greet:b#1',
      'greet-end:b#1',
      'greet:c#1',
      'greet-end:c#1',
    ]);
    expect(await t.jobs.get(id)).toMatchObject({ state: 'succeeded', result: { greeted: 'a' } });
  });

  it("in the caller's transaction: once it commits and before transaction() returns; never on rollback", async () => {
    const { jobs, log, app } = t;
    const seen = app.get(OrderCheckSeen);
    let callsInside: string[] = ['not reached'];
    await dataSource.transaction(async (manager) => {
      await manager.query(`INSERT INTO ${table} (id) VALUES (1)`);
      await jobs.enqueue(OrderCheck, { orderId: 1, table }, { manager });
      await manager.transaction((inner) => jobs.enqueue(OrderCheck, { orderId: 2, table }, { manager: inner }));
      await manager.query(`INSERT INTO ${table} (id) VALUES (2)`);
      callsInside = [...log.calls];
    });
    expect(callsInside).toEqual([]);
    expect(log.calls).toEqual(['order:1#1', 'order:2#1']);
    // Each run read the row on another connection: the transaction had committed.
    expect([...seen.visible]).toEqual([
      [1, true],
      [2, true],
    ]);

    let enqueued = '';
    await expect(
      dataSource.transaction(async (manager) => {
        enqueued = (await jobs.enqueue(OrderCheck, { orderId: 3, table }, { manager })).id;
        throw new Error('the order was refused');
      }),
    ).rejects.toThrow('the order was refused');
    expect(log.calls).toEqual(['order:1#1', 'order:2#1']);
    expect(await jobs.get(enqueued)).toBeNull();
  });

  it('runs enqueueMany, batches, flows and retries at the call, and a failure stays an outcome, not a throw', async () => {
    const { app, jobs, tester, log } = t;
    await jobs.enqueueMany([
      { job: Greet, payload: { tag: 'many 1' } },
      { job: Greet, payload: { tag: 'many 2' } },
    ]);
    await app.get(BatchBuilder).create().add(Greet, { tag: 'member' }).then(Greet, { tag: 'callback' }).dispatch();
    await jobs
      .flow()
      .add('first', Greet, { tag: 'first' })
      .add('second', Greet, { tag: 'second' }, { after: ['first'] })
      .dispatch();
    expect(log.calls.filter((c) => c.startsWith('greet:'))).toEqual([
      'greet:many 1#1',
      'greet:many 2#1',
      'greet:member#1',
      'greet:callback#1',
      'greet:first#1',
      'greet:second#1',
    ]);

    const { id } = await jobs.enqueue(Flaky, { tag: 'doomed', permanent: true });
    expect((await jobs.get(id))!.state).toBe('failed');
    expect(log.failures.get(id)).toBe('PermanentJobError: doomed: the record is gone');
    await jobs.retry(id);
    expect(log.calls.filter((c) => c.startsWith('flaky:'))).toEqual(['flaky:doomed#1', 'flaky:doomed#2']);

    const later = await jobs.enqueue(Flaky, { tag: 'later', okFrom: 2 });
    expect((await jobs.get(later.id))!.state).toBe('queued');
    // Whatever else fell due in that minute ran too (kit-tick, when it crossed a fifth minute).
    const ran = await tester.advance(60_000);
    expect(ran.filter((r) => r.name === 'kit-flaky')).toEqual([
      expect.objectContaining({ id: later.id, attempt: 2, outcome: 'succeeded' }),
    ]);
  });

  it("runs a job enqueued through a manager outside any transaction at once, and leaves the app's DataSource as it was", async () => {
    const own = await new DataSource({ type: 'postgres', url: databaseUrl() }).initialize();
    try {
      const { app, jobs, log } = await startTestingApp({
        async: {
          useFactory: () => ({ dataSource: own, mode: 'inline' as const, unregisteredJobs: 'ignore' as const }),
        },
      });
      await jobs.enqueue(Greet, { tag: 'no transaction' }, { manager: own.manager });
      expect(log.calls).toEqual(['greet:no transaction#1', 'greet-end:no transaction#1']);
      await own.transaction((manager) => jobs.enqueue(Greet, { tag: 'in one' }, { manager }));
      expect(own.subscribers).toHaveLength(1);
      await app.close();
      expect(own.subscribers).toEqual([]);
    } finally {
      await own.destroy();
    }
  });

  it('refuses drain() inside a job it runs: that would wait for itself', async () => {
    const { app, jobs } = t;
    await jobs.enqueue(DrainsInside, {});
    expect(app.get(DrainsInside).said).toMatch(
      /drain\(\) was called from inside a job that a drain is running[\s\S]*Potential fix:/,
    );
  });
});

describe("mode 'worker'", () => {
  let t: TestingApp;
  beforeAll(async () => {
    t = await startTestingApp({ mode: 'worker', worker: { pollInterval: 100 } });
  });
  afterAll(async () => {
    await t?.app.close();
  });

  it('waitFor() waits for the real worker: a job, and a batch with its callbacks', async () => {
    const { app, jobs, tester, log } = t;
    const { id } = await jobs.enqueue(Greet, { tag: 'w' });
    expect(await tester.waitForJob(id)).toMatchObject({ id, state: 'succeeded', result: { greeted: 'w' } });
    expect((await jobs.get(id))!.workerId).not.toMatch(/^jobs-tester:/);
    const batch = await app
      .get(BatchBuilder)
      .create()
      .add(Greet, { tag: 'wm' })
      .finally(Greet, { tag: 'wf' })
      .dispatch();
    expect(await tester.waitFor(batch.id)).toMatchObject({ id: batch.id, state: 'succeeded' });
    expect(log.calls).toContain('greet-end:wf#1');
  });

  it('fails with where the job is and what would move it, when it cannot end in time', async () => {
    const { jobs, tester } = t;
    const { id } = await jobs.enqueue(Greet, { tag: 'tomorrow' }, { delay: 86_400_000 });
    const error = await tester.waitFor(id, { timeout: 100 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobsAssertionError);
    expect((error as Error).message).toMatch(
      /after 100 ms, job "kit-greet" is queued for \S+, later than the app's clock \(\S+\); attempt 0 of 3\. Potential fix: advance\(\) the ManualClock/,
    );
    await tester.advance(86_400_000);
    expect(await tester.waitForJob(id)).toMatchObject({ state: 'succeeded' });
  });

  it("refuses what only the tester's own runs can do", () => {
    expect(() => t.tester.drain()).toThrow(/mode 'worker'.*use waitFor\(id\)/);
    expect(() => t.tester.failNext(Greet, 'x')).toThrow(JobsError);
    expect(() => t.tester.dieAfterWork(Greet)).toThrow(/faults apply to attempts that drain\(\) runs/);
  });
});

describe('advance() with schedules', () => {
  it('turns ticks of @Cron and dynamic schedules into jobs once the clock reaches them', async () => {
    const clock = new ManualClock(new Date('2026-03-01T10:00:00Z'));
    const { app, tester } = await startTestingApp({ clock });
    try {
      await tester.advance(4 * 60_000);
      await tester.expectNotEnqueued({ name: Tick });
      await tester.advance(60_000);
      await tester.expectEnqueued({ name: Tick, count: 1 });
      expect((await tester.drain()).map((r) => [r.name, r.outcome])).toEqual([['kit-tick', 'succeeded']]);

      await app.get(RecurringSchedules).upsert('hourly-greeting', Greet, '0 * * * *', { payload: { tag: 'hourly' } });
      await tester.advance(55 * 60_000);
      await tester.expectEnqueued({ name: Greet, payload: { tag: 'hourly' }, count: 1 });
      // The five-minute ticks missed meanwhile come as one job (catchUp: 'latest').
      await tester.expectEnqueued({ name: Tick, count: 1 });
    } finally {
      await app.close();
    }
  });

  it('refuses to move the system clock', async () => {
    const { app, tester } = await startTestingApp({ clock: 'system' });
    try {
      await expect(tester.advance(1_000)).rejects.toThrow(/runs on the system clock, which a test cannot move/);
    } finally {
      await app.close();
    }
  });
});

describe('enqueued() and the expectations', () => {
  let t: TestingApp;
  beforeAll(async () => {
    t = await startTestingApp();
  });
  afterAll(async () => {
    await t?.app.close();
  });

  it('match a part of the payload, asymmetric matchers included, and count', async () => {
    const { jobs, tester } = t;
    await jobs.enqueue(Greet, { tag: 'x', then: 'y' });
    await jobs.enqueue(Greet, { tag: 'x' });
    await jobs.enqueue(Flaky, { tag: 'x', okFrom: 3 });
    expect((await tester.enqueued({ name: Greet })).map((j) => j.payload)).toEqual([
      { tag: 'x', then: 'y' },
      { tag: 'x' },
    ]);
    await tester.expectEnqueued({ name: Greet, payload: { tag: 'x' }, count: 2 });
    await tester.expectEnqueued({ name: 'kit-flaky', payload: { okFrom: expect.any(Number) }, queue: 'default' });
    const [only] = await tester.expectEnqueued({ name: Greet, payload: { then: expect.stringMatching(/^y/) } });
    expect(only!.payload).toEqual({ tag: 'x', then: 'y' });
    await tester.expectNotEnqueued({ name: Greet, payload: { tag: 'z' } });
    await tester.drain({ names: [Greet] });
    expect(await tester.enqueued({ name: Greet })).toEqual([]);
    expect(await tester.enqueued({ name: Greet, state: 'succeeded' })).toHaveLength(3);
  });

  it('fail with a listing of what there is instead', async () => {
    const { jobs, tester } = t;
    await jobs.enqueue(Flaky, { tag: 'listed', okFrom: 1 });
    const wrongPayload = await tester
      .expectEnqueued({ name: Flaky, payload: { tag: 'other' } })
      .catch((e: unknown) => e as Error);
    expect(wrongPayload).toBeInstanceOf(JobsAssertionError);
    expect((wrongPayload as Error).message).toMatch(
      /^expectEnqueued\(\): expected a "kit-flaky" job \(queued or waiting\) with a payload holding \{"tag":"other"\}; found 0\.\n"kit-flaky" jobs \(queued or waiting\) \(2\):\n {2}- kit-flaky \S+: queued for \S+, queue "default", attempt 0\/3, payload \{"tag":"x","okFrom":3\}\n {2}- kit-flaky \S+: queued .*payload \{"tag":"listed","okFrom":1\}\nPotential fix:/,
    );
    await expect(tester.expectEnqueued({ name: Greet, payload: { tag: expect.any(String) } })).rejects.toThrow(
      /found 0\.\nNone of that name; jobs \(queued or waiting\): "kit-flaky" ×2\./,
    );
    await expect(tester.expectEnqueued({ name: Flaky, count: 1 })).rejects.toThrow(/expected exactly 1 "kit-flaky"/);
    await expect(tester.expectNotEnqueued({ name: Flaky, payload: { tag: 'listed' } })).rejects.toThrow(
      /^expectNotEnqueued\(\): expected no "kit-flaky" job \(queued or waiting\) with a payload holding \{"tag":"listed"\}; found 1:\n {2}- kit-flaky/,
    );
    await expect(tester.expectEnqueued({ payload: {} } as never)).rejects.toThrow(/"name" is required/);
  });
});

describe("JobsTestingModule's options", () => {
  const db = { connection: databaseUrl() };
  it('are checked at the call, each refusal naming the fix', () => {
    expect(() => JobsTestingModule.forRoot({ connection: process.env.NO_SUCH_VARIABLE })).toThrow(
      /no database: "connection" and "dataSource" are both missing \("connection" is undefined: is DATABASE_URL set\?\)\. Potential fix: connection: process\.env\.DATABASE_URL/,
    );
    expect(() => JobsTestingModule.forRoot()).toThrow(/no database/);
    expect(() => JobsTestingModule.forRoot({ schema: 'jobs' } as never)).toThrow(
      /"schema" is not an option here\. Every test app gets a schema of its own[\s\S]*Potential fix: leave "schema" out/,
    );
    expect(() => JobsTestingModule.forRoot({ ...db, mode: 'sync' as never })).toThrow(/"mode" must be one of 'manual'/);
    expect(() => JobsTestingModule.forRoot({ ...db, worker: { enabled: true } })).toThrow(
      /worker\.enabled is true in mode 'manual'[\s\S]*Potential fix: mode: 'worker'/,
    );
    expect(() => JobsTestingModule.forRoot({ ...db, schemaPrefix: 'pg_tests' })).toThrow(/"schemaPrefix" must be/);
    expect(() => JobsTestingModule.forRoot({ ...db, clock: Date.now() as never })).toThrow(/"clock" must be a Clock/);
    expect(() => JobsTestingModule.forRootAsync({} as never)).toThrow(/needs useFactory/);
  });
});
