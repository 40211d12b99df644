import type { INestApplication } from '@nestjs/common';
import { JobQueue, JobQueues, JobsError } from 'nestjs-durable-jobs';
import { type ClaimRequest } from '../../../lib/storage/jobs/claim/claim-storage.interface.js';
import { flowApps } from '../../support/flow-apps.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { Work } from '../../support/flow.jobs.js';
import { workerStorage } from '../../support/job-storage.js';
import { maxOverlap, sampler, succeededCount } from '../../support/samplers.js';
import { waitFor } from '../../support/wait.js';

/**
 * Per-group concurrency (a queue's `groups.concurrency`, and one group's own
 * limit set at run time) across instances, and a group returning with new
 * work served at the next claim rather than when the rotation reaches it.
 */
const schemas: string[] = [];
const { apps, boot } = flowApps();

const key = (n: number, width = 2) => `g${String(n).padStart(width, '0')}`;

/** One claim of `queue` for `workerId`, straight from the storage: the group of each job it got, in order. */
function claimer(app: INestApplication, schema: string, queue: string) {
  const storage = workerStorage(app);
  return async (workerId: string, limit: number): Promise<string[]> => {
    const request: ClaimRequest = { workerId, queue, names: ['fc-work'], limit, now: new Date(), leaseMs: 30_000 };
    const { jobs } = await storage.claims.claimControlled(request);
    if (jobs.length === 0) return [];
    const rows = await sql<{ id: string; g: string }>(
      `SELECT id, group_key AS g FROM "${schema}".job WHERE id = ANY($1::uuid[])`,
      [jobs.map((j) => j.id)],
    );
    const groupOf = new Map(rows.map((r) => [r.id, r.g]));
    return jobs.map((j) => groupOf.get(j.id)!);
  };
}

const tally = (groups: string[]) =>
  Object.fromEntries([...new Set(groups)].sort().map((g) => [g, groups.filter((x) => x === g).length]));

/** Ends the running jobs of `group`, as their outcomes would. */
const finish = (schema: string, group: string) =>
  sql(
    `UPDATE "${schema}".job SET state = 'succeeded', lease_expires_at = NULL WHERE state = 'active' AND group_key = $1`,
    [group],
  );

afterEach(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
});

afterAll(async () => {
  await dropSchemas(...schemas);
});

