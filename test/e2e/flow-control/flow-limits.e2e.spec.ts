import type { INestApplication } from '@nestjs/common';
import { workerStorage } from '../../support/job-storage.js';
import { Job, JobQueue, JobQueues, JobsError, type JobHandler, type JobsModuleOptions } from 'nestjs-durable-jobs';
import type { ClaimedJob, FinishedAttempt } from '../../../lib/model/index.js';
import { type ClaimRequest } from '../../../lib/storage/jobs/claim/claim-storage.interface.js';
import { JobWorker } from '../../../lib/worker/job-worker.service.js';
import pg from 'pg';
import { notificationChannel } from '../../../lib/storage/sql/notification-topics.js';
import { runCli } from '../../support/cli-process.js';
import { databaseUrl, dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { flowApps, limitedQueueOf } from '../../support/flow-apps.js';
import { NamedWork, Work } from '../../support/flow.jobs.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { maxOverlap, sampler, succeededCount } from '../../support/samplers.js';
import { sleep, waitFor } from '../../support/wait.js';

/** Limits that hold across instances: concurrency, rate, pause, and where each value came from. */
const schemas: string[] = [];
const { apps, boot } = flowApps();

async function fleet(schema: string, n: number, options: Partial<JobsModuleOptions>): Promise<INestApplication[]> {
  const started: INestApplication[] = [];
  for (let i = 0; i < n; i++) started.push(await boot(schema, options));
  return started;
}

// Each test's instances close with it: a file's worth of them open at once (three instances of
// ~16 connections per test) would reach PostgreSQL's default max_connections of 100.
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
});

afterAll(async () => {
  await dropSchemas(...schemas);
});

describe('a queue concurrency limit', () => {
  it('holds across three instances of ten slots each, and every slot of it is used', async () => {
    const schema = uniqueSchema('fcconc');
    schemas.push(schema);
    const instances = await fleet(schema, 3, { queues: { limited: { concurrency: 4 } } });
    const counted = sampler(
      `SELECT count(*)::int AS n FROM "${schema}".job WHERE queue = 'limited' AND state = 'active' AND NOT reserved`,
    );
    const ahead = sampler(
      `SELECT count(*)::int AS n FROM "${schema}".job WHERE queue = 'limited' AND state = 'active' AND reserved`,
    );
    await instances[0]!
      .get(JobQueue)
      .enqueueMany(
        Array.from({ length: 400 }, () => ({ job: Work, payload: { ms: 20 }, options: { queue: 'limited' } })),
      );
    await waitFor('the 400 jobs to run', async () => (await succeededCount(schema)) === 400, 60_000);
    // Claimed (active) and not claimed ahead is what the limit counts: never more than 4, and 4
    // reached. Jobs were claimed ahead beside them: an instance holds no more of them than it had
    // counted jobs when it claimed them, so at most 4 each.
    expect(await counted.stop()).toBe(4);
    const aheadMax = await ahead.stop();
    expect(aheadMax).toBeGreaterThan(0);
    expect(aheadMax).toBeLessThanOrEqual(3 * 4);
    // The handlers' own runs, on the database clock: never more than 4 at once either.
    expect(await maxOverlap(schema, 'limited')).toBeLessThanOrEqual(4);
    expect(await maxOverlap(schema, 'limited')).toBeGreaterThanOrEqual(3);
  });

  it('is spread over the instances that serve it: with 20 ms jobs, neither of two runs much more than half', async () => {
    const schema = uniqueSchema('fcspread');
    schemas.push(schema);
    // Ten slots each, four in the limit: either instance alone could hold every slot.
    const instances = await fleet(schema, 2, { queues: { limited: { concurrency: 4 } } });
    await instances[0]!
      .get(JobQueue)
      .enqueueMany(
        Array.from({ length: 200 }, () => ({ job: Work, payload: { ms: 20 }, options: { queue: 'limited' } })),
      );
    await waitFor('the 200 jobs to run', async () => (await succeededCount(schema)) === 200, 60_000);
    const perWorker = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".job WHERE state = 'succeeded' GROUP BY worker_id ORDER BY 1 DESC`,
    );
    expect(perWorker).toHaveLength(2);
    expect(perWorker[0]!.n).toBeLessThanOrEqual(130);
    expect(await maxOverlap(schema, 'limited')).toBeLessThanOrEqual(4);
  });

  it('forgets the slot waits of an instance that stops, so the others need not keep to their shares for it', async () => {
    const schema = uniqueSchema('fcleave');
    schemas.push(schema);
    const instances = await fleet(schema, 2, { queues: { limited: { concurrency: 1 } } });
    await instances[0]!
      .get(JobQueue)
      .enqueueMany(
        Array.from({ length: 6 }, () => ({ job: Work, payload: { ms: 300 }, options: { queue: 'limited' } })),
      );
    const waiting = async () =>
      (await sql<{ w: string[] }>(`SELECT waiting_workers AS w FROM "${schema}".job_queue WHERE name = 'limited'`))[0]!
        .w;
    // Each asked for more than the one slot gives: both wait.
    await waitFor('both instances to wait for the slot', async () => (await waiting()).length === 2, 10_000);
    for (const app of apps.splice(0)) await app.close();
    expect(await waiting()).toEqual([]);
  });

  it("holds for one job name inside its queue (@Job's concurrency), while other jobs of the queue run beside it", async () => {
    const schema = uniqueSchema('fcname');
    schemas.push(schema);
    const instances = await fleet(schema, 2, {});
    const named = sampler(
      `SELECT count(*)::int AS n FROM "${schema}".job WHERE name = 'fc-named' AND state = 'active'`,
    );
    const queue = instances[0]!.get(JobQueue);
    await queue.enqueueMany([
      ...Array.from({ length: 40 }, () => ({ job: NamedWork, payload: { ms: 20 } })),
      ...Array.from({ length: 40 }, () => ({ job: Work, payload: { ms: 20 }, options: { queue: 'named' } })),
    ]);
    await waitFor('the jobs to run', async () => (await succeededCount(schema)) === 80, 60_000);
    expect(await named.stop()).toBe(2);
    // The unlimited name of the same queue was not held to 2.
    expect(await maxOverlap(schema, 'named')).toBeGreaterThan(2);
  });
});

