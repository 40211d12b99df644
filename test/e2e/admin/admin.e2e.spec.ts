import type { INestApplication } from '@nestjs/common';
import {
  BatchBuilder,
  JobQueue,
  JobsAdmin,
  JobsError,
  JobsMonitor,
  RecurringSchedules,
  type JobSearch,
  type JobState,
} from 'nestjs-durable-jobs';
import { AdminBackoff, AdminWork, adminProviders, behaviour } from '../../support/admin.jobs.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

const schema = uniqueSchema('admin');
const HOUR = 3_600_000;
let app: INestApplication;
let admin: JobsAdmin;
let jobs: JobQueue;
let batches: BatchBuilder;

const stateOf = async (id: string) => (await jobs.get(id))?.state;
const until = (id: string, state: JobState) =>
  waitFor(`job ${id} to be ${state}`, async () => (await stateOf(id)) === state);
const work = (key: string, options = {}) => jobs.enqueue(AdminWork, { key }, options).then((r) => r.id);
const found = async (filter: JobSearch) => (await admin.search(filter)).jobs.map((j) => j.id);
const newestFirst = (...ids: string[]) => [...ids].sort().reverse();

beforeAll(async () => {
  // The worker serves 'adm' and 'tp'; jobs sent to 'parked' stay queued.
  app = await startJobsApp(
    schema,
    { worker: { concurrency: 8, pollInterval: 100, queues: ['adm', 'tp'] } },
    { providers: adminProviders },
  );
  admin = app.get(JobsAdmin);
  jobs = app.get(JobQueue);
  batches = app.get(BatchBuilder);
});

afterAll(async () => {
  behaviour.releaseAll();
  await app?.close();
  await dropSchemas(schema);
});