describe('per-group concurrency', () => {
  it('holds across 3 instances of 10 slots (10 groups of 60 jobs, 2 a group), with 15 or more running at the peak', async () => {
    const schema = uniqueSchema('gconc');
    schemas.push(schema);
    const options = { queues: { reports: { groups: { concurrency: 2 } } } };
    const instances = [await boot(schema, options), await boot(schema, options), await boot(schema, options)];
    const active = `"${schema}".job WHERE queue = 'reports' AND state = 'active'`;
    const perGroup = sampler(
      `SELECT coalesce(max(n), 0)::int AS n FROM (SELECT count(*) AS n FROM ${active} GROUP BY group_key) x`,
    );
    const total = sampler(`SELECT count(*)::int AS n FROM ${active}`);
    await instances[0]!.get(JobQueue).enqueueMany(
      Array.from({ length: 10 }, (_, g) =>
        Array.from({ length: 60 }, () => ({
          job: Work,
          payload: { ms: 20, tag: key(g) },
          options: { queue: 'reports', group: key(g) },
        })),
      ).flat(),
    );
    await waitFor('the 600 jobs to run', async () => (await succeededCount(schema)) === 600, 60_000);
    // Claimed (active) is what the limit counts: never more than 2 of a group, and the slots well used.
    expect(await perGroup.stop()).toBe(2);
    expect(await total.stop()).toBeGreaterThanOrEqual(15);
    // The handlers' own runs, on the database clock: never more than 2 of a group at once either.
    for (let g = 0; g < 10; g++) expect(await maxOverlap(schema, 'reports', key(g))).toBeLessThanOrEqual(2);
    // Every instance ran some of them.
    const workers = await sql<{ n: number }>(
      `SELECT count(DISTINCT worker_id)::int AS n FROM "${schema}".job WHERE state = 'succeeded'`,
    );
    expect(workers[0]!.n).toBe(3);
  });

  it("takes a group's own limit set at run time over the queue's, passes over full groups, and list() shows both", async () => {
    const schema = uniqueSchema('gover');
    schemas.push(schema);
    const app = await boot(schema, {
      worker: { enabled: false },
      queues: { tenants: { groups: { concurrency: 2 } } },
    });
    const queues = app.get(JobQueues);
    await app
      .get(JobQueue)
      .enqueueMany(
        Array.from({ length: 12 }, (_, g) =>
          Array.from({ length: 6 }, () => ({ job: Work, payload: {}, options: { queue: 'tenants', group: key(g) } })),
        ).flat(),
      );
    await queues.setGroupLimits('tenants', 'g01', { concurrency: 1 });
    await queues.setGroupLimits('tenants', 'g02', { concurrency: 4 });
    await queues.setGroupLimits('tenants', 'g03', { concurrency: 3 });
    await queues.setGroupLimits('tenants', 'g03', { concurrency: null });
    const info = (await queues.list()).find((q) => q.name === 'tenants')!;
    expect(info.groups).toEqual({
      concurrency: 2,
      rateLimit: null,
      overrides: [
        { group: 'g01', concurrency: 1 },
        { group: 'g02', concurrency: 4 },
      ],
    });
    const claim = claimer(app, schema, 'tenants');

    // A claim of 8 walks eight groups and takes one job of each, in rotation.
    expect(await claim('w1', 8)).toEqual(['g00', 'g01', 'g02', 'g03', 'g04', 'g05', 'g06', 'g07']);
    // The next goes on from g08, wraps around, and passes over g01 (at its own limit of 1).
    expect(await claim('w2', 7)).toEqual(['g08', 'g09', 'g10', 'g11', 'g00', 'g02', 'g03']);
    // A large claim fills every group to its limit and no further.
    await claim('w3', 100);
    const running = await sql<{ g: string; n: number }>(
      `SELECT group_key AS g, count(*)::int AS n FROM "${schema}".job WHERE state = 'active' GROUP BY group_key`,
    );
    expect(Object.fromEntries(running.map((r) => [r.g, r.n]))).toEqual({
      ...Object.fromEntries(Array.from({ length: 12 }, (_, g) => [key(g), 2])),
      g01: 1,
      g02: 4,
    });
    expect(await claim('w1', 100)).toEqual([]);

    // A freed slot is taken by its own group alone; a cleared limit leaves the queue's default.
    await finish(schema, 'g05');
    await queues.setGroupLimits('tenants', 'g02', { concurrency: null });
    expect(tally(await claim('w2', 100))).toEqual({ g05: 2 });
    await finish(schema, 'g02');
    expect(tally(await claim('w2', 100))).toEqual({ g02: 2 });
    expect((await queues.list()).find((q) => q.name === 'tenants')!.groups.overrides).toEqual([
      { group: 'g01', concurrency: 1 },
    ]);
  });

  it("holds one group to its own limit in a queue with no default, the others' claims as before", async () => {
    const schema = uniqueSchema('gsolo');
    schemas.push(schema);
    const app = await boot(schema, { worker: { enabled: false } });
    await app
      .get(JobQueue)
      .enqueueMany(
        Array.from({ length: 3 }, (_, g) =>
          Array.from({ length: 6 }, () => ({ job: Work, payload: {}, options: { queue: 'solo', group: key(g) } })),
        ).flat(),
      );
    await app.get(JobQueues).setGroupLimits('solo', 'g01', { concurrency: 1 });
    const claim = claimer(app, schema, 'solo');
    expect(tally(await claim('w1', 12))).toEqual({ g00: 4, g01: 1, g02: 4 });
    expect(tally(await claim('w1', 12))).toEqual({ g00: 2, g02: 2 });
  });
});