describe('an outcome write that claims (how a limited queue refills its slots)', () => {
  it('claims in the same statement only the slots its outcomes freed, fenced like any outcome', async () => {
    const schema = uniqueSchema('fcride');
    schemas.push(schema);
    const { app, order } = await limitedQueueOf(boot, schema, 2, 6);
    const storage = workerStorage(app);
    const claim = (workerId: string): ClaimRequest => ({
      workerId,
      queue: 'limited',
      names: ['fc-work'],
      limit: 5,
      now: new Date(),
      leaseMs: 30_000,
    });
    const succeeded = (...jobs: ClaimedJob[]): FinishedAttempt[] =>
      jobs.map((job) => ({ job, outcome: { kind: 'succeeded', result: null } }));
    const active = async () =>
      (await sql<{ id: string; worker_id: string }>(`SELECT id, worker_id FROM "${schema}".job WHERE state = 'active'`))
        .map((r) => `${r.worker_id}:${order.indexOf(r.id)}`)
        .sort();

    const first = await storage.claims.claimControlled(claim('a'));
    expect(first.jobs.map((j) => order.indexOf(j.id))).toEqual([0, 1]);

    // One of a's two ends: its slot, and only its slot, is refilled in the same statement.
    const one = await storage.outcomes.finishAndClaim('a', succeeded(first.jobs[0]!), new Date(), 30_000, claim('a'));
    expect([...one.applied]).toEqual([first.jobs[0]!.id]);
    expect(one.claimed.jobs.map((j) => order.indexOf(j.id))).toEqual([2]);
    expect(await active()).toEqual(['a:1', 'a:2']);

    // b writes an outcome for a job it does not hold: fenced, so nothing is freed and nothing claimed.
    const fenced = await storage.outcomes.finishAndClaim(
      'b',
      succeeded(first.jobs[1]!),
      new Date(),
      30_000,
      claim('b'),
    );
    expect(fenced.applied.size).toBe(0);
    expect(fenced.claimed.jobs).toEqual([]);
    expect(await active()).toEqual(['a:1', 'a:2']);

    // Both of a's end: two slots free, two claimed, in enqueue order; the limit still holds. b's
    // claim above waited, but a minute ago: its wait has lapsed, so a takes every free slot.
    const later = { ...claim('a'), now: new Date(Date.now() + 60_000) };
    const both = await storage.outcomes.finishAndClaim(
      'a',
      succeeded(first.jobs[1]!, one.claimed.jobs[0]!),
      later.now,
      30_000,
      later,
    );
    expect(both.applied.size).toBe(2);
    expect(both.claimed.jobs.map((j) => order.indexOf(j.id))).toEqual([3, 4]);
    expect(await active()).toEqual(['a:3', 'a:4']);
    expect(await succeededCount(schema)).toBe(3);
  });

  it('while another worker waits for a slot, stops at its share of the limit and wakes the one waiting', async () => {
    const schema = uniqueSchema('fcshare');
    schemas.push(schema);
    const app = await boot(schema, { worker: { enabled: false }, queues: { limited: { concurrency: 4 } } });
    const storage = workerStorage(app);
    const refs = await app
      .get(JobQueue)
      .enqueueMany(
        Array.from({ length: 12 }, (_, seq) => ({ job: Work, payload: { seq }, options: { queue: 'limited' } })),
      );
    const order = refs.map((r) => r.id);
    // Workers whose handlers of the queue run long ask for shares.
    const claim = (workerId: string, limit = 10, share = true): ClaimRequest => ({
      workerId,
      queue: 'limited',
      names: ['fc-work'],
      limit,
      now: new Date(),
      leaseMs: 30_000,
      share,
    });
    const succeeded = (...jobs: ClaimedJob[]): FinishedAttempt[] =>
      jobs.map((job) => ({ job, outcome: { kind: 'succeeded', result: null } }));
    const held = async () =>
      Object.fromEntries(
        (
          await sql<{ worker_id: string; n: number }>(
            `SELECT worker_id, count(*)::int AS n FROM "${schema}".job WHERE state = 'active' GROUP BY 1`,
          )
        ).map((r) => [r.worker_id, r.n]),
      );
    const listener = new pg.Client({ connectionString: databaseUrl() });
    await listener.connect();
    const wakeUps: string[] = [];
    listener.on('notification', (n) => wakeUps.push(n.payload ?? ''));
    await listener.query(`LISTEN "${notificationChannel(schema)}"`);
    try {
      // Nobody else wants the queue: a takes every slot.
      const a = await storage.claims.claimControlled(claim('a'));
      expect(a.jobs.map((j) => order.indexOf(j.id))).toEqual([0, 1, 2, 3]);
      // b finds none free, and waits.
      expect((await storage.claims.claimControlled(claim('b'))).jobs).toEqual([]);
      expect(wakeUps).toEqual([]);

      // a's ends free slots; while b waits, a refills none of them past its share (2 of 4) and wakes b.
      const firstEnd = await storage.outcomes.finishAndClaim(
        'a',
        succeeded(a.jobs[0]!),
        new Date(),
        30_000,
        claim('a'),
      );
      expect(firstEnd.claimed.jobs).toEqual([]);
      await waitFor('the wake-up for b', async () => wakeUps.includes('q:limited'), 5_000);
      const secondEnd = await storage.outcomes.finishAndClaim(
        'a',
        succeeded(a.jobs[1]!),
        new Date(),
        30_000,
        claim('a'),
      );
      expect(secondEnd.claimed.jobs).toEqual([]);
      expect(await held()).toEqual({ a: 2 });

      // b takes the two slots left for it, and no more: a waits too now (its claims came back short).
      const b = await storage.claims.claimControlled(claim('b'));
      expect(b.jobs.map((j) => order.indexOf(j.id))).toEqual([4, 5]);
      expect(await held()).toEqual({ a: 2, b: 2 });

      // Each refills its own: a's end is a's slot again, b gets nothing more while a waits.
      const thirdEnd = await storage.outcomes.finishAndClaim(
        'a',
        succeeded(a.jobs[2]!),
        new Date(),
        30_000,
        claim('a'),
      );
      expect(thirdEnd.claimed.jobs.map((j) => order.indexOf(j.id))).toEqual([6]);
      expect((await storage.claims.claimControlled(claim('b'))).jobs).toEqual([]);
      expect(await held()).toEqual({ a: 2, b: 2 });

      // A claim that does not ask for shares takes every free slot, waiting workers or not.
      const noShare = await storage.outcomes.finishAndClaim(
        'a',
        succeeded(a.jobs[3]!),
        new Date(),
        30_000,
        claim('a', 10, false),
      );
      expect(noShare.claimed.jobs.map((j) => order.indexOf(j.id))).toEqual([7]);
      expect(await held()).toEqual({ a: 2, b: 2 });

      // A worker that asks for no more than it gets does not wait: b's small claim clears its entry.
      const bEnd = await storage.outcomes.finishAndClaim('b', succeeded(b.jobs[0]!), new Date(), 30_000, claim('b', 1));
      expect(bEnd.claimed.jobs.map((j) => order.indexOf(j.id))).toEqual([8]);
      const [row] = await sql<{ waiting: string[] }>(
        `SELECT waiting_workers AS waiting FROM "${schema}".job_queue WHERE name = 'limited'`,
      );
      expect(row!.waiting).toEqual(['a']);
    } finally {
      await listener.end();
    }
  });
});