describe('JobsAdmin reads', () => {
  const ids: Record<string, string> = {};

  it('searches by state (scheduled included, as the counts read it), queue, name and id prefix, newest first', async () => {
    behaviour.failing.add('s-failed');
    behaviour.holding.add('s-active');
    ids.succeeded = await work('s-ok');
    ids.failed = await work('s-failed');
    ids.queued = await work('s-parked', { queue: 'parked' });
    ids.scheduled = await work('s-later', { delay: HOUR });
    ids.waiting = await work('s-waiting', { after: ids.scheduled });
    ids.active = await work('s-active');
    await until(ids.succeeded, 'succeeded');
    await until(ids.failed, 'failed');
    await until(ids.active, 'active');

    for (const state of ['succeeded', 'failed', 'queued', 'scheduled', 'waiting', 'active'] as const) {
      expect(await found({ state })).toEqual([ids[state]]);
    }
    expect(await found({ state: ['queued', 'scheduled'] })).toEqual(newestFirst(ids.queued!, ids.scheduled!));
    // The counts call the same jobs queued and scheduled.
    const counts = await app.get(JobsMonitor).counts();
    expect(counts.queues.parked!.queued).toBe(1);
    expect(counts.queues.adm!.scheduled).toBe(1);

    expect(await found({ queue: 'parked' })).toEqual([ids.queued]);
    expect(await found({ name: 'admin-backoff' })).toEqual([]);
    expect(await found({})).toEqual(newestFirst(...Object.values(ids)));
    // A prefix long enough to reach an id's random bits names that job alone, with or without dashes.
    expect(await found({ idPrefix: ids.failed!.slice(0, 23) })).toEqual([ids.failed]);
    expect(await found({ idPrefix: ids.failed!.replace(/-/g, '').slice(0, 20).toUpperCase() })).toEqual([ids.failed]);
    expect(await found({ idPrefix: ids.failed!.slice(0, 23), state: 'succeeded' })).toEqual([]);

    // Pages by key: every job once, in one order.
    const seen: string[] = [];
    let page = await admin.search({ limit: 4 });
    seen.push(...page.jobs.map((j) => j.id));
    expect(page.next).toBe(seen[3]);
    page = await admin.search({ limit: 4, before: page.next! });
    seen.push(...page.jobs.map((j) => j.id));
    expect(page.next).toBeNull();
    expect(seen).toEqual(newestFirst(...Object.values(ids)));
  });

  it('refuses bad search filters with a JobsError naming the field and the fix', async () => {
    const refusals: Array<[unknown, RegExp]> = [
      [{ state: 'nope' }, /"state" must be one of waiting, queued, scheduled, .*got the string "nope".*Potential fix/],
      [{ state: [] }, /"state" is an empty array/],
      [{ idPrefix: 'xyz' }, /"idPrefix" must be the start of a job id/],
      [{ idPrefix: '0193-a1' }, /"idPrefix" must be the start of a job id/],
      [{ limit: 0 }, /"limit" must be an integer from 1 to 500/],
      [{ limit: 501 }, /the most is 500.*page with "before/],
      [{ before: 'x' }, /"before" must be an id.*"next" of the previous page/],
      [{ queue: '' }, /"queue" must be a non-empty string/],
      [{ batchId: 'x' }, /is not a batch id/],
      ['failed', /the options must be an object/],
      [{ ids: [ids.failed] }, /"ids" is not a search field. Potential fix: use idPrefix/],
    ];
    for (const [filter, message] of refusals) {
      const error = await admin.search(filter as JobSearch).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(JobsError);
      expect((error as Error).message).toMatch(message);
    }
  });

  it("details a job: its parents and children with each edge's trigger and outcome, and its batch", async () => {
    behaviour.failing.add('det-a');
    const flow = await jobs
      .flow()
      .add('a', AdminWork, { key: 'det-a' })
      .add('b', AdminWork, { key: 'det-b' }, { after: ['a'] })
      .add('c', AdminWork, { key: 'det-c' }, { after: [{ key: 'a', on: 'failure' }] })
      .dispatch();
    const { a, b, c } = flow.ids as Record<string, string>;
    ids.flowBatch = flow.batchId;
    await until(b!, 'skipped');
    await until(c!, 'succeeded');
    const parent = (await admin.detail(a!))!;
    // A flow is written with a batch record: the step's detail shows it, settled with the flow.
    expect(parent).toMatchObject({
      id: a,
      state: 'failed',
      parents: [],
      moreChildren: false,
      batch: { id: flow.batchId, state: 'failed', total: 3, failed: 1, skipped: 1, succeeded: 1 },
    });
    expect(parent.executions).toHaveLength(1);
    expect(parent.children).toEqual(
      [
        { kind: 'job', other: { id: b, name: 'admin-work', state: 'skipped' }, on: 'success', parentOutcome: 'failed' },
        {
          kind: 'job',
          other: { id: c, name: 'admin-work', state: 'succeeded' },
          on: 'failure',
          parentOutcome: 'failed',
        },
      ].sort((x, y) => x.other.id!.localeCompare(y.other.id!)),
    );
    expect((await admin.detail(b!))!.parents).toEqual([
      { kind: 'job', other: { id: a, name: 'admin-work', state: 'failed' }, on: 'success', parentOutcome: 'failed' },
    ]);

    const { id: batchId } = await batches
      .create('det-batch')
      .add(AdminWork, { key: 'det-m1' })
      .add(AdminWork, { key: 'det-m2' })
      .then(AdminWork, { key: 'det-then' })
      .dispatch();
    const graph = (await jobs.batchGraph(batchId))!;
    const then = graph.nodes.find((n) => n.role === 'then')!.id;
    await until(then, 'succeeded');
    const member = graph.nodes.find((n) => n.role === 'member')!.id;
    expect((await admin.detail(member))!.batch).toMatchObject({
      id: batchId,
      name: 'det-batch',
      state: 'succeeded',
      total: 2,
      succeeded: 2,
    });
    expect((await admin.detail(then))!.parents).toEqual([
      {
        kind: 'batch',
        other: { id: batchId, name: 'det-batch', state: 'succeeded' },
        on: 'success',
        parentOutcome: 'succeeded',
      },
    ]);
    ids.batch = batchId;
    ids.member = member;
    expect(await admin.detail('01937c5e-1a2b-7c3d-8e4f-5a6b7c8d9e0f')).toBeNull();
    await expect(admin.detail('not-a-uuid')).rejects.toThrow(
      /JobsAdmin.detail\(\): the string "not-a-uuid" is not a job id/,
    );
  });

  it('lists batches newest first with their counts, by state and name, page by page', async () => {
    const { id: open } = await batches
      .create('open-batch')
      .add(AdminWork, { key: 'lb-later' }, { delay: HOUR })
      .dispatch();
    const all = await admin.listBatches();
    // The flow of the test before has a batch record too, the oldest of the three.
    expect(all.batches.map((b) => b.id)).toEqual([open, ids.batch, ids.flowBatch]);
    expect(all.batches[0]).toMatchObject({ name: 'open-batch', state: 'executing', total: 1, pending: 1, progress: 0 });
    expect(all.batches[1]).toMatchObject({
      name: 'det-batch',
      state: 'succeeded',
      total: 2,
      succeeded: 2,
      progress: 1,
    });
    expect((await admin.listBatches({ state: 'executing' })).batches.map((b) => b.id)).toEqual([open]);
    expect((await admin.listBatches({ name: 'det-batch' })).batches.map((b) => b.id)).toEqual([ids.batch]);
    const first = await admin.listBatches({ limit: 1 });
    expect(first).toMatchObject({ batches: [{ id: open }], next: open });
    const second = await admin.listBatches({ limit: 1, before: first.next! });
    expect(second).toMatchObject({ batches: [{ id: ids.batch }], next: ids.batch });
    expect(await admin.listBatches({ limit: 1, before: second.next! })).toMatchObject({
      batches: [{ id: ids.flowBatch }],
      next: null,
    });
    await expect(admin.listBatches({ state: 'done' as never })).rejects.toThrow(
      /"state" must be one of executing, succeeded, failed, cancelled/,
    );
    await jobs.cancelBatch(open);
  });

  it('counts jobs that succeeded and failed per queue and minute, every minute of the window present', async () => {
    behaviour.failing.add('tp-bad');
    const done = [
      ...(await Promise.all([1, 2, 3].map((i) => work(`tp-ok-${i}`, { queue: 'tp' })))),
      ...(await Promise.all([1, 2].map(() => work('tp-bad', { queue: 'tp' })))),
    ];
    for (const id of done)
      await waitFor(`${id} to end`, async () => ['succeeded', 'failed'].includes((await stateOf(id))!));
    const result = await admin.throughput({ minutes: 10, queue: 'tp' });
    expect(Object.keys(result.queues)).toEqual(['tp']);
    const points = result.queues.tp!;
    expect(points).toHaveLength(10);
    expect(points.reduce((n, p) => n + p.succeeded, 0)).toBe(3);
    expect(points.reduce((n, p) => n + p.failed, 0)).toBe(2);
    points.forEach((p, i) => expect(p.minute.getTime()).toBe(result.since.getTime() + i * 60_000));
    expect(result.until.getTime() - result.since.getTime()).toBe(10 * 60_000);
    expect(result.until.getTime()).toBeGreaterThan(Date.now());
    expect(Object.keys((await admin.throughput()).queues).sort()).toEqual(['adm', 'tp']);
    await expect(admin.throughput({ minutes: 0 })).rejects.toThrow(/"minutes" must be an integer from 1 to 1440/);
    await expect(admin.throughput({ minutes: '5' as never })).rejects.toThrow(/got the string "5"/);
  });
});

describe('JobsAdmin single-job actions', () => {
  it('deletes an ended job with its history, and refuses live jobs, batch members and parents a live job waits on', async () => {
    const done = await work('del-ok');
    await until(done, 'succeeded');
    expect(await admin.delete(done)).toEqual({ id: done, state: 'succeeded' });
    expect(await jobs.get(done)).toBeNull();
    const history = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".job_execution WHERE job_id = $1`,
      [done],
    );
    expect(history[0]!.n).toBe(0);

    const queued = await work('del-parked', { queue: 'parked' });
    await expect(admin.delete(queued)).rejects.toThrow(
      /the job is "queued"; only ended jobs .* Potential fix: cancel\(\)/,
    );
    behaviour.holding.add('del-active');
    const active = await work('del-active');
    await until(active, 'active');
    await expect(admin.delete(active)).rejects.toThrow(/the job is "active"/);
    behaviour.releaseAll();

    const { id: batchId } = await batches.create().add(AdminWork, { key: 'del-member' }).dispatch();
    const member = (await jobs.batchMembers(batchId))[0]!.id;
    await until(member, 'succeeded');
    await expect(admin.delete(member)).rejects.toThrow(
      new RegExp(`member of batch ${batchId}.*deleteBatch\\('${batchId}'\\)`),
    );

    // A failed parent whose child still waits (on another parent too): deleting it would drop the edge the child reads.
    behaviour.failing.add('del-parent');
    const later = await work('del-later', { delay: HOUR });
    const parent = await work('del-parent');
    await expect(work('del-child', { after: [parent, later] })).rejects.toThrow(
      /"after" entry 0 is not \{ job: id \} or \{ batch: id \} with a valid id \(got the string/,
    );
    const child = await work('del-child', { after: [{ job: parent }, { job: later }] });
    await until(parent, 'failed');
    await expect(admin.delete(parent)).rejects.toThrow(/1 live job\(s\) wait on it.*Potential fix/);
    await jobs.cancel(child);
    expect(await admin.delete(parent)).toEqual({ id: parent, state: 'failed' });

    behaviour.failing.add('del-hook');
    const hooked = await work('del-hook');
    await until(hooked, 'failed');
    await sql(`UPDATE "${schema}".job SET failure_hook = 'pending' WHERE id = $1`, [hooked]);
    await expect(admin.delete(hooked)).rejects.toThrow(/onFailure hook has not run yet/);

    await expect(admin.delete('01937c5e-1a2b-7c3d-8e4f-5a6b7c8d9e0f')).rejects.toThrow(/no such job/);
    const malformed = (await admin.delete('not-a-uuid').catch((e: unknown) => e)) as Error;
    expect(malformed).toBeInstanceOf(JobsError);
    expect(malformed.message).toMatch(/is not a job id/);
    expect(malformed.message).not.toMatch(/invalid input syntax/);
  });

  it('runs a delayed job or one waiting on its backoff now, and refuses every other job', async () => {
    const delayed = await work('rn-later', { delay: HOUR });
    const moved = await admin.runNow(delayed);
    expect(moved).toMatchObject({ id: delayed, queue: 'adm' });
    expect(moved.previousRunAt.getTime()).toBeGreaterThan(Date.now() + HOUR / 2);
    await until(delayed, 'succeeded');

    const { id: backoff } = await jobs.enqueue(AdminBackoff, {});
    await waitFor('the first attempt to fail into its backoff', async () => {
      const job = await jobs.get(backoff);
      return job?.state === 'queued' && job.attempt === 1;
    });
    await admin.runNow(backoff);
    await until(backoff, 'succeeded');
    expect((await jobs.get(backoff))!.attempt).toBe(2);

    const due = await work('rn-parked', { queue: 'parked' });
    await expect(admin.runNow(due)).rejects.toThrow(/already due .* Potential fix: .*JobsMonitor.workers\(\)/);
    await expect(admin.runNow(delayed)).rejects.toThrow(/the job is "succeeded".*retry\(\)/);
    const later = await work('rn-parent', { delay: HOUR });
    const waiting = await work('rn-waiting', { after: later });
    await expect(admin.runNow(waiting)).rejects.toThrow(/the job is "waiting".*once its parents have ended/);
    behaviour.holding.add('rn-active');
    const active = await work('rn-active');
    await until(active, 'active');
    await expect(admin.runNow(active)).rejects.toThrow(/the job is "active".*running already/);
    behaviour.releaseAll();
    await expect(admin.runNow('01937c5e-1a2b-7c3d-8e4f-5a6b7c8d9e0f')).rejects.toThrow(/no such job/);
    await expect(admin.runNow('nope')).rejects.toThrow(/JobsAdmin.runNow\(\): the string "nope" is not a job id/);
  });
});

describe('JobsAdmin schedules and queues', () => {
  it('runs a schedule now, outside its timing; with overlap skip, not while its last run is live', async () => {
    const schedules = app.get(RecurringSchedules);
    await schedules.upsert('adm-yearly', AdminWork, '0 0 1 1 *', { payload: { key: 'sched-now' } });
    const before = (await schedules.get('adm-yearly'))!;
    const { jobId } = await admin.runSchedule('adm-yearly');
    await until(jobId, 'succeeded');
    const after = (await admin.listSchedules()).find((s) => s.name === 'adm-yearly')!;
    expect(after).toMatchObject({ lastJobId: jobId, lastJobState: 'succeeded', nextRunAt: before.nextRunAt });
    expect(after.lastRunAt).not.toBeNull();

    behaviour.holding.add('sched-hold');
    await schedules.upsert('adm-skip', AdminWork, '0 0 1 1 *', { payload: { key: 'sched-hold' }, overlap: 'skip' });
    const first = await admin.runSchedule('adm-skip');
    await until(first.jobId, 'active');
    await expect(admin.runSchedule('adm-skip')).rejects.toThrow(
      new RegExp(
        `last run \\(job ${first.jobId}\\) is still active, and the schedule's overlap is 'skip'.*Potential fix`,
      ),
    );
    behaviour.releaseAll();
    await until(first.jobId, 'succeeded');
    const second = await admin.runSchedule('adm-skip');
    await until(second.jobId, 'succeeded');

    const paused = await admin.pauseSchedule('adm-yearly');
    expect(paused).toMatchObject({ name: 'adm-yearly', paused: true, nextRunAt: null });
    const resumed = await admin.resumeSchedule('adm-yearly');
    expect(resumed.paused).toBe(false);
    expect(resumed.nextRunAt).toBeInstanceOf(Date);
    await expect(admin.runSchedule('no-such')).rejects.toThrow(/no schedule has this name/);
    await expect(admin.pauseSchedule('')).rejects.toThrow(/"name" must be a non-empty string/);
  });

  it('pauses and resumes a queue through JobQueues, and lists queues', async () => {
    await admin.pauseQueue('adm');
    expect((await admin.listQueues()).find((q) => q.name === 'adm')).toMatchObject({ paused: true });
    await admin.resumeQueue('adm');
    expect((await admin.listQueues()).find((q) => q.name === 'adm')).toMatchObject({ paused: false });
    await expect(admin.pauseQueue('no-such-queue')).rejects.toThrow(/no queue "no-such-queue"[\s\S]*Potential fix/);
    await expect(admin.pauseQueue(42 as never)).rejects.toThrow(/"queue" must be a non-empty string, got 42/);
  });
});
