import type { INestApplication } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import {
  BatchBuilder,
  Cron,
  Job,
  JobQueue,
  JobQueues,
  JobsError,
  RecurringSchedules,
  RetentionService,
  type JobContext,
  type JobHandler,
  type JobsModuleOptions,
} from 'nestjs-durable-jobs';
import { RATE_START_LAG_MS } from '../../../lib/model/index.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { workerStorage } from '../../support/job-storage.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { sleep, waitFor } from '../../support/wait.js';

/**
 * A rate limit per group (a queue's `groups.rateLimit`), such as 10/s per
 * shop with `group: (p) => p.shopId` on @Job: each group's handler starts
 * stay within the limit in any window, across instances, while the groups
 * proceed independently of each other; it combines with the groups'
 * concurrency; a job of no group cannot enter such a queue; and a bad
 * declaration fails the boot.
 */

type Shop = { shopId: string; ms?: number };

/** Every handler run of this file, as the handler clocked it: all instances run in this process. */
const runs: Array<{ id: string; shop: string; attempt: number; start: number; end?: number }> = [];

@Job('gr-sync-shop', { queue: 'shops', maxAttempts: 1, group: (p: Shop) => p.shopId })
class SyncShop implements JobHandler<Shop> {
  async run(p: Shop, ctx: JobContext): Promise<void> {
    const run: (typeof runs)[number] = { id: ctx.jobId, shop: p.shopId, attempt: ctx.attempt, start: Date.now() };
    runs.push(run);
    if (p.ms) await sleep(p.ms);
    run.end = Date.now();
  }
}

/** In the same queue with no group of its own: a call must give one. */
@Job('gr-plain', { queue: 'shops', maxAttempts: 1 })
class Plain implements JobHandler<object> {
  run(): void {}
}

/** A schedule's ticks have no call to give a group: refused at start in a queue whose groups are rated. */
@Cron('0 3 * * *', { name: 'gr-nightly' })
@Job('gr-nightly', { queue: 'shops' })
class Nightly implements JobHandler<object> {
  run(): void {}
}

const PROVIDERS = [SyncShop, Plain];
const L = RATE_START_LAG_MS;
const schemas: string[] = [];
const apps: INestApplication[] = [];

async function boot(
  schema: string,
  options: Partial<JobsModuleOptions>,
  providers = PROVIDERS,
  beforeInit?: (ref: TestingModule) => void,
) {
  const app = await startJobsApp(
    schema,
    { worker: { concurrency: 10, pollInterval: 100 }, ...options },
    { providers },
    beforeInit,
  );
  apps.push(app);
  return app;
}

function newSchema(prefix: string): string {
  const schema = uniqueSchema(prefix);
  schemas.push(schema);
  return schema;
}

/** The most handler starts of `shop` within any `per` ms, the window slid over every start. */
function busiestWindow(shop: string | null, per: number): number {
  const at = runs
    .filter((r) => shop === null || r.shop === shop)
    .map((r) => r.start)
    .sort((a, b) => a - b);
  let busiest = 0;
  for (let i = 0, j = 0; i < at.length; i++) {
    while (at[j]! <= at[i]! - per) j++;
    busiest = Math.max(busiest, i - j + 1);
  }
  return busiest;
}

/** The most handler runs of `shop` that overlapped in time. */
function maxOverlap(shop: string): number {
  const edges = runs
    .filter((r) => r.shop === shop)
    .flatMap((r) => [
      [r.start, 1],
      [r.end!, -1],
    ])
    .sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let now = 0;
  let most = 0;
  for (const [, d] of edges) most = Math.max(most, (now += d!));
  return most;
}

async function count(schema: string, where = 'true'): Promise<number> {
  return (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".job WHERE ${where}`))[0]!.n;
}

const shopJobs = (shop: string, n: number, ms?: number) =>
  Array.from({ length: n }, () => ({
    job: SyncShop,
    payload: ms === undefined ? { shopId: shop } : { shopId: shop, ms },
  }));

beforeEach(() => {
  runs.length = 0;
});

afterEach(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
});

afterAll(async () => {
  await dropSchemas(...schemas);
});