describe('a limited queue at shutdown', () => {
  it('leaves nothing claimed behind: jobs its outcome writes claimed as it stopped are handed back unspent', async () => {
    const schema = uniqueSchema('fcstop');
    schemas.push(schema);
    // One slot under a limit of one; only this queue, so every claim of the worker's is of it. A
    // minute-long lease: a job left claimed would still be active after close, not rescued. A long
    // grace: shutdown's wait for the outcome write held below cannot run out.
    const worker = { concurrency: 1, lease: 60_000, shutdownGrace: 30_000, pollInterval: 100, queues: ['limited'] };
    const app = await boot(schema, { worker, queues: { limited: { concurrency: 1 } } });
    const storage = workerStorage(app);
    // The first outcome write that claims is held until shutdown has handed back what the worker
    // held; then it goes on, and the job it claims arrives while the worker is stopping.
    let held = false;
    let letGo!: () => void;
    const released = new Promise<void>((resolve) => (letGo = resolve));
    const claimedByWrites: string[][] = [];
    const finishAndClaim = storage.outcomes.finishAndClaim.bind(storage.outcomes);
    storage.outcomes.finishAndClaim = async (...args) => {
      held = true;
      await released;
      const written = await finishAndClaim(...args);
      claimedByWrites.push(written.claimed.jobs.map((j) => j.id));
      return written;
    };
    const handedBack: string[][] = [];
    const handBack = storage.outcomes.handBack.bind(storage.outcomes);
    storage.outcomes.handBack = (workerId, jobs, now, error) => {
      handedBack.push(jobs.map((j) => j.id));
      return handBack(workerId, jobs, now, error);
    };
    // The first claim takes the first job and the second ahead; the second starts in the first's
    // place as it succeeds, and runs on (a second) through the write and the stop.
    const [first, second, third] = await app
      .get(JobQueue)
      .enqueueMany([0, 1000, 0].map((ms) => ({ job: Work, payload: { ms }, options: { queue: 'limited' } })));
    await waitFor("the first job's outcome write, claiming the next job ahead with it", () => held);
    const closed = app.close();
    try {
      await waitFor('shutdown to hand back the jobs it held', () => handedBack.length === 1);
      // Nothing was waiting to start then: the write had not claimed yet.
      expect(handedBack).toEqual([[]]);
    } finally {
      letGo();
      await closed;
    }

    // The write claimed the third job ahead as the worker stopped; the hand-back after the outcomes
    // returned it. The second ran to its end: shutdown waits for running jobs.
    expect(claimedByWrites).toEqual([[third!.id]]);
    expect(handedBack).toEqual([[], [third!.id]]);
    const rows = await sql<{ id: string; state: string; attempt: number; worker_id: string | null }>(
      `SELECT id, state, attempt, worker_id FROM "${schema}".job ORDER BY id`,
    );
    expect(rows).toEqual([
      { id: first!.id, state: 'succeeded', attempt: 1, worker_id: expect.any(String) },
      { id: second!.id, state: 'succeeded', attempt: 1, worker_id: expect.any(String) },
      // Handed back as if never claimed: attempt unspent, no history.
      { id: third!.id, state: 'queued', attempt: 0, worker_id: null },
    ]);
    // A success leaves no history row of its own; an interrupted attempt would.
    expect(await sql(`SELECT job_id FROM "${schema}".job_execution`)).toEqual([]);
  });
});

