import { JobQueue, JobQueues } from 'nestjs-durable-jobs';
import type { ClaimedJob, FinishedAttempt } from '../../../lib/model/index.js';
import type { ClaimRequest } from '../../../lib/storage/jobs/claim/claim-storage.interface.js';
import { flowApps, limitedQueueOf } from '../../support/flow-apps.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { Work } from '../../support/flow.jobs.js';
import { workerStorage } from '../../support/job-storage.js';
import { maxOverlap } from '../../support/samplers.js';
import { waitFor } from '../../support/wait.js';

/**
 * Jobs claimed ahead for a queue limited as a whole: uncounted by the limit,
 * started in the place of a success, counted by that success's write.
 */
const schemas: string[] = [];
const { apps, boot } = flowApps();

afterEach(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
});

afterAll(async () => {
  await dropSchemas(...schemas);
});

const request = (workerId: string, limit: number, ahead: number): ClaimRequest => ({
  workerId,
  queue: 'limited',
  names: ['fc-work'],
  limit,
  ahead,
  now: new Date(),
  leaseMs: 30_000,
});

const succeeded = (job: ClaimedJob, successor?: ClaimedJob): FinishedAttempt =>
  successor
    ? { job, outcome: { kind: 'succeeded', result: null }, successor: successor.id }
    : { job, outcome: { kind: 'succeeded', result: null } };

describe('a claim ahead, in the database', () => {
  it('is uncounted, no larger than the counted jobs, counted by the success it follows, and taken first by a claim with room', async () => {
    const schema = uniqueSchema('fcahead');
    schemas.push(schema);
    const { app, order } = await limitedQueueOf(boot, schema, 2, 8);
    const storage = workerStorage(app);
    const seqs = (jobs: readonly ClaimedJob[]) => jobs.map((j) => `${order.indexOf(j.id)}${j.claimedAhead ? '+' : ''}`);
    const held = async () =>
      (
        await sql<{ id: string; worker_id: string; reserved: boolean }>(
          `SELECT id, worker_id, reserved FROM "${schema}".job WHERE state = 'active'`,
        )
      )
        .map((r) => `${r.worker_id}:${order.indexOf(r.id)}${r.reserved ? '+' : ''}`)
        .sort();

    // One counted job, and one ahead: never more ahead than counted, however many are asked for.
    const first = await storage.claims.claimControlled(request('a', 1, 10));
    expect(seqs(first.jobs)).toEqual(['0', '1+']);
    // The limit counts one of a's two: b gets the other slot, and its own one ahead.
    const second = await storage.claims.claimControlled(request('b', 5, 10));
    expect(seqs(second.jobs)).toEqual(['2', '3+']);
    expect(await held()).toEqual(['a:0', 'a:1+', 'b:2', 'b:3+']);

    // a's job 0 succeeds with job 1 started in its place: 1 is counted from this write on, and
    // the write claims a's next one ahead (no counted slot is free: it asked for none).
    const [job0, job1] = first.jobs;
    const swap = await storage.outcomes.finishAndClaim('a', [succeeded(job0!, job1)], new Date(), 30_000, {
      ...request('a', 0, 10),
    });
    expect([...swap.applied]).toEqual([job0!.id]);
    expect(seqs(swap.claimed.jobs)).toEqual(['4+']);
    expect(await held()).toEqual(['a:1', 'a:4+', 'b:2', 'b:3+']);

    // A success the fence refuses (b does not hold job 1) counts nothing in its place.
    const fenced = await storage.outcomes.finish('b', [succeeded(job1!, second.jobs[1])], new Date(), 30_000);
    expect(fenced.size).toBe(0);
    expect(await held()).toEqual(['a:1', 'a:4+', 'b:2', 'b:3+']);

    // b's job 2 fails: no job follows it. b's next claim finds the slot free and takes its own
    // job ahead first, returned by id only, then one more ahead.
    await storage.outcomes.finish(
      'b',
      [{ job: second.jobs[0]!, outcome: { kind: 'failed', error: { name: 'Error', message: 'x' }, hook: false } }],
      new Date(),
      30_000,
    );
    const again = await storage.claims.claimControlled(request('b', 5, 10));
    expect(again.counted).toEqual([second.jobs[1]!.id]);
    expect(seqs(again.jobs)).toEqual(['5+']);
    expect(await held()).toEqual(['a:1', 'a:4+', 'b:3', 'b:5+']);

    // Lowered below what is counted: nothing more is claimed ahead, and what was goes on.
    await sql(`UPDATE "${schema}".job_queue SET concurrency = 1 WHERE name = 'limited'`);
    const past = await storage.outcomes.finishAndClaim(
      'a',
      [succeeded(job1!, swap.claimed.jobs[0])],
      new Date(),
      30_000,
      request('a', 0, 10),
    );
    expect(past.claimed.jobs).toEqual([]);
    expect(await held()).toEqual(['a:4', 'b:3', 'b:5+']);
  });
});