describe('a rate limit per group, at the handlers’ starts', () => {
  it('3 per second per shop on three instances: no shop starts more than 3 in any second, and a shop at its limit holds back no other', async () => {
    const schema = newSchema('grrate');
    const options = { queues: { shops: { groups: { rateLimit: { max: 3, per: 1_000 } } } } };
    // The shop of each job as its claim answers, on any instance, in the order they answer.
    const claimed: string[] = [];
    const watch = (ref: TestingModule) => {
      const { claims } = workerStorage(ref);
      const claim = claims.claimControlled.bind(claims);
      claims.claimControlled = async (request) => {
        const result = await claim(request);
        for (const job of result.jobs) claimed.push((job.payload as Shop).shopId);
        return result;
      };
    };
    const instances = [];
    for (let i = 0; i < 3; i++) instances.push(await boot(schema, options, PROVIDERS, watch));
    const jobs = instances[0]!.get(JobQueue);
    await jobs.enqueueMany([...shopJobs('s1', 9), ...shopJobs('s2', 9), ...shopJobs('s3', 9)]);
    // Once s1 has used its window, a shop arrives.
    await waitFor('s1 to use its window', () => claimed.filter((shop) => shop === 's1').length >= 3, 30_000, 5);
    await jobs.enqueueMany(shopJobs('late', 3));
    await waitFor('the 30 jobs to run', async () => (await count(schema, "state = 'succeeded'")) === 30, 60_000);

    // Each ran once, on its first attempt: a job handed back for a late start gives its attempt back.
    expect(new Set(runs.map((r) => r.id)).size).toBe(30);
    expect(runs.every((r) => r.attempt === 1)).toBe(true);
    for (const shop of ['s1', 's2', 's3', 'late']) {
      expect({ shop, busiest: busiestWindow(shop, 1_000) <= 3 }).toEqual({ shop, busiest: true });
    }
    // The groups proceed independently: the late shop's jobs were claimed while s1 waited for its window
    // (before s1's fourth claim; a job handed back for a late start waits for its own shop's window, so
    // the claims tell this, not the starts), and the queue as a whole started more than 3 in a second.
    const s1Claims = claimed.flatMap((shop, i) => (shop === 's1' ? [i] : []));
    expect(claimed.indexOf('late')).toBeGreaterThan(s1Claims[2]!);
    expect(claimed.indexOf('late')).toBeLessThan(s1Claims[3]!);
    expect(busiestWindow(null, 1_000)).toBeGreaterThan(3);
  });

  it("combines with the groups' concurrency: one running per shop, and at most 3 starts per shop in any second", async () => {
    const schema = newSchema('grcombo');
    const options = { queues: { shops: { groups: { concurrency: 1, rateLimit: { max: 3, per: 1_000 } } } } };
    const instances = [await boot(schema, options), await boot(schema, options)];
    // 200 ms each: one at a time, a shop would start 5 a second; all at once, 3 would overlap.
    await instances[0]!.get(JobQueue).enqueueMany([...shopJobs('c1', 6, 200), ...shopJobs('c2', 6, 200)]);
    await waitFor('the 12 jobs to run', async () => (await count(schema, "state = 'succeeded'")) === 12, 60_000);
    expect(runs).toHaveLength(12);
    for (const shop of ['c1', 'c2']) {
      expect({ shop, overlap: maxOverlap(shop), busiest: busiestWindow(shop, 1_000) <= 3 }).toEqual({
        shop,
        overlap: 1,
        busiest: true,
      });
    }
  });
});