describe('a rate limit', () => {
  it('lets at most max jobs start in any window of per ms across three instances, and keeps up with it', async () => {
    const schema = uniqueSchema('fcrate');
    schemas.push(schema);
    // Polls a minute apart: the drain (about 5 s at 50/s) must be paced by the window's own
    // wake-ups, so none of them may run before it ends.
    const instances = await fleet(schema, 3, {
      worker: { concurrency: 10, pollInterval: 60_000 },
      queues: { rated: { rateLimit: { max: 50, per: 1_000 } } },
    });
    const polls = { count: 0 };
    for (const app of instances) {
      const worker = app.get(JobWorker) as unknown as { poll(): Promise<void> };
      expect(typeof worker.poll).toBe('function');
      const poll = worker.poll.bind(worker);
      worker.poll = () => {
        polls.count++;
        return poll();
      };
    }
    await instances[0]!
      .get(JobQueue)
      .enqueueMany(Array.from({ length: 250 }, () => ({ job: Work, payload: {}, options: { queue: 'rated' } })));
    await waitFor(
      'the 250 jobs to run, or an instance to poll',
      async () => polls.count > 0 || (await succeededCount(schema)) === 250,
      60_000,
    );
    // It keeps up: the instances wake when the window lets the next job start, not at their next poll.
    expect(polls.count).toBe(0);
    // A start is the claim (started_at, the time the limit counts): any 1,000 ms holds at most 50,
    // and the limit is used: some window holds (nearly) all 50.
    const starts = (await sql<{ t: Date }>(`SELECT started_at AS t FROM "${schema}".job ORDER BY started_at`)).map(
      (r) => r.t.getTime(),
    );
    let busiest = 0;
    for (let i = 0, j = 0; i < starts.length; i++) {
      while (starts[j]! <= starts[i]! - 1_000) j++;
      busiest = Math.max(busiest, i - j + 1);
    }
    expect(busiest).toBeLessThanOrEqual(50);
    expect(busiest).toBeGreaterThanOrEqual(45);
  });
});

