import type { INestApplication } from '@nestjs/common';
import { workerStorage } from '../../support/job-storage.js';
import { JobQueue, JobQueues } from 'nestjs-durable-jobs';
import { RATE_START_LAG_MS } from '../../../lib/model/index.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { flowProviders, NamedWork, Work } from '../../support/flow.jobs.js';
import { startJobsApp } from '../../support/jobs-app.js';

/**
 * A rate limit's window follows the order in which claims take their turns,
 * not the clocks that stamped them. Each caller stamps its claim before it
 * waits for the queue's lock, so one stamped earlier can take its turn after
 * one stamped later (a busy instance, a slow network, a clock behind). Read
 * off the storage with the stamps chosen by hand, the case that let 61 jobs
 * start within one second under a limit of 50 in a three-instance test.
 * Which jobs are due still goes by the caller's clock. A start counts for the
 * window plus the start lag L (RATE_START_LAG_MS): the times below are offsets
 * past t0 + L.
 */
const L = RATE_START_LAG_MS;
let app: INestApplication | undefined;
const schema = uniqueSchema('fcratewin');

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema);
});

/** The claims below, by hand-chosen stamps, against a limit of five a second; returns what the late one got. */
async function lateClaim(
  claim: (offsetMs: number, limit: number) => Promise<number>,
  beforeLate: () => Promise<void>,
): Promise<number> {
  // Five start at t0 + 8: the window is full until t0 + L + 1008.
  expect(await claim(8, 5)).toBe(5);
  // A claim stamped t0 + L + 1010 takes its turn: the five have left its window; it starts one.
  expect(await claim(L + 1_010, 1)).toBe(1);
  // Then one stamped t0 + L + 1007, before them in time but after them in turn. At its own stamp
  // the five of t0 + 8 are still in the window (full: none may start); at the time of the turn
  // before it, t0 + L + 1010, one start is in the window and four may start. Either is within the
  // limit, but four stamped t0 + L + 1007 beside the five of t0 + 8 would be nine in one window.
  await beforeLate();
  return claim(L + 1_007, 5);
}

/** The most starts, by the jobs' own started_at, within any one second; and how many began at `at`. */
async function busiestSecond(at: number): Promise<{ busiest: number; total: number; atTurn: number }> {
  const starts = (
    await sql<{ t: Date }>(
      `SELECT started_at AS t FROM "${schema}".job WHERE started_at IS NOT NULL ORDER BY started_at`,
    )
  ).map((r) => r.t.getTime());
  let busiest = 0;
  for (let i = 0, j = 0; i < starts.length; i++) {
    while (starts[j]! <= starts[i]! - 1_000) j++;
    busiest = Math.max(busiest, i - j + 1);
  }
  return { busiest, total: starts.length, atTurn: starts.filter((t) => t === at).length };
}

it('counts a claim stamped earlier but served later at the time of the turn before it', async () => {
  app = await startJobsApp(
    schema,
    { worker: { enabled: false }, queues: { rated: { rateLimit: { max: 5, per: 1_000 } } } },
    { providers: flowProviders(schema) },
  );
  const storage = workerStorage(app);
  await app
    .get(JobQueue)
    .enqueueMany(Array.from({ length: 20 }, () => ({ job: Work, payload: {}, options: { queue: 'rated' } })));
  // A job name's own rate limit, in a queue of its own, is counted the same way.
  await app
    .get(JobQueues)
    .setLimits('named', { concurrency: null, rateLimit: { max: 5, per: 1_000 } }, { job: 'fc-named' });
  await app.get(JobQueue).enqueueMany(Array.from({ length: 20 }, () => ({ job: NamedWork, payload: {} })));

  for (const [queue, name] of [
    ['rated', 'fc-work'],
    ['named', 'fc-named'],
  ] as const) {
    await sql(`UPDATE "${schema}".job SET state = 'succeeded', lease_expires_at = NULL WHERE state = 'active'`);
    await sql(`UPDATE "${schema}".job SET started_at = NULL WHERE state = 'succeeded'`);
    const t0 = Date.now();
    let scheduled = '';
    const late = await lateClaim(
      async (offsetMs, limit) => {
        const now = new Date(t0 + offsetMs);
        const { jobs } = await storage.claims.claimControlled({
          workerId: 'w',
          queue,
          names: [name],
          limit,
          now,
          leaseMs: 60_000,
        });
        return jobs.length;
      },
      async () => {
        // Due at the turn's time but not yet by the late claim's own clock, and first in line if due.
        const options = { queue, runAt: new Date(t0 + L + 1_009), priority: 10 };
        scheduled = (await app!.get(JobQueue).enqueue(name, {}, options)).id;
      },
    );
    const seen = await busiestSecond(t0 + L + 1_010);
    // Whatever it took, no second holds more than five starts.
    expect({ queue, busiest: seen.busiest, total: seen.total }).toEqual({ queue, busiest: 5, total: 6 + late });
    // And it was served at the later time: four started, stamped t0 + L + 1010 like the one before them.
    expect({ queue, late, atTurn: seen.atTurn }).toEqual({ queue, late: 4, atTurn: 5 });
    // Which jobs are due still goes by the caller's clock: the one due at t0 + L + 1009 waits.
    expect((await app.get(JobQueue).get(scheduled))?.state).toBe('queued');
  }
});
