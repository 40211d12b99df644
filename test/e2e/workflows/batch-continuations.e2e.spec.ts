import type { INestApplication } from '@nestjs/common';
import { BatchBuilder, JobQueue } from 'nestjs-durable-jobs';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { GRAPH_RUN_TABLE, graphRuns, GraphStep, graphProviders } from '../../support/graph.jobs.js';
import { startSampleApp } from '../../support/sample-app.js';
import { waitFor } from '../../support/wait.js';

/**
 * Work a member fans out while it runs: continuations belong to its batch
 * (counted, waited for by then/catch/finally), and work placed before the
 * member's dependents holds them back until it has ended.
 */
const schema = uniqueSchema('bcont');
let app: INestApplication;
let jobs: JobQueue;
let batches: BatchBuilder;

const { runs, run } = graphRuns(schema);
const parentsOf = async (id: string) =>
  (
    await sql<{ parent_job_id: string }>(
      `SELECT parent_job_id FROM "${schema}_jobs".job_dependency WHERE child_id = $1 ORDER BY parent_job_id`,
      [id],
    )
  ).map((r) => r.parent_job_id);
const batchUntil = (id: string, state: string) =>
  waitFor(`batch ${id} to be ${state}`, async () => (await jobs.batchStatus(id))?.state === state);
const jobUntil = (id: string, state: string) =>
  waitFor(`job ${id} to be ${state}`, async () => (await jobs.get(id))?.state === state);

beforeAll(async () => {
  app = await startSampleApp({ schema, worker: { concurrency: 8, pollInterval: 100 }, providers: graphProviders });
  await sql(GRAPH_RUN_TABLE(schema));
  jobs = app.get(JobQueue);
  batches = app.get(BatchBuilder);
});

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema, `${schema}_jobs`);
});