describe('pause and resume', () => {
  it("keeps a paused queue's jobs queued on every instance while running ones finish, and enqueue still works", async () => {
    const schema = uniqueSchema('fcpause');
    schemas.push(schema);
    const [a, b] = await fleet(schema, 2, {});
    const running = await a!.get(JobQueue).enqueue(Work, { ms: 600 }, { queue: 'pausable' });
    await waitFor('the first job to run', async () => (await a!.get(JobQueue).get(running.id))?.state === 'active');
    await a!.get(JobQueues).pause('pausable');
    // Enqueued on the other instance once the pause reached it (a NOTIFY, else its next poll).
    await sleep(300);
    const later = await b!
      .get(JobQueue)
      .enqueueMany(Array.from({ length: 5 }, () => ({ job: Work, payload: {}, options: { queue: 'pausable' } })));
    await waitFor(
      'the running job to finish',
      async () => (await b!.get(JobQueue).get(running.id))?.state === 'succeeded',
    );
    await sleep(1_200);
    for (const { id } of later) expect((await b!.get(JobQueue).get(id))?.state).toBe('queued');
    expect((await a!.get(JobQueues).list()).find((q) => q.name === 'pausable')).toMatchObject({
      paused: true,
      queued: 5,
    });

    await b!.get(JobQueues).resume('pausable');
    for (const { id } of later) {
      await waitFor(`${id} to run`, async () => (await a!.get(JobQueue).get(id))?.state === 'succeeded');
    }
  });
});