describe('the claim of a queue whose groups have a rate limit', () => {
  /** A claim straight from the storage, stamped `offsetMs` past t0: the shops of the jobs it got, and its wait. */
  function claimer(app: INestApplication, schema: string, t0: number) {
    const { claims } = workerStorage(app);
    return async (offsetMs: number, limit: number) => {
      const now = new Date(t0 + offsetMs);
      const request = { workerId: 'w', queue: 'shops', names: ['gr-sync-shop'], limit, now, leaseMs: 60_000 };
      const { jobs, waitMs } = await claims.claimControlled(request);
      const rows = await sql<{ g: string }>(
        `SELECT group_key AS g FROM "${schema}".job WHERE id = ANY($1::uuid[]) ORDER BY group_key`,
        [jobs.map((j) => j.id)],
      );
      return { shops: rows.map((r) => r.g), waitMs };
    };
  }

  it('takes no more of a group than its window has room for, and says when the next start is allowed', async () => {
    const schema = newSchema('grclaim');
    const app = await boot(schema, {
      worker: { enabled: false },
      queues: { shops: { groups: { rateLimit: { max: 2, per: 1_000 } } } },
    });
    await app.get(JobQueue).enqueueMany([...shopJobs('a', 5), ...shopJobs('b', 5)]);
    const t0 = Date.now();
    const claim = claimer(app, schema, t0);
    // Room for 10: two of each shop fill both windows, and with work left the claim says so: in per + L.
    const first = await claim(0, 10);
    expect(first.shops).toEqual(['a', 'a', 'b', 'b']);
    expect(first.waitMs).toBeCloseTo(1_000 + L, -1);
    // Half a second on, both windows are full: nothing, and the wait is what is left of them.
    const full = await claim(500, 10);
    expect(full.shops).toEqual([]);
    expect(full.waitMs).toBeCloseTo(500 + L, -1);
    // A shop arriving meanwhile is not held back by them.
    await app.get(JobQueue).enqueueMany(shopJobs('c', 3));
    expect((await claim(900, 10)).shops).toEqual(['c', 'c']);
    // Once the starts of t0 have left the window (per + L), two more of a and b; c's window is still full.
    expect((await claim(L + 1_001, 10)).shops).toEqual(['a', 'a', 'b', 'b']);
    // Each group's log holds each claim's turn and count, the queue's own format.
    const logs = await sql<{ g: string; at: Date[]; n: number[] }>(
      `SELECT group_key AS g, rate_log_at AS at, rate_log_n AS n FROM "${schema}".job_group_rate ORDER BY group_key`,
    );
    expect(logs.map((l) => [l.g, l.at.map((t) => t.getTime() - t0), l.n])).toEqual([
      ['a', [L + 1_001], [2]],
      ['b', [L + 1_001], [2]],
      ['c', [900], [2]],
    ]);
  });

  it('counts a claim stamped earlier but served later at the time of the turn before it', async () => {
    const schema = newSchema('grturn');
    const app = await boot(schema, {
      worker: { enabled: false },
      queues: { shops: { groups: { rateLimit: { max: 2, per: 1_000 } } } },
    });
    await app.get(JobQueue).enqueueMany([...shopJobs('a', 5), ...shopJobs('b', 5)]);
    const t0 = Date.now();
    const claim = claimer(app, schema, t0);
    // Two of each at t0 + 8 fill both windows until t0 + L + 1008.
    expect((await claim(8, 10)).shops).toEqual(['a', 'a', 'b', 'b']);
    // A claim stamped t0 + L + 1010 takes its turn: a's two have left its window (and its log); one more of a.
    expect((await claim(L + 1_010, 1)).shops).toEqual(['a']);
    // Then one stamped t0 + L + 1007, after it in turn. At its own stamp b's window is still full, and a's
    // log holds one start: another of a would make three with the two of t0 + 8 that log no longer holds.
    // Counted at the turn before it, t0 + L + 1010, a has room for one and b for two, stamped then.
    expect((await claim(L + 1_007, 10)).shops).toEqual(['a', 'b', 'b']);
    const started = await sql<{ t: Date; g: string; n: number }>(
      `SELECT started_at AS t, group_key AS g, count(*)::int AS n FROM "${schema}".job
        WHERE started_at IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    expect(started.map((r) => [r.t.getTime() - t0, r.g, r.n])).toEqual([
      [8, 'a', 2],
      [8, 'b', 2],
      [L + 1_010, 'a', 2],
      [L + 1_010, 'b', 2],
    ]);
  });

  it('passes over groups whose window is full, so they do not use up the walk of the rotation', async () => {
    const schema = newSchema('grwalk');
    const app = await boot(schema, {
      worker: { enabled: false },
      queues: { shops: { groups: { rateLimit: { max: 1, per: 60_000 } } } },
    });
    const shops = Array.from({ length: 8 }, (_, i) => `g${i}`);
    await app.get(JobQueue).enqueueMany(shops.flatMap((s) => shopJobs(s, 2)));
    const t0 = Date.now();
    const claim = claimer(app, schema, t0);
    // A claim of 4 walks 4 groups: g0..g3 fill their windows.
    expect((await claim(0, 4)).shops).toEqual(['g0', 'g1', 'g2', 'g3']);
    // The rotation back at its start, as when it comes round again: g0..g3 come first, and are passed over.
    await sql(`UPDATE "${schema}".job_queue SET group_cursor = NULL WHERE name = 'shops'`);
    expect((await claim(10, 4)).shops).toEqual(['g4', 'g5', 'g6', 'g7']);
    // Every window full: nothing, and the wait is about a minute.
    const none = await claim(20, 4);
    expect(none.shops).toEqual([]);
    expect(none.waitMs).toBeCloseTo(60_000 + L - 20, -1);
  });

  it('retention deletes the logs whose starts all left their window, and those of a queue without the limit', async () => {
    const schema = newSchema('grprune');
    const app = await boot(schema, {
      worker: { enabled: false },
      queues: { shops: { groups: { rateLimit: { max: 1, per: 1_000 } } } },
    });
    const log = (queue: string, group: string, ago: string) =>
      sql(
        `INSERT INTO "${schema}".job_group_rate (queue, group_key, rate_log_at, rate_log_n, last_at)
         VALUES ($1, $2, ARRAY[now() - $3::interval], ARRAY[1], now() - $3::interval)`,
        [queue, group, ago],
      );
    await log('shops', 'stale', '5 minutes');
    await log('shops', 'recent', '2 seconds');
    await log('not-rated', 'any', '0 seconds');
    await app.get(RetentionService).prune();
    const left = await sql<{ g: string }>(`SELECT group_key AS g FROM "${schema}".job_group_rate`);
    expect(left.map((r) => r.g)).toEqual(['recent']);
  });
});

describe('a claimed job of a queue whose groups have a rate limit that cannot start within the lag its window counted', () => {
  it('is handed back unspent, and runs later on its first attempt', async () => {
    const schema = newSchema('grlate');
    const handedBack: string[][] = [];
    let delayed = 0;
    // Wrapped before the worker starts, so that no claim escapes the wrapper.
    const app = await startJobsApp(
      schema,
      {
        worker: { concurrency: 10, pollInterval: 100 },
        queues: { shops: { groups: { rateLimit: { max: 3, per: 1_000 } } } },
      },
      { providers: PROVIDERS },
      (ref) => {
        const storage = workerStorage(ref);
        // The first claim that gets a job answers after the lag: its job may no longer start.
        const claimControlled = storage.claims.claimControlled.bind(storage.claims);
        storage.claims.claimControlled = async (request) => {
          const result = await claimControlled(request);
          if (result.jobs.length && delayed++ === 0) await sleep(L + 30);
          return result;
        };
        const handBack = storage.outcomes.handBack.bind(storage.outcomes);
        storage.outcomes.handBack = (workerId, jobs, now, error) => {
          handedBack.push(jobs.map((j) => j.id));
          return handBack(workerId, jobs, now, error);
        };
      },
    );
    apps.push(app);
    const job = await app.get(JobQueue).enqueue(SyncShop, { shopId: 's1' });
    await waitFor('the job to run', async () => (await count(schema, "state = 'succeeded'")) === 1);
    expect(handedBack[0]).toEqual([job.id]);
    expect(runs.map((r) => [r.id, r.attempt])).toEqual([[job.id, 1]]);
    expect(await sql(`SELECT job_id FROM "${schema}".job_execution`)).toEqual([]);
  });
});

describe('a job of no group in a queue whose groups have a rate limit', () => {
  it('is refused with a JobsError naming the job, the queue, the field and the fix, and nothing is written', async () => {
    const schema = newSchema('grnogroup');
    const app = await boot(schema, {
      worker: { enabled: false },
      queues: { shops: { groups: { rateLimit: { max: 10, per: 1_000 } } } },
    });
    const jobs = app.get(JobQueue);
    const message =
      /enqueue\('gr-plain'\): job 'gr-plain' goes to queue 'shops', whose groups have a rate limit \(JobsModule "queues\.shops\.groups\.rateLimit"\), but it has no "group".*Potential fix: declare its group on the job type \(@Job\('gr-plain', \{ group: .*pass \{ group \} to this call, or put the job in another queue\./;
    const refused: Array<[string, () => Promise<unknown>]> = [
      ['enqueue', () => jobs.enqueue(Plain, {})],
      ['enqueueMany', () => jobs.enqueueMany([...shopJobs('s1', 2), { job: Plain, payload: {} }])],
      ['a chain', () => jobs.chain().then(SyncShop, { shopId: 's1' }).then(Plain, {}).dispatch()],
      ['a flow', () => jobs.flow().add('sync', SyncShop, { shopId: 's1' }).add('plain', Plain, {}).dispatch()],
      ['a batch', () => app.get(BatchBuilder).create().add(SyncShop, { shopId: 's1' }).add(Plain, {}).dispatch()],
      ['a named job', () => jobs.enqueue('gr-plain', {}, { delay: 1_000 })],
    ];
    for (const [what, call] of refused) {
      const error = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect({ what, error }).toEqual({ what, error: expect.any(JobsError) });
      expect((error as Error).message).toMatch(message);
    }
    // A dynamic schedule's ticks would have no group either.
    await expect(app.get(RecurringSchedules).upsert('gr-hourly', Plain, '0 * * * *')).rejects.toThrow(
      /RecurringSchedules\.upsert\('gr-hourly'\): job 'gr-plain' goes to queue 'shops'.*no "group"/,
    );
    expect(await count(schema)).toBe(0);
    expect(await sql(`SELECT name FROM "${schema}".recurring_schedule`)).toEqual([]);

    // With a group, from the call or its @Job, or in another queue, it is written.
    await jobs.enqueue(Plain, {}, { group: 'shop-1' });
    await jobs.enqueue(SyncShop, { shopId: 's1' });
    await jobs.enqueue(Plain, {}, { queue: 'elsewhere' });
    expect(await count(schema)).toBe(3);
  });

  it('on a @Cron schedule, fails the boot naming the job and the queue', async () => {
    const schema = newSchema('grcron');
    const booting = boot(
      schema,
      { worker: { enabled: false }, queues: { shops: { groups: { rateLimit: { max: 10, per: 1_000 } } } } },
      [...PROVIDERS, Nightly],
    );
    await expect(booting).rejects.toThrow(JobsError);
    await expect(booting).rejects.toThrow(
      /@Cron\('0 3 \* \* \*'\) on Nightly: job 'gr-nightly' goes to queue 'shops', whose groups have a rate limit.*no "group"/,
    );
  });
});

describe('a bad groups.rateLimit', () => {
  it('fails the boot with a JobsError naming it and the fix', async () => {
    const schema = newSchema('grbad');
    const cases: Array<[unknown, RegExp]> = [
      [
        { max: 0, per: 1_000 },
        /"groups\.rateLimit\.max" must be an integer >= 1, got 0\. Potential fix: groups\.rateLimit\.max: 10/,
      ],
      [
        { max: 10 },
        /"groups\.rateLimit\.per" must be an integer >= 1, got undefined\. Potential fix: groups\.rateLimit\.per: 1000/,
      ],
      [{ max: 10, per: 1.5 }, /"groups\.rateLimit\.per" must be an integer >= 1, got 1\.5/],
      [
        10,
        /"groups\.rateLimit" must be \{ max, per \}.*got 10\. Potential fix: groups: \{ rateLimit: \{ max: 10, per: 1_000 \} \}/,
      ],
      [
        { max: 10, pr: 1_000 },
        /unknown option "queues\.shops\.groups\.rateLimit\.pr"\. Did you mean "queues\.shops\.groups\.rateLimit\.per"\?/,
      ],
    ];
    for (const [rateLimit, message] of cases) {
      const error = await boot(schema, {
        worker: { enabled: false },
        queues: { shops: { groups: { rateLimit: rateLimit as never } } },
      }).then(
        () => null,
        (e: unknown) => e,
      );
      expect({ rateLimit, error }).toEqual({ rateLimit, error: expect.any(JobsError) });
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).toMatch(/JobsModule|queues\.shops/);
    }
    // A @Job of the queue that declares no group boots (a call may give one): Plain above, in every boot.
    await boot(schema, {
      worker: { enabled: false },
      queues: { shops: { groups: { rateLimit: { max: 1, per: 1 } } } },
    });
  });
});

describe('JobQueues.list()', () => {
  it("shows the groups' rate limit the code declares, and none once the code drops it", async () => {
    const schema = newSchema('grlist');
    const groups = { concurrency: 2, rateLimit: { max: 10, per: 1_000 } };
    const first = await boot(schema, { worker: { enabled: false }, queues: { shops: { groups } } });
    const shopsOf = async (app: INestApplication) =>
      (await app.get(JobQueues).list()).find((q) => q.name === 'shops')!.groups;
    expect(await shopsOf(first)).toEqual({ concurrency: 2, rateLimit: { max: 10, per: 1_000 }, overrides: [] });
    await first.close();
    const second = await boot(schema, { worker: { enabled: false }, queues: { shops: {} } });
    expect(await shopsOf(second)).toEqual({ concurrency: null, rateLimit: null, overrides: [] });
  });
});