describe("a batch member's continuations", () => {
  it('are members of its batch: counted, and then/finally wait for them', async () => {
    const { id } = await batches
      .create('fan-out')
      .add(GraphStep, {
        tag: 'bc-member',
        adds: [
          { tag: 'bc-next', ms: 400, on: 'success' },
          { tag: 'bc-always', ms: 200, on: 'always' },
          { tag: 'bc-never', on: 'failure' },
        ],
      })
      .then(GraphStep, { tag: 'bc-then' })
      .finally(GraphStep, { tag: 'bc-finally' })
      .dispatch();
    await batchUntil(id, 'succeeded');
    expect(await jobs.batchStatus(id)).toMatchObject({ total: 3, succeeded: 3, pending: 0, progress: 1 });
    const members = await jobs.batchMembers(id);
    expect(members.map((m) => m.state)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    const graph = (await jobs.batchGraph(id))!;
    await jobUntil(graph.nodes.find((n) => n.role === 'then')!.id, 'succeeded');
    await jobUntil(graph.nodes.find((n) => n.role === 'finally')!.id, 'succeeded');
    const next = await run('bc-next');
    expect(next.batch_id).toBe(id);
    for (const callback of ['bc-then', 'bc-finally']) {
      expect((await run(callback)).started_at.getTime()).toBeGreaterThanOrEqual(next.ended_at!.getTime());
    }
    expect(await runs('bc-never')).toHaveLength(0);
  });

  it("a continuation's own continuations join the batch too", async () => {
    const { id } = await batches
      .create()
      .add(GraphStep, {
        tag: 'bc2-a',
        adds: [{ tag: 'bc2-b', on: 'success', adds: [{ tag: 'bc2-c', on: 'always', ms: 300 }] }],
      })
      .then(GraphStep, { tag: 'bc2-then' })
      .dispatch();
    await batchUntil(id, 'succeeded');
    expect(await jobs.batchStatus(id)).toMatchObject({ total: 3, succeeded: 3 });
    const c = await run('bc2-c');
    expect(c.batch_id).toBe(id);
    await waitFor('then', async () => (await runs('bc2-then')).length === 1);
    expect((await run('bc2-then')).started_at.getTime()).toBeGreaterThanOrEqual(c.ended_at!.getTime());
  });

  it('a failing member: its own failure continuation runs in the batch, and catch waits for it', async () => {
    const { id } = await batches
      .create()
      .add(GraphStep, { tag: 'bf-member', fail: true, adds: [{ tag: 'bf-undo', ms: 300, on: 'failure' }] })
      .catch(GraphStep, { tag: 'bf-catch' })
      .finally(GraphStep, { tag: 'bf-finally' })
      .dispatch();
    await batchUntil(id, 'failed');
    expect(await jobs.batchStatus(id)).toMatchObject({ total: 2, failed: 1, succeeded: 1, pending: 0 });
    const undo = await run('bf-undo');
    await waitFor('finally', async () => (await runs('bf-finally')).length === 1);
    expect((await run('bf-finally')).started_at.getTime()).toBeGreaterThanOrEqual(undo.ended_at!.getTime());
    // catch runs at the first failure, as for any batch: the member's failure itself.
    expect(await runs('bf-catch')).toHaveLength(1);
  });

  it('staged into a batch that already stopped, it is written cancelled and never runs', async () => {
    const { id } = await batches
      .create()
      .add(GraphStep, { tag: 'bs-bad', fail: true })
      .add(GraphStep, { tag: 'bs-late', afterBatchFailure: true, adds: [{ tag: 'bs-next', on: 'success' }] })
      .finally(GraphStep, { tag: 'bs-finally' })
      .dispatch();
    await batchUntil(id, 'failed');
    await waitFor('finally', async () => (await runs('bs-finally')).length === 1);
    expect(await jobs.batchStatus(id)).toMatchObject({ total: 3, failed: 1, succeeded: 1, cancelled: 1, pending: 0 });
    const cancelled = await jobs.batchMembers(id, { state: 'cancelled' });
    expect(cancelled).toHaveLength(1);
    expect(cancelled[0]!.lastError?.name).toBe('BatchStopped');
    expect(await runs('bs-next')).toHaveLength(0);
  });
});

describe('work placed before the dependents (beforeDependents)', () => {
  it("a flow step's continuation holds back the steps that wait on it", async () => {
    const { ids } = await jobs
      .flow()
      .add('a', GraphStep, { tag: 'bd-a', adds: [{ tag: 'bd-c', ms: 400, on: 'success', beforeDependents: true }] })
      .add('b', GraphStep, { tag: 'bd-b' }, { after: ['a'] })
      .dispatch();
    await jobUntil(ids.b!, 'succeeded');
    const c = await run('bd-c');
    expect((await run('bd-b')).started_at.getTime()).toBeGreaterThanOrEqual(c.ended_at!.getTime());
    expect(await parentsOf(ids.b!)).toHaveLength(2);
  });

  it('a failed one skips the dependents that waited for success; an always dependent still runs after it', async () => {
    const { ids } = await jobs
      .flow()
      .add('a', GraphStep, {
        tag: 'bdf-a',
        adds: [{ tag: 'bdf-c', ms: 200, fail: true, on: 'success', beforeDependents: true }],
      })
      .add('ok', GraphStep, { tag: 'bdf-ok' }, { after: ['a'] })
      .add('cleanup', GraphStep, { tag: 'bdf-cleanup' }, { after: [{ key: 'a', on: 'always' }] })
      .dispatch();
    await jobUntil(ids.ok!, 'skipped');
    await jobUntil(ids.cleanup!, 'succeeded');
    expect((await run('bdf-cleanup')).started_at.getTime()).toBeGreaterThanOrEqual(
      (await run('bdf-c')).ended_at!.getTime(),
    );
    expect(await runs('bdf-ok')).toHaveLength(0);
  });

  it("ctx.addToBatch() before the member's dependents: the next member waits for every part", async () => {
    const parts = [0, 1, 2].map((i) => ({ tag: `bp-part-${i}`, ms: 150 * (i + 1), beforeDependents: true }));
    const { id, ids } = await batches
      .create('parts')
      .add(GraphStep, { tag: 'bp-extract', adds: parts }, { key: 'extract' })
      .add(GraphStep, { tag: 'bp-load' }, { key: 'load', after: ['extract'] })
      .then(GraphStep, { tag: 'bp-then' })
      .dispatch();
    await batchUntil(id, 'succeeded');
    expect(await jobs.batchStatus(id)).toMatchObject({ total: 5, succeeded: 5 });
    const load = await run('bp-load');
    for (const part of await runs('bp-part-')) {
      expect(load.started_at.getTime()).toBeGreaterThanOrEqual(part.ended_at!.getTime());
    }
    expect(await parentsOf(ids.load!)).toHaveLength(4);
  });

  it('without it, added work runs beside the dependents', async () => {
    const { ids } = await jobs
      .flow()
      .add('a', GraphStep, { tag: 'bb-a', adds: [{ tag: 'bb-c', ms: 800, on: 'success' }] })
      .add('b', GraphStep, { tag: 'bb-b' }, { after: ['a'] })
      .dispatch();
    await jobUntil(ids.b!, 'succeeded');
    expect(await parentsOf(ids.b!)).toEqual([ids.a]);
  });

  it('a beforeDependents that is not a boolean fails the attempt with a JobsError naming it', async () => {
    const { ids } = await jobs
      .flow()
      .add('a', GraphStep, {
        tag: 'bx-a',
        adds: [{ tag: 'bx-c', on: 'success', beforeDependents: 'yes' as unknown as boolean }],
      })
      .dispatch();
    await jobUntil(ids.a!, 'failed');
    expect((await jobs.get(ids.a!))!.lastError?.message).toMatch(/"beforeDependents" must be true or false/);
  });
});
