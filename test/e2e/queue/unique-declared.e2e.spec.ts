import type { INestApplication } from '@nestjs/common';
import { BatchBuilder, Job, JobQueue, JobsError, type JobHandler, type JobsModuleOptions } from 'nestjs-durable-jobs';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';

// Uniqueness declared on the job type (@Job's unique, with a key function of the payload), and a
// ttl that bounds how long a key stays held by a job still queued or running (a stuck one). No
// worker runs here: the holders stay queued, or are made active by hand, as a stuck job is.

@Job('ud-digest', { unique: { key: (p: { userId: number }) => `digest-${p.userId}` } })
class Digest implements JobHandler<{ userId: number }> {
  run(): void {}
}

/** One at a time, but a stuck one holds the key for a minute at most. */
@Job('ud-report', { unique: { key: 'nightly-report', ttl: 60_000 } })
class Report implements JobHandler<{ n: number }> {
  run(): void {}
}

@Job('ud-picky', {
  unique: {
    key: (p: { userId?: unknown }) => {
      if (p.userId === undefined) throw new Error('no user');
      return p.userId as string;
    },
  },
})
class Picky implements JobHandler<{ userId?: unknown }> {
  run(): void {}
}

/**
 * A key function with each of the other options: the function's key must come with them. The
 * payload's `v` tells the enqueues of one key apart.
 */
type Keyed = { doc: string; v?: number };
const docKey = (p: Keyed) => `doc-${p.doc}`;

@Job('ud-fn-queued', { unique: { key: docKey, while: 'queued' } })
class WhileQueued implements JobHandler<Keyed> {
  run(): void {}
}

@Job('ud-fn-ttl', { unique: { key: docKey, ttl: 60_000 } })
class WithTtl implements JobHandler<Keyed> {
  run(): void {}
}

@Job('ud-fn-window', { unique: { key: docKey, for: 60_000 } })
class PerWindow implements JobHandler<Keyed> {
  run(): void {}
}

@Job('ud-fn-debounce', { unique: { key: docKey, while: 'queued', replace: true } })
class Debounced implements JobHandler<Keyed> {
  run(): void {}
}

const T0 = new Date('2026-12-01T09:00:00Z');
const schemas: string[] = [];
const apps: INestApplication[] = [];

/** Two instances on one schema and one clock, workers off. */
async function instances(
  options: Partial<JobsModuleOptions> = {},
): Promise<[INestApplication, INestApplication, string]> {
  const schema = uniqueSchema('udecl');
  schemas.push(schema);
  const start = () =>
    startJobsApp(
      schema,
      { worker: { enabled: false }, scheduler: { enabled: false }, ...options },
      { providers: [Digest, Report, Picky, WhileQueued, WithTtl, PerWindow, Debounced] },
    );
  const a = await start();
  const b = await start();
  apps.push(a, b);
  return [a, b, schema];
}

// Each test's apps close with it: behind a session pooler, apps left open hold its sessions, and the
// later tests' connections would wait for one.
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
});
afterAll(async () => {
  await dropSchemas(...schemas);
});