describe('jobs claimed ahead, on a worker', () => {
  /** One instance of one slot under a limit of one: its first claim takes a job and the next ahead. */
  const oneSlot = {
    worker: { concurrency: 1, pollInterval: 100, queues: ['limited'] },
    queues: { limited: { concurrency: 1 } },
  };
  const row = async (schema: string, id: string) =>
    (
      await sql<{ state: string; attempt: number; reserved: boolean }>(
        `SELECT state, attempt, reserved FROM "${schema}".job WHERE id = $1`,
        [id],
      )
    )[0]!;
  const aheadOf = (schema: string, id: string) => async () => (await row(schema, id)).reserved;

  it('run after a job they were to follow failed: the next claim counts them', async () => {
    const schema = uniqueSchema('fcafail');
    schemas.push(schema);
    const app = await boot(schema, oneSlot);
    const [failing, next, last] = await app.get(JobQueue).enqueueMany([
      { job: Work, payload: { ms: 300, fail: true }, options: { queue: 'limited' } },
      { job: Work, payload: {}, options: { queue: 'limited' } },
      { job: Work, payload: {}, options: { queue: 'limited' } },
    ]);
    await waitFor('the second job to be claimed ahead', aheadOf(schema, next!.id), 10_000);
    await waitFor('every job to end', async () => (await row(schema, last!.id)).state === 'succeeded', 10_000);
    expect(await row(schema, failing!.id)).toMatchObject({ state: 'failed', attempt: 1 });
    expect(await row(schema, next!.id)).toMatchObject({ state: 'succeeded', attempt: 1 });
    expect(await maxOverlap(schema, 'limited')).toBe(1);
  });

  it('go back to the queue unspent when it is paused, and run once it is resumed', async () => {
    const schema = uniqueSchema('fcapause');
    schemas.push(schema);
    const app = await boot(schema, oneSlot);
    const [first, second] = await app.get(JobQueue).enqueueMany([
      { job: Work, payload: { ms: 1500 }, options: { queue: 'limited' } },
      { job: Work, payload: {}, options: { queue: 'limited' } },
    ]);
    await waitFor('the second job to be claimed ahead', aheadOf(schema, second!.id), 10_000);
    await app.get(JobQueues).pause('limited');
    await waitFor(
      'the job claimed ahead to be handed back',
      async () => (await row(schema, second!.id)).state === 'queued',
      10_000,
    );
    expect(await row(schema, second!.id)).toMatchObject({ attempt: 0 });
    expect((await row(schema, first!.id)).state).toBe('active');
    await waitFor('the first job to end', async () => (await row(schema, first!.id)).state === 'succeeded', 10_000);
    expect((await row(schema, second!.id)).state).toBe('queued');
    await app.get(JobQueues).resume('limited');
    await waitFor('the second job to run', async () => (await row(schema, second!.id)).state === 'succeeded', 10_000);
    expect(await row(schema, second!.id)).toMatchObject({ attempt: 1 });
  });

  it('is cancelled where it waits, and never runs', async () => {
    const schema = uniqueSchema('fcacancel');
    schemas.push(schema);
    const app = await boot(schema, oneSlot);
    const queue = app.get(JobQueue);
    const [first, second] = await queue.enqueueMany([
      { job: Work, payload: { ms: 1500 }, options: { queue: 'limited' } },
      { job: Work, payload: {}, options: { queue: 'limited' } },
    ]);
    await waitFor('the second job to be claimed ahead', aheadOf(schema, second!.id), 10_000);
    await queue.cancel(second!.id);
    await waitFor('the cancel', async () => (await row(schema, second!.id)).state === 'cancelled', 10_000);
    expect((await row(schema, first!.id)).state).toBe('active');
    await waitFor('the first job to end', async () => (await row(schema, first!.id)).state === 'succeeded', 10_000);
    const ran = await sql<{ job_id: string }>(`SELECT job_id FROM "${schema}".fc_run`);
    expect(ran.map((r) => r.job_id)).toEqual([first!.id]);
  });
});
