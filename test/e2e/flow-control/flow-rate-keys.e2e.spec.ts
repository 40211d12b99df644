import type { INestApplication } from '@nestjs/common';
import {
  Job,
  JobQueue,
  JobQueues,
  JobsError,
  JobsNotFoundError,
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
 * Keyed rate limits (JobsModule's `rateLimits`), one window shared by job
 * types of different queues, and rate limits that hold where the user sees
 * them: at the handlers' starts, as the handlers themselves clock them.
 */

/** Every handler start of this file, as the handler saw it: all instances run in this process. */
const starts: Array<{ id: string; name: string; attempt: number; at: number }> = [];

function record(ctx: JobContext): void {
  starts.push({ id: ctx.jobId, name: ctx.name, attempt: ctx.attempt, at: Date.now() });
}

@Job('rk-partner-a', { queue: 'rk-a', maxAttempts: 1, rateLimit: 'partner-api' })
class PartnerA implements JobHandler<object> {
  run(_p: object, ctx: JobContext): void {
    record(ctx);
  }
}

@Job('rk-partner-b', { queue: 'rk-b', maxAttempts: 1, rateLimit: 'partner-api' })
class PartnerB implements JobHandler<object> {
  run(_p: object, ctx: JobContext): void {
    record(ctx);
  }
}

@Job('rk-rated', { queue: 'rk-rated', maxAttempts: 1 })
class Rated implements JobHandler<object> {
  run(_p: object, ctx: JobContext): void {
    record(ctx);
  }
}

const PROVIDERS = [PartnerA, PartnerB, Rated];
const PARTNER_API = { 'partner-api': { max: 10, per: 1_000 } };

const schemas: string[] = [];
const apps: INestApplication[] = [];

async function boot(schema: string, options: Partial<JobsModuleOptions>): Promise<INestApplication> {
  const app = await startJobsApp(
    schema,
    { worker: { concurrency: 10, pollInterval: 100 }, rateLimits: PARTNER_API, ...options },
    {
      providers: PROVIDERS,
    },
  );
  apps.push(app);
  return app;
}

async function fleet(options: Partial<JobsModuleOptions>): Promise<INestApplication[]> {
  const schema = uniqueSchema('fcratekey');
  schemas.push(schema);
  const started: INestApplication[] = [];
  for (let i = 0; i < 3; i++) started.push(await boot(schema, options));
  return started;
}

/** The most handler starts within any one second, the window slid over every start. */
function busiestSecond(names: readonly string[]): number {
  const at = starts
    .filter((s) => names.includes(s.name))
    .map((s) => s.at)
    .sort((a, b) => a - b);
  let busiest = 0;
  for (let i = 0, j = 0; i < at.length; i++) {
    while (at[j]! <= at[i]! - 1_000) j++;
    busiest = Math.max(busiest, i - j + 1);
  }
  return busiest;
}

async function succeeded(schema: string): Promise<number> {
  return (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".job WHERE state = 'succeeded'`))[0]!.n;
}

beforeEach(() => {
  starts.length = 0;
});

afterEach(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
});

afterAll(async () => {
  await dropSchemas(...schemas);
});

describe('a rate limit, at the handlers’ starts', () => {
  it('a queue limit of 10/s on three instances: no second holds more than 10 of 60 handler starts', async () => {
    const instances = await fleet({ queues: { 'rk-rated': { rateLimit: { max: 10, per: 1_000 } } } });
    await instances[0]!.get(JobQueue).enqueueMany(Array.from({ length: 60 }, () => ({ job: Rated, payload: {} })));
    await waitFor('the 60 jobs to run', async () => (await succeeded(schemas.at(-1)!)) === 60, 60_000);
    expect(new Set(starts.map((s) => s.id)).size).toBe(60);
    expect(busiestSecond(['rk-rated'])).toBeLessThanOrEqual(10);
  });

  it('a keyed limit is one window for job types of two queues: no second holds more than 10 of their 60 starts', async () => {
    const instances = await fleet({ rateLimits: PARTNER_API });
    const queue = instances[0]!.get(JobQueue);
    await queue.enqueueMany([
      ...Array.from({ length: 30 }, () => ({ job: PartnerA, payload: {} })),
      ...Array.from({ length: 30 }, () => ({ job: PartnerB, payload: {} })),
    ]);
    await waitFor('the 60 jobs to run', async () => (await succeeded(schemas.at(-1)!)) === 60, 60_000);
    // Each ran once, on its first attempt: a job handed back for a late start gives its attempt back.
    expect(starts).toHaveLength(60);
    expect(starts.every((s) => s.attempt === 1)).toBe(true);
    expect(busiestSecond(['rk-partner-a', 'rk-partner-b'])).toBeLessThanOrEqual(10);
    expect(await sql(`SELECT job_id FROM "${schemas.at(-1)!}".job_execution`)).toEqual([]);
  });
});

describe('a claimed rate-limited job that cannot start within the lag its window counted', () => {
  it('is handed back unspent, and runs later on its first attempt', async () => {
    const schema = uniqueSchema('fcratelate');
    schemas.push(schema);
    const handedBack: string[][] = [];
    let delayed = 0;
    // Wrapped before the worker starts, so that no claim escapes the wrapper.
    const app = await startJobsApp(
      schema,
      { worker: { concurrency: 10, pollInterval: 100 }, rateLimits: PARTNER_API },
      { providers: PROVIDERS },
      (ref) => {
        const storage = workerStorage(ref);
        // The first claim that gets a job answers after the lag: its job may no longer start.
        const claimControlled = storage.claims.claimControlled.bind(storage.claims);
        storage.claims.claimControlled = async (request) => {
          const result = await claimControlled(request);
          if (result.jobs.length && delayed++ === 0) await sleep(RATE_START_LAG_MS + 30);
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
    const job = await app.get(JobQueue).enqueue(PartnerA, {});
    await waitFor('the job to run', async () => (await succeeded(schema)) === 1);
    // Shutdown hands back what is left unstarted: nothing, after the late start's own hand-back.
    expect(handedBack[0]).toEqual([job.id]);
    expect(handedBack.slice(1).flat()).toEqual([]);
    expect(starts).toEqual([{ id: job.id, name: 'rk-partner-a', attempt: 1, at: expect.any(Number) }]);
    expect(await sql(`SELECT job_id FROM "${schema}".job_execution`)).toEqual([]);
  });
});

describe("a keyed limit's window across queues", () => {
  it('counts a claim of one queue stamped earlier but served later at the time of the turn before it, in another queue', async () => {
    const schema = uniqueSchema('fcratekeyturn');
    schemas.push(schema);
    const app = await boot(schema, {
      worker: { enabled: false },
      rateLimits: { 'partner-api': { max: 5, per: 1_000 } },
    });
    await app
      .get(JobQueue)
      .enqueueMany([
        ...Array.from({ length: 10 }, () => ({ job: PartnerA, payload: {} })),
        ...Array.from({ length: 10 }, () => ({ job: PartnerB, payload: {} })),
      ]);
    const { claims } = workerStorage(app);
    const t0 = Date.now();
    const claim = async (queue: string, name: string, offsetMs: number, limit: number) =>
      (
        await claims.claimControlled({
          workerId: 'w',
          queue,
          names: [name],
          limit,
          now: new Date(t0 + offsetMs),
          leaseMs: 60_000,
        })
      ).jobs.length;
    const L = RATE_START_LAG_MS;
    // Five of queue rk-a at t0 + 8 fill the key's window until t0 + L + 1008.
    expect(await claim('rk-a', 'rk-partner-a', 8, 5)).toBe(5);
    // A claim of queue rk-b stamped t0 + L + 1010: the five have left the window; it starts one.
    expect(await claim('rk-b', 'rk-partner-b', L + 1_010, 1)).toBe(1);
    // Then one of rk-a stamped t0 + L + 1007, after it in turn: counted at t0 + L + 1010, four start.
    expect(await claim('rk-a', 'rk-partner-a', L + 1_007, 5)).toBe(4);
    const started = await sql<{ t: Date; n: number }>(
      `SELECT started_at AS t, count(*)::int AS n FROM "${schema}".job WHERE started_at IS NOT NULL GROUP BY 1 ORDER BY 1`,
    );
    expect(started.map((r) => [r.t.getTime() - t0, r.n])).toEqual([
      [8, 5],
      [L + 1_010, 5],
    ]);
  });
});

describe('keyed rate limits declared in code and changed at run time', () => {
  it('are listed with their source and jobs, changed on every claim, and kept across restarts of the same code', async () => {
    const schema = uniqueSchema('fcratekeyrt');
    schemas.push(schema);
    const options = { worker: { enabled: false }, rateLimits: PARTNER_API };
    const first = await boot(schema, options);
    const keyed = () => first.get(JobQueues).rateLimits();
    expect(await keyed()).toEqual([
      {
        key: 'partner-api',
        rateLimit: { value: { max: 10, per: 1_000 }, source: 'code' },
        service: 'nestjs-durable-jobs',
        jobs: [
          { queue: 'rk-a', name: 'rk-partner-a' },
          { queue: 'rk-b', name: 'rk-partner-b' },
        ],
      },
    ]);
    await first.get(JobQueues).setRateLimit('partner-api', { max: 3, per: 60_000 });
    expect((await keyed())[0]!.rateLimit).toEqual({ value: { max: 3, per: 60_000 }, source: 'runtime' });

    // The claim counts the run-time value, one window for both queues.
    await first
      .get(JobQueue)
      .enqueueMany([
        ...Array.from({ length: 5 }, () => ({ job: PartnerA, payload: {} })),
        ...Array.from({ length: 5 }, () => ({ job: PartnerB, payload: {} })),
      ]);
    const { claims } = workerStorage(first);
    const claim = (queue: string, name: string) =>
      claims.claimControlled({ workerId: 'w', queue, names: [name], limit: 10, now: new Date(), leaseMs: 60_000 });
    const a = await claim('rk-a', 'rk-partner-a');
    const b = await claim('rk-b', 'rk-partner-b');
    expect([a.jobs.length, b.jobs.length]).toEqual([3, 0]);
    // A full window says when the next start is allowed, about a minute on.
    expect(b.waitMs).toBeGreaterThan(50_000);

    // The same code again keeps the run-time value; other code takes the code's.
    const second = await boot(schema, options);
    expect((await second.get(JobQueues).rateLimits())[0]!.rateLimit.source).toBe('runtime');
    const third = await boot(schema, { ...options, rateLimits: { 'partner-api': { max: 20, per: 1_000 } } });
    expect((await third.get(JobQueues).rateLimits())[0]!.rateLimit).toEqual({
      value: { max: 20, per: 1_000 },
      source: 'code',
    });
    await expect(third.get(JobQueues).setRateLimit('partner-apx', { max: 1, per: 1_000 })).rejects.toThrow(
      JobsNotFoundError,
    );
    await expect(third.get(JobQueues).setRateLimit('partner-api', { max: 0, per: 1_000 })).rejects.toThrow(
      /"rateLimit.max" must be an integer >= 1, got 0/,
    );
  });
});

describe('bad keyed rate limits', () => {
  it('are refused at boot with a JobsError naming the job or the key and the fix', async () => {
    const schema = uniqueSchema('fcratekeybad');
    schemas.push(schema);
    // Not declared: the job's key names no limit.
    const undeclared = boot(schema, { worker: { enabled: false }, rateLimits: { 'partner-apx': { max: 1, per: 1 } } });
    await expect(undeclared).rejects.toThrow(JobsError);
    await expect(undeclared).rejects.toThrow(
      /@Job\('rk-partner-a'\): "rateLimit" refers to the key 'partner-api', which JobsModule's "rateLimits" does not declare \(declared: partner-apx\)\. Potential fix: declare it/,
    );
    await expect(boot(schema, { rateLimits: { 'partner-api': { max: 0, per: 1_000 } } })).rejects.toThrow(
      /JobsModule "rateLimits.partner-api": "max" must be an integer >= 1, got 0/,
    );
    await expect(boot(schema, { rateLimits: { 'partner-api': 10 as never } })).rejects.toThrow(
      /JobsModule "rateLimits.partner-api": must be \{ max, per \}.*Potential fix: rateLimits: \{ 'partner-api'/,
    );
    await expect(boot(schema, { rateLimits: { 'partner-api': { max: 1, pr: 1 } as never } })).rejects.toThrow(
      /unknown option "rateLimits.partner-api.pr"\. Did you mean "rateLimits.partner-api.per"\?/,
    );
    expect(() => {
      @Job('rk-bad-key', { rateLimit: '' })
      class BadKey {}
      return BadKey;
    }).toThrow(/@Job\('rk-bad-key'\) on class BadKey: "rateLimit" must be a non-empty string/);
  });
});