const count = async (schema: string, name: string) =>
  Number((await sql<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".job WHERE name = $1`, [name]))[0]!.n);

describe('a unique key declared on the job type', () => {
  it('applies to every enqueue: 40 racing on two instances make one job per key, and each caller gets its id', async () => {
    const [a, b, schema] = await instances();
    const calls = Array.from({ length: 40 }, (_, i) =>
      (i % 2 ? a : b).get(JobQueue).enqueue(Digest, { userId: i % 4 < 2 ? 7 : 8 }),
    );
    const results = await Promise.all(calls);
    const byUser = (user: number) => results.filter((_, i) => (i % 4 < 2 ? 7 : 8) === user);
    for (const user of [7, 8]) {
      const mine = byUser(user);
      expect(new Set(mine.map((r) => r.id)).size).toBe(1);
      expect(mine.filter((r) => r.created)).toHaveLength(1);
    }
    expect(await count(schema, 'ud-digest')).toBe(2);
    const keys = await sql<{ unique_key: string; unique_while: string }>(
      `SELECT unique_key, unique_while FROM "${schema}".job ORDER BY unique_key`,
    );
    expect(keys).toEqual([
      { unique_key: 'digest-7', unique_while: 'queued-or-active' },
      { unique_key: 'digest-8', unique_while: 'queued-or-active' },
    ]);

    // enqueueMany takes it too, against held keys and within the call.
    const many = await a.get(JobQueue).enqueueMany([
      { job: Digest, payload: { userId: 7 } },
      { job: Digest, payload: { userId: 9 } },
      { job: Digest, payload: { userId: 9 } },
    ]);
    expect(many.map((r) => r.created)).toEqual([false, true, false]);
    expect(many[0]!.id).toBe(results.find((r, i) => r.created && i % 4 < 2)!.id);
    expect(many[2]!.id).toBe(many[1]!.id);
  });

  it("gives way to a call's own unique options; batch members take none of it", async () => {
    const [a, , schema] = await instances();
    const jobs = a.get(JobQueue);
    const first = await jobs.enqueue(Digest, { userId: 7 });
    const own = await jobs.enqueue(Digest, { userId: 7 }, { unique: { key: 'digest-7-resend', while: 'queued' } });
    expect(own.created).toBe(true);
    expect(own.id).not.toBe(first.id);
    expect((await jobs.enqueue(Digest, { userId: 7 }, { unique: { key: 'digest-7-resend' } })).created).toBe(true);

    // A batch is written whole or not at all: a member holding the type's key would refuse it.
    await a.get(BatchBuilder).create('digests').add(Digest, { userId: 7 }).add(Digest, { userId: 7 }).dispatch();
    const rows = await sql<{ unique_key: string | null }>(
      `SELECT unique_key FROM "${schema}".job WHERE batch_id IS NOT NULL`,
    );
    expect(rows).toEqual([{ unique_key: null }, { unique_key: null }]);
  });

  it('refuses, at the call and writing nothing, a key function that throws or returns no string', async () => {
    const [a, , schema] = await instances();
    const jobs = a.get(JobQueue);
    await expect(jobs.enqueue(Picky, {})).rejects.toThrow(
      new JobsError(
        `enqueue('ud-picky'): the unique key function that @Job('ud-picky') declares threw (no user). ` +
          `Potential fix: make unique.key return a string for every payload this job is enqueued with, or pass { unique: { key } } to this call.`,
      ),
    );
    await expect(jobs.enqueue(Picky, { userId: 42 })).rejects.toThrow(
      /^enqueue\('ud-picky'\): the unique key function that @Job\('ud-picky'\) declares returned 42, not a non-empty string\. Potential fix: return a string/,
    );
    await expect(jobs.enqueue(Picky, { userId: 'x'.repeat(300) })).rejects.toThrow(
      /^enqueue\('ud-picky'\): "unique\.key" is 300 characters long; the limit is 256/,
    );
    await expect(
      jobs.enqueueMany([
        { job: Picky, payload: { userId: 'fine' } },
        { job: Picky, payload: {} },
      ]),
    ).rejects.toThrow(/declares threw \(no user\)/);
    expect(await count(schema, 'ud-picky')).toBe(0);
    // A call that passes its own key does not call the function.
    expect((await jobs.enqueue(Picky, {}, { unique: { key: 'picky-1' } })).created).toBe(true);
  });

  it("of an external job, declared in externalJobs, applies to this app's enqueues of it", async () => {
    const [a, , schema] = await instances({
      externalJobs: {
        'ud-elsewhere': { queue: 'other-service', unique: { key: (p: { id: number }) => `ext-${p.id}` } },
      },
    });
    const jobs = a.get(JobQueue);
    const first = await jobs.enqueue('ud-elsewhere', { id: 1 });
    expect(await jobs.enqueue('ud-elsewhere', { id: 1 })).toEqual({ id: first.id, created: false });
    expect(await count(schema, 'ud-elsewhere')).toBe(1);
  });

  it('is checked where it is declared', async () => {
    const declare = (unique: unknown) => () => Job('ud-bad', { unique: unique as never })(class Bad {});
    const where = "@Job('ud-bad') on class Bad";
    expect(declare(5)).toThrow(
      `${where}: "unique" must be an object, got 5. Potential fix: unique: { key: (payload) =>`,
    );
    expect(declare({ while: 'queued' })).toThrow(`${where}: "unique.key" must be a non-empty string, got undefined.`);
    expect(declare({ key: 'k', while: 'forever' })).toThrow(`${where}: "unique.while" must be one of queued,`);
    expect(declare({ key: 'k', ttl: 0 })).toThrow(`${where}: "unique.ttl" must be an integer from 1 to`);
    expect(declare({ key: 'k', for: 60_000, ttl: 1_000 })).toThrow(
      `${where}: "unique.ttl" bounds how long a key is held by its job's state; a key held "for" a window is released when the window ends. Potential fix:`,
    );
    expect(declare({ key: 'k', for: 60_000, while: 'queued' })).toThrow(
      `takes "for" (one job per key per window) or "while"`,
    );
    await expect(instances({ externalJobs: { e: { unique: { key: 'k', ttl: -1 } } } })).rejects.toThrow(
      `JobsModule's "externalJobs" entry 'e': "unique.ttl" must be an integer from 1 to`,
    );
  });
});

describe('a key function declared with other unique options keeps them', () => {
  /** What a worker that claimed the job and went silent leaves: the job running, its lease never ending. */
  const stuckRunning = (schema: string, id: string, at: Date) =>
    sql(
      `UPDATE "${schema}".job SET state = 'active', attempt = 1, worker_id = 'ghost', started_at = $2,
              lease_expires_at = 'infinity' WHERE id = $1`,
      [id, at],
    );

  it("while: 'queued': a holder that runs no longer holds the key", async () => {
    const [a, , schema] = await instances();
    const jobs = a.get(JobQueue);
    const first = await jobs.enqueue(WhileQueued, { doc: 'a', v: 1 });
    expect(await jobs.enqueue(WhileQueued, { doc: 'a', v: 2 })).toEqual({ id: first.id, created: false });
    await stuckRunning(schema, first.id, new Date());
    // Held only while queued: the running holder lets a second job of the key in.
    expect((await jobs.enqueue(WhileQueued, { doc: 'a', v: 3 })).created).toBe(true);
  });

  it('ttl: a holder stuck past the ttl gives the key up', async () => {
    const clock = new ManualClock(T0);
    const [a, , schema] = await instances({ clock });
    const jobs = a.get(JobQueue);
    const first = await jobs.enqueue(WithTtl, { doc: 'a', v: 1 });
    await stuckRunning(schema, first.id, clock.now());
    clock.advance(59_999);
    expect(await jobs.enqueue(WithTtl, { doc: 'a', v: 2 })).toEqual({ id: first.id, created: false });
    clock.advance(1);
    const second = await jobs.enqueue(WithTtl, { doc: 'a', v: 3 });
    expect(second.created).toBe(true);
    expect((await jobs.get(second.id))!.payload).toEqual({ doc: 'a', v: 3 });
  });

  it('for: one job per key per window, whatever became of the holder', async () => {
    // The windows are aligned to the clock: T0 starts one.
    const clock = new ManualClock(T0);
    const [a, , schema] = await instances({ clock });
    const jobs = a.get(JobQueue);
    const first = await jobs.enqueue(PerWindow, { doc: 'a', v: 1 });
    // Held by its window, not by its state: a holder that already succeeded still holds it.
    await sql(`UPDATE "${schema}".job SET state = 'succeeded', attempt = 1, completed_at = $2 WHERE id = $1`, [
      first.id,
      T0,
    ]);
    clock.advance(59_999);
    expect(await jobs.enqueue(PerWindow, { doc: 'a', v: 2 })).toEqual({ id: first.id, created: false });
    clock.advance(1);
    expect((await jobs.enqueue(PerWindow, { doc: 'a', v: 3 })).created).toBe(true);
  });

  it("replace: a duplicate replaces the waiting holder's payload", async () => {
    const [a] = await instances();
    const jobs = a.get(JobQueue);
    const first = await jobs.enqueue(Debounced, { doc: 'a', v: 1 });
    expect(await jobs.enqueue(Debounced, { doc: 'a', v: 2 })).toEqual({ id: first.id, created: false });
    expect((await jobs.get(first.id))!.payload).toEqual({ doc: 'a', v: 2 });
  });
});

describe('a unique key with a ttl', () => {
  it('is taken from a holder stuck queued or running once the ttl has passed, by one of many racing enqueues', async () => {
    const clock = new ManualClock(T0);
    const [a, b, schema] = await instances({ clock });
    const enqueue = (app: INestApplication, n: number) => app.get(JobQueue).enqueue(Report, { n });
    const first = await enqueue(a, 1);
    clock.advance(59_999);
    expect(await enqueue(b, 2)).toEqual({ id: first.id, created: false });

    // Stuck queued (no worker serves it): at the ttl, the key is free for the next enqueue.
    clock.advance(1);
    const racing = await Promise.all(Array.from({ length: 20 }, (_, i) => enqueue(i % 2 ? a : b, 10 + i)));
    const second = racing.find((r) => r.created)!;
    expect(racing.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(racing.map((r) => r.id))).toEqual(new Set([second.id]));
    const holders = async () =>
      sql<{ id: string; state: string; unique_key: string | null }>(
        `SELECT id, state, unique_key FROM "${schema}".job ORDER BY created_at, id`,
      );
    // The stuck job stays as it was, without the key.
    expect(await holders()).toEqual([
      { id: first.id, state: 'queued', unique_key: null },
      { id: second.id, state: 'queued', unique_key: 'nightly-report' },
    ]);

    // Stuck running: a worker claimed it and went silent with a lease that never ends.
    await sql(
      `UPDATE "${schema}".job SET state = 'active', attempt = 1, worker_id = 'ghost', started_at = $2,
              lease_expires_at = 'infinity' WHERE id = $1`,
      [second.id, clock.now()],
    );
    clock.advance(30_000);
    expect(await enqueue(a, 3)).toEqual({ id: second.id, created: false });
    clock.advance(30_000);
    const third = await enqueue(b, 4);
    expect(third.created).toBe(true);
    expect(await enqueue(a, 5)).toEqual({ id: third.id, created: false });
    expect((await holders()).map((h) => [h.id, h.state, h.unique_key])).toEqual([
      [first.id, 'queued', null],
      [second.id, 'active', null],
      [third.id, 'queued', 'nightly-report'],
    ]);
  });

  it('from a call site, and never frees a key for an enqueue without one', async () => {
    const clock = new ManualClock(T0);
    const [a, , schema] = await instances({ clock });
    const jobs = a.get(JobQueue);
    const first = await jobs.enqueue(Digest, { userId: 1 }, { unique: { key: 'call-site', ttl: 1_000 } });
    clock.advance(5_000);
    // Without a ttl of its own, the enqueue finds the key held, however long ago it was taken.
    expect(await jobs.enqueue(Digest, { userId: 1 }, { unique: { key: 'call-site' } })).toEqual({
      id: first.id,
      created: false,
    });
    const next = await jobs.enqueue(Digest, { userId: 1 }, { unique: { key: 'call-site', ttl: 1_000 } });
    expect(next.created).toBe(true);
    expect(await count(schema, 'ud-digest')).toBe(2);
    await expect(jobs.enqueue(Digest, { userId: 1 }, { unique: { key: 'k', for: 1_000, ttl: 5 } })).rejects.toThrow(
      /^enqueue\('ud-digest'\): "unique\.ttl" bounds how long a key is held by its job's state/,
    );
  });
});