describe('limits declared in code and changed at run time', () => {
  it('keep a run-time change across restarts of the same code, and take the code when the code changes', async () => {
    const schema = uniqueSchema('fcprov');
    schemas.push(schema);
    const code = (concurrency: number) => ({ queues: { prov: { concurrency, rateLimit: { max: 10, per: 1_000 } } } });
    const first = await boot(schema, code(3));
    const find = async (app: INestApplication) => (await app.get(JobQueues).list()).find((q) => q.name === 'prov')!;
    expect(await find(first)).toMatchObject({
      concurrency: { value: 3, source: 'code' },
      rateLimit: { value: { max: 10, per: 1_000 }, source: 'code' },
    });
    await first.get(JobQueues).setLimits('prov', { concurrency: 7 });
    expect((await find(first)).concurrency).toEqual({ value: 7, source: 'runtime' });
    await first.close();

    // The same code again: the run-time value stays; the untouched rate limit stays the code's.
    const second = await boot(schema, code(3));
    expect(await find(second)).toMatchObject({
      concurrency: { value: 7, source: 'runtime' },
      rateLimit: { value: { max: 10, per: 1_000 }, source: 'code' },
    });
    await second.close();

    // Code that changed the field: the code's value wins again.
    const third = await boot(schema, code(5));
    expect((await find(third)).concurrency).toEqual({ value: 5, source: 'code' });
    await third.get(JobQueues).setLimits('prov', { rateLimit: null });
    expect((await find(third)).rateLimit).toEqual({ value: null, source: 'runtime' });
    // A job name's own limit, from @Job, is listed under its queue.
    expect((await find(third)).jobs).toEqual([]);
    expect((await third.get(JobQueues).list()).find((q) => q.name === 'named')!.jobs).toEqual([
      {
        name: 'fc-named',
        concurrency: { value: 2, source: 'code' },
        rateLimit: { value: null, source: 'code' },
        service: 'nestjs-durable-jobs',
      },
    ]);
  });

  it('stay as the code declared them when an app that declares nothing starts (the CLI, a dashboard-only app)', async () => {
    const schema = uniqueSchema('fcbare');
    schemas.push(schema);
    const app = await boot(schema, { queues: { prov: { concurrency: 3 } } });
    const limits = async () =>
      (await app.get(JobQueues).list())
        .filter((q) => q.name === 'prov' || q.name === 'named')
        .map((q) => ({ name: q.name, concurrency: q.concurrency, jobs: q.jobs }));
    const before = await limits();
    expect(before.find((q) => q.name === 'prov')!.concurrency).toEqual({ value: 3, source: 'code' });
    expect(before.find((q) => q.name === 'named')!.jobs).toHaveLength(1);
    // The CLI starts JobsModule with no queues and no handlers.
    const run = await runCli(['queues', '--schema', schema]);
    expect(run.code).toBe(0);
    const bare = await startJobsApp(schema, { worker: { enabled: false } }, {});
    apps.push(bare);
    expect(await limits()).toEqual(before);
  });
});

describe('bad flow-control input', () => {
  it('is a JobsError at the call site naming the fix', async () => {
    const schema = uniqueSchema('fcbad');
    schemas.push(schema);
    await expect(boot(schema, { queues: { bad: { concurrency: 0 } } })).rejects.toThrow(
      /JobsModule "queues.bad": "concurrency" must be an integer >= 1, got 0\. Potential fix/,
    );
    await expect(boot(schema, { queues: { bad: { rateLimit: { max: 5 } as never } } })).rejects.toThrow(
      /"rateLimit" must be \{ max, per \}.*Potential fix: rateLimit: \{ max: 100, per: 60_000 \}/,
    );
    expect(() => {
      @Job('fc-bad-rate', { rateLimit: { max: 0, per: 1_000 } })
      class BadRate implements JobHandler {
        run() {}
      }
      return BadRate;
    }).toThrow(/"rateLimit.max" must be an integer >= 1, got 0/);
    const app = await boot(schema);
    const jobs = app.get(JobQueue);
    const cases: Array<[() => Promise<unknown>, RegExp]> = [
      [
        () => jobs.enqueue(Work, {}, { unique: { key: 'k'.repeat(257) } }),
        /"unique.key" is 257 characters long; the limit is 256/,
      ],
      [() => jobs.enqueue(Work, {}, { group: 'g', serialKey: 's' }), /"serialKey" and "group" on one job/],
      [
        () => jobs.enqueue(Work, {}, { unique: { key: 'k', for: 1_000, while: 'queued' } }),
        /takes "for" .* or "while"/,
      ],
      [() => jobs.enqueue(Work, {}, { deadline: new Date(Date.now() - 1_000) }), /"deadline" .* could never start/],
      [() => app.get(JobQueues).pause('no-such-queue'), /no queue "no-such-queue" is known/],
      [
        () => app.get(JobQueues).setLimits('default', { concurrency: -1 }),
        /"concurrency" must be an integer >= 1, got -1/,
      ],
      [() => app.get(JobQueues).setLimits('default', {}), /nothing to change/],
    ];
    for (const [call, message] of cases) {
      const error = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(JobsError);
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).toMatch(/Potential fix/);
    }
    expect((await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".job`))[0]!.n).toBe(0);
  });
});
