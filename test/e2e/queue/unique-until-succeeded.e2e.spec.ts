import type { INestApplication } from '@nestjs/common';
import { Injectable } from '@nestjs/common';
import { Job, JobQueue, type JobHandler, type UniqueOptions } from 'nestjs-durable-jobs';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

// unique: { while: 'until-succeeded' }: the key is held while the job waits, runs, and after it
// failed (until it is retried and succeeds, or pruned); a success, or a cancel, frees it. A real
// worker runs the holders, so each ends the way a job does.

/** Whether the next run of a key fails: the test decides, per key. */
@Injectable()
class Outcomes {
  readonly failing = new Set<string>();
}

@Job('uu-charge', { maxAttempts: 1 })
class Charge implements JobHandler<{ key: string }> {
  constructor(private readonly outcomes: Outcomes) {}
  run({ key }: { key: string }): void {
    if (this.outcomes.failing.has(key)) throw new Error(`card declined (${key})`);
  }
}

const schema = uniqueSchema('uuntil');
let app: INestApplication;
let jobs: JobQueue;
let outcomes: Outcomes;

beforeAll(async () => {
  app = await startJobsApp(schema, { worker: { pollInterval: 50 } }, { providers: [Outcomes, Charge] });
  jobs = app.get(JobQueue);
  outcomes = app.get(Outcomes);
});

afterAll(async () => {
  await app?.close().catch(() => undefined);
  await dropSchemas(schema);
});

const ended = (id: string, state: string) =>
  waitFor(`job ${id} to end ${state}`, async () => (await jobs.get(id))?.state === state);

const charge = (key: string, unique: Omit<UniqueOptions, 'key'>, delay?: number) =>
  jobs.enqueue(Charge, { key }, { unique: { key, ...unique }, ...(delay ? { delay } : {}) });

const jobsOfKey = async (key: string) =>
  sql<{ id: string; state: string }>(`SELECT id, state FROM "${schema}".job WHERE payload->>'key' = $1 ORDER BY id`, [
    key,
  ]);

describe("unique: { while: 'until-succeeded' }", () => {
  it('a failed holder keeps its key: an enqueue of the key returns it, until it is retried and succeeds', async () => {
    outcomes.failing.add('order-1');
    const first = await charge('order-1', { while: 'until-succeeded' });
    expect(first.created).toBe(true);
    await ended(first.id, 'failed');

    // Failed for good, it still holds the key: the duplicate is refused and gets its id.
    expect(await charge('order-1', { while: 'until-succeeded' })).toEqual({ id: first.id, created: false });

    // Retried, and this time it succeeds: that frees the key.
    outcomes.failing.delete('order-1');
    await jobs.retry(first.id);
    await ended(first.id, 'succeeded');
    const next = await charge('order-1', { while: 'until-succeeded' });
    expect(next.created).toBe(true);
    expect(next.id).not.toBe(first.id);
    await ended(next.id, 'succeeded');
    expect(await jobsOfKey('order-1')).toEqual([
      { id: first.id, state: 'succeeded' },
      { id: next.id, state: 'succeeded' },
    ]);
  });

  it("a succeeded holder frees its key at once, and a failed one of the default 'queued-or-active' does too", async () => {
    const done = await charge('order-2', { while: 'until-succeeded' });
    await ended(done.id, 'succeeded');
    const after = await charge('order-2', { while: 'until-succeeded' });
    expect(after.created).toBe(true);
    expect(after.id).not.toBe(done.id);

    // The contrast: a failure frees a key held the default way.
    outcomes.failing.add('order-3');
    const failed = await charge('order-3', {});
    await ended(failed.id, 'failed');
    const again = await charge('order-3', {});
    expect(again.created).toBe(true);
    expect(again.id).not.toBe(failed.id);
  });

  it('a cancelled holder frees its key', async () => {
    const later = await charge('order-4', { while: 'until-succeeded' }, 3_600_000);
    expect(await charge('order-4', { while: 'until-succeeded' })).toEqual({ id: later.id, created: false });
    await jobs.cancel(later.id);
    const fresh = await charge('order-4', { while: 'until-succeeded' });
    expect(fresh.created).toBe(true);
    expect(fresh.id).not.toBe(later.id);
  });
});