describe('a returning group', () => {
  it('is served at the next claim of each of 3 instances, ahead of a rotation of 500 groups with backlogs', async () => {
    const schema = uniqueSchema('gback');
    schemas.push(schema);
    const app = await boot(schema, { worker: { enabled: false } });
    const jobs = app.get(JobQueue);
    await jobs.enqueueMany(
      Array.from({ length: 500 }, (_, g) =>
        Array.from({ length: 4 }, () => ({ job: Work, payload: {}, options: { queue: 'tenants', group: key(g, 3) } })),
      ).flat(),
    );
    const claim = claimer(app, schema, 'tenants');
    const workers = ['w1', 'w2', 'w3'];
    const round = async () => (await Promise.all(workers.map((w) => claim(w, 10)))).flat();
    // Each instance claims a few times: the rotation moves on through the backlogs.
    for (let i = 0; i < 5; i++) await round();
    const cursor = async () =>
      (await sql<{ c: string }>(`SELECT group_cursor AS c FROM "${schema}".job_queue WHERE name = 'tenants'`))[0]!.c;
    const before = await cursor();
    expect(before > key(0, 3)).toBe(true);

    // Right behind the cursor: the rotation would come to it last, after every other group.
    const newcomer = `${key(Number(before.slice(1)) - 1, 3)}~`;
    await jobs.enqueue(Work, {}, { queue: 'tenants', group: newcomer });
    const next = await Promise.all(workers.map((w) => claim(w, 10)));
    expect(next.flat().filter((g) => g === newcomer)).toHaveLength(1);
    // The rotation goes on from where it stood: the newcomer does not move it.
    expect(next.flat().filter((g) => g !== newcomer)).not.toContain(key(0, 3));
    expect(await cursor()).not.toBe(newcomer);
    expect((await cursor()) > before).toBe(true);

    // One instance alone: the returning group's job comes first in its very next claim.
    const second = `${key(Number((await cursor()).slice(1)) - 1, 3)}~`;
    await jobs.enqueue(Work, {}, { queue: 'tenants', group: second });
    expect((await claim('w1', 10))[0]).toBe(second);
    // A group with a backlog that gets another job is no newcomer: the rotation serves it in turn.
    const backlogged = key(Number((await cursor()).slice(1)) - 2, 3);
    await jobs.enqueue(Work, {}, { queue: 'tenants', group: backlogged });
    expect(await claim('w2', 10)).not.toContain(backlogged);
  });

  it("starts within what 3 running instances held and claimed next, not after the rotation's turn", async () => {
    const schema = uniqueSchema('gbackrun');
    schemas.push(schema);
    const options = { worker: { concurrency: 4, pollInterval: 100 } };
    const instances = [await boot(schema, options), await boot(schema, options), await boot(schema, options)];
    const jobs = instances[0]!.get(JobQueue);
    await jobs.enqueueMany(
      Array.from({ length: 500 }, (_, g) =>
        Array.from({ length: 4 }, () => ({
          job: Work,
          payload: { ms: 5, tag: key(g, 3) },
          options: { queue: 'tenants', group: key(g, 3) },
        })),
      ).flat(),
    );
    const started = async () => (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".fc_run`))[0]!.n;
    await waitFor('the rotation to be under way', async () => (await started()) >= 300, 60_000);
    const [{ c: cursor }] = (await sql<{ c: string }>(
      `SELECT group_cursor AS c FROM "${schema}".job_queue WHERE name = 'tenants'`,
    )) as [{ c: string }];
    // Right behind the cursor: the rotation would come to it after some 500 groups.
    const newcomer = `${key(Number(cursor.slice(1)) - 1, 3)}~`;
    const [{ mark }] = (await sql<{ mark: number }>(
      `SELECT coalesce(max(id), 0)::int AS mark FROM "${schema}".fc_run`,
    )) as [{ mark: number }];
    await jobs.enqueue(Work, { ms: 5, tag: newcomer }, { queue: 'tenants', group: newcomer });
    const [{ id }] = await waitFor(
      "the newcomer's job to start",
      async () => {
        const rows = await sql<{ id: number }>(`SELECT id::int FROM "${schema}".fc_run WHERE tag = $1`, [newcomer]);
        return rows.length ? (rows as [{ id: number }]) : null;
      },
      60_000,
    );
    // Ahead of it started only what the instances held when it arrived (up to about twice their
    // slots each) and their claims under way then: a few dozen jobs, where the rotation would
    // have started hundreds.
    const ahead = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".fc_run WHERE id > $1 AND id < $2`,
      [mark, id],
    );
    expect(ahead[0]!.n).toBeLessThan(100);
  });

  it('at its limit, waits like any full group', async () => {
    const schema = uniqueSchema('gbackfull');
    schemas.push(schema);
    const app = await boot(schema, { worker: { enabled: false }, queues: { tenants: { groups: { concurrency: 1 } } } });
    const jobs = app.get(JobQueue);
    await jobs.enqueueMany(
      Array.from({ length: 40 }, (_, g) => ({ job: Work, payload: {}, options: { queue: 'tenants', group: key(g) } })),
    );
    const claim = claimer(app, schema, 'tenants');
    expect(await claim('w1', 5)).toEqual(['g00', 'g01', 'g02', 'g03', 'g04']);
    // g01 drained and holds its one running job: its new job is an arrival, but the group is full. A
    // group new to the queue arrives with it and goes first.
    await jobs.enqueue(Work, {}, { queue: 'tenants', group: 'g01' });
    await jobs.enqueue(Work, {}, { queue: 'tenants', group: 'g03~' });
    expect(await claim('w1', 3)).toEqual(['g03~', 'g05', 'g06']);
  });
});

describe('bad group limits', () => {
  it('are refused with a JobsError naming the queue, the field and the fix, at boot and at the call', async () => {
    const schema = uniqueSchema('gbad');
    schemas.push(schema);
    for (const concurrency of [0, 1.5, '2']) {
      await expect(
        boot(schema, { queues: { reports: { groups: { concurrency: concurrency as number } } } }),
      ).rejects.toThrow(
        /JobsModule "queues.reports": "groups.concurrency" must be an integer >= 1, got .*Potential fix: groups.concurrency: 2/,
      );
    }
    const app = await boot(schema, { worker: { enabled: false }, queues: { reports: {} } });
    const queues = app.get(JobQueues);
    const cases: Array<[() => Promise<unknown>, RegExp]> = [
      [() => queues.setGroupLimits('no-such-queue', 'g', { concurrency: 1 }), /no queue "no-such-queue" is known/],
      [() => queues.setGroupLimits('reports', '', { concurrency: 1 }), /"group" must be a non-empty string/],
      [() => queues.setGroupLimits('reports', 7 as never, { concurrency: 1 }), /"group" must be a non-empty string/],
      [
        () => queues.setGroupLimits('reports', 'g', { concurrency: 0 }),
        /setGroupLimits\('reports'\): "concurrency" must be an integer >= 1, got 0/,
      ],
      [() => queues.setGroupLimits('reports', 'g', {} as never), /no "concurrency" for group "g"/],
      [() => queues.setGroupLimits('reports', 'g', undefined as never), /no "concurrency" for group "g"/],
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
    expect(await sql(`SELECT * FROM "${schema}".job_group_limit`)).toEqual([]);
  });
});
