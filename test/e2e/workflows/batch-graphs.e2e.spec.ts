import type { INestApplication } from '@nestjs/common';
import { BatchBuilder, JobQueue, JobsError } from 'nestjs-durable-jobs';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { GRAPH_RUN_TABLE, graphRuns, GraphStep, GraphTick, graphProviders } from '../../support/graph.jobs.js';
import { startSampleApp } from '../../support/sample-app.js';
import { waitFor } from '../../support/wait.js';

/**
 * A batch whose members wait on each other and on jobs or batches outside
 * it, with one record; a flow with the same record; what each refuses.
 */
const schema = uniqueSchema('bgraph');
let app: INestApplication;
let jobs: JobQueue;
let batches: BatchBuilder;

const { runs, run } = graphRuns(schema);
const jobRows = async () => (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}_jobs".job`))[0]!.n;
const batchRows = async () =>
  (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}_jobs".job_batch`))[0]!.n;
const batchUntil = (id: string, state: string) =>
  waitFor(`batch ${id} to be ${state}`, async () => (await jobs.batchStatus(id))?.state === state, 120_000);
const jobUntil = (id: string, state: string) =>
  waitFor(`job ${id} to be ${state}`, async () => (await jobs.get(id))?.state === state);
/** Runs of the batch's jobs that started before one of their parents ended: none, in a DAG that holds. */
const startedEarly = async (batchId: string) =>
  (
    await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}_jobs".job_dependency d
         JOIN "${schema}".graph_run c ON c.job_id = d.child_id
         JOIN "${schema}".graph_run p ON p.job_id = d.parent_job_id
        WHERE c.batch_id = $1 AND c.started_at < p.ended_at`,
      [batchId],
    )
  )[0]!.n;

beforeAll(async () => {
  app = await startSampleApp({ schema, worker: { concurrency: 20, pollInterval: 100 }, providers: graphProviders });
  await sql(GRAPH_RUN_TABLE(schema));
  jobs = app.get(JobQueue);
  batches = app.get(BatchBuilder);
});

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema, `${schema}_jobs`);
});

describe('a batch that is a DAG', () => {
  it('members wait on members and on a job and a batch outside it; one record, callbacks once', async () => {
    const outsideJob = await jobs.enqueue(GraphStep, { tag: 'dag-outside-job', ms: 300 });
    const outside = await batches.create().add(GraphStep, { tag: 'dag-outside-batch', ms: 200 }).dispatch();
    const { id, ids } = await batches
      .create('etl')
      .add(GraphStep, { tag: 'dag-extract', ms: 100 }, { key: 'extract' })
      .add(GraphStep, { tag: 'dag-clean' }, { key: 'clean', after: ['extract', { job: outsideJob.id }] })
      .add(GraphStep, { tag: 'dag-enrich', ms: 100 }, { key: 'enrich', after: ['extract'] })
      .add(GraphStep, { tag: 'dag-load' }, { key: 'load', after: ['clean', 'enrich', { batch: outside.id }] })
      .add(GraphStep, { tag: 'dag-loose' })
      .then(GraphStep, { tag: 'dag-then' })
      .catch(GraphStep, { tag: 'dag-catch' })
      .finally(GraphStep, { tag: 'dag-finally' })
      .dispatch();
    expect(Object.keys(ids).sort()).toEqual(['clean', 'enrich', 'extract', 'load']);
    const early = await jobs.batchStatus(id);
    expect(early).toMatchObject({ name: 'etl', total: 5, state: 'executing' });
    await batchUntil(id, 'succeeded');
    expect(await jobs.batchStatus(id)).toMatchObject({ total: 5, succeeded: 5, pending: 0, progress: 1 });
    await waitFor('finally', async () => (await runs('dag-finally')).length === 1);
    await waitFor('then', async () => (await runs('dag-then')).length === 1);
    expect(await runs('dag-catch')).toHaveLength(0);
    expect(await startedEarly(id)).toBe(0);
    expect((await run('dag-clean')).started_at.getTime()).toBeGreaterThanOrEqual(
      (await run('dag-outside-job')).ended_at!.getTime(),
    );
    expect((await run('dag-load')).started_at.getTime()).toBeGreaterThanOrEqual(
      (await run('dag-outside-batch')).ended_at!.getTime(),
    );
    for (const tag of ['dag-extract', 'dag-clean', 'dag-enrich', 'dag-load', 'dag-loose']) {
      expect((await run(tag)).batch_id).toBe(id);
    }
    const graph = (await jobs.batchGraph(id))!;
    const edges = graph.edges.map((e) => `${e.from}>${e.to}`);
    expect(edges).toEqual(
      expect.arrayContaining([
        `${ids.extract}>${ids.clean}`,
        `${ids.enrich}>${ids.load}`,
        `${outsideJob.id}>${ids.clean}`,
      ]),
    );
  });

  it('a member whose outside parent already ended otherwise is skipped at dispatch, and its dependents with it', async () => {
    const failed = await jobs.enqueue(GraphStep, { tag: 'skip-parent', fail: true });
    await jobUntil(failed.id, 'failed');
    const { id, ids } = await batches
      .create()
      .add(GraphStep, { tag: 'skip-a' }, { key: 'a', after: [{ job: failed.id }] })
      .add(GraphStep, { tag: 'skip-b' }, { key: 'b', after: ['a'] })
      .add(GraphStep, { tag: 'skip-c' }, { key: 'c' })
      .allowFailures()
      .finally(GraphStep, { tag: 'skip-finally' })
      .dispatch();
    expect((await jobs.get(ids.a!))!.state).toBe('skipped');
    await batchUntil(id, 'failed');
    expect(await jobs.batchStatus(id)).toMatchObject({ total: 3, skipped: 2, succeeded: 1, pending: 0 });
    await waitFor('finally', async () => (await runs('skip-finally')).length === 1);
    expect(await runs('skip-a')).toHaveLength(0);
    expect(await runs('skip-b')).toHaveLength(0);
  });

  it('a failed member with allowFailures skips its dependents, runs its failure edges and the rest', async () => {
    const { id } = await batches
      .create()
      .add(GraphStep, { tag: 'af-a', fail: true }, { key: 'a' })
      .add(GraphStep, { tag: 'af-next' }, { key: 'next', after: ['a'] })
      .add(GraphStep, { tag: 'af-undo' }, { key: 'undo', after: [{ key: 'a', on: 'failure' }] })
      .add(GraphStep, { tag: 'af-other', ms: 200 })
      .allowFailures()
      .dispatch();
    await batchUntil(id, 'failed');
    expect(await jobs.batchStatus(id)).toMatchObject({ total: 4, failed: 1, skipped: 1, succeeded: 2 });
    expect(await runs('af-undo')).toHaveLength(1);
    expect(await runs('af-next')).toHaveLength(0);
  });

  it('cancelBatch() cancels the waiting members with the queued ones; deleteBatch() removes it whole', async () => {
    const { id, ids } = await batches
      .create()
      .add(GraphStep, { tag: 'cx-first', ms: 10_000 }, { key: 'first' })
      .add(GraphStep, { tag: 'cx-second' }, { key: 'second', after: ['first'] })
      .add(GraphStep, { tag: 'cx-third' }, { key: 'third', after: ['second'] })
      .dispatch();
    await waitFor('the first member to start', async () => (await runs('cx-first')).length === 1);
    await jobs.cancelBatch(id);
    await batchUntil(id, 'cancelled');
    for (const key of ['first', 'second', 'third']) expect((await jobs.get(ids[key]!))!.state).toBe('cancelled');
    await jobs.deleteBatch(id);
    expect(await jobs.batchStatus(id)).toBeNull();
    expect(await jobs.get(ids.third!)).toBeNull();
  });

  it('bad edges are refused at dispatch with a JobsError, and nothing of the batch is written', async () => {
    const before = [await jobRows(), await batchRows()];
    const missing = '01a24000-0000-7000-8000-000000000000';
    const cases: Array<[() => Promise<unknown>, RegExp]> = [
      [
        () =>
          batches
            .create('cycle')
            .add(GraphStep, { tag: 'x' }, { key: 'a', after: ['c'] })
            .add(GraphStep, { tag: 'x' }, { key: 'b', after: ['a'] })
            .add(GraphStep, { tag: 'x' }, { key: 'c', after: ['b'] })
            .dispatch(),
        /batch "cycle": the dependencies form a cycle: .*Nothing was written/,
      ],
      [
        () =>
          batches
            .create()
            .add(GraphStep, { tag: 'x' }, { key: 'a', after: ['nope'] })
            .dispatch(),
        /member "a" waits on "nope", which is not in the batch/,
      ],
      [
        () =>
          batches
            .create()
            .add(GraphStep, { tag: 'x' }, { after: [{ job: missing }] })
            .dispatch(),
        /member 0: the parent job 01a24000-.* does not exist, so nothing was written/,
      ],
      [
        () =>
          batches
            .create()
            .add(GraphStep, { tag: 'x' }, { key: 'a' })
            .add(GraphStep, { tag: 'x' }, { key: 'a' })
            .dispatch(),
        /the key "a" is used twice/,
      ],
      [
        () =>
          batches
            .create()
            .add(GraphStep, { tag: 'x' }, { key: 'a' })
            .add(GraphStep, { tag: 'x' }, { after: [{ key: 'a', on: 'failure' }] })
            .dispatch(),
        /waits on the failure of "a".*Potential fix: call allowFailures\(\)/,
      ],
    ];
    for (const [call, message] of cases) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(JobsError);
      expect((error as Error).message).toMatch(message);
    }
    expect(() => batches.create().add(GraphStep, { tag: 'x' }, { after: [{ job: 'not-an-id' }] })).toThrow(
      /"after" entry 0 has job the string "not-an-id", not an id/,
    );
    expect(() => batches.create().add(GraphStep, { tag: 'x' }, { key: '' })).toThrow(
      /"key" must be a non-empty string/,
    );
    expect([await jobRows(), await batchRows()]).toEqual(before);
  });
});

describe('a flow has a batch record', () => {
  it('status, then/finally, ctx.batchId, and cancel as one', async () => {
    const { ids, batchId } = await jobs
      .flow('publish')
      .add('draft', GraphStep, { tag: 'fl-draft' })
      .add('review', GraphStep, { tag: 'fl-review', ms: 100 }, { after: ['draft'] })
      .then(GraphStep, { tag: 'fl-then' })
      .finally(GraphStep, { tag: 'fl-finally' })
      .dispatch();
    await batchUntil(batchId, 'succeeded');
    expect(await jobs.batchStatus(batchId)).toMatchObject({ name: 'publish', total: 2, succeeded: 2 });
    await waitFor(
      'then and finally',
      async () => (await runs('fl-then')).length + (await runs('fl-finally')).length === 2,
    );
    expect((await run('fl-review')).batch_id).toBe(batchId);
    expect((await jobs.batchMembers(batchId)).map((m) => m.id).sort()).toEqual([ids.draft, ids.review].sort());

    const slow = await jobs
      .flow()
      .add('long', GraphStep, { tag: 'flc-long', ms: 10_000 })
      .add('after', GraphStep, { tag: 'flc-after' }, { after: ['long'] })
      .dispatch();
    await waitFor('the long step to start', async () => (await runs('flc-long')).length === 1);
    await jobs.cancelBatch(slow.batchId);
    await batchUntil(slow.batchId, 'cancelled');
    expect((await jobs.get(slow.ids.after!))!.state).toBe('cancelled');
  });

  it("a failed step cancels nothing else: a flow's batch allows failures", async () => {
    const { ids, batchId } = await jobs
      .flow()
      .add('bad', GraphStep, { tag: 'ff-bad', fail: true })
      .add('good', GraphStep, { tag: 'ff-good', ms: 300 })
      .add('undo', GraphStep, { tag: 'ff-undo' }, { after: [{ key: 'bad', on: 'failure' }] })
      .catch(GraphStep, { tag: 'ff-catch' })
      .dispatch();
    await batchUntil(batchId, 'failed');
    expect((await jobs.get(ids.good!))!.state).toBe('succeeded');
    expect((await jobs.get(ids.undo!))!.state).toBe('succeeded');
    await waitFor('catch', async () => (await runs('ff-catch')).length === 1);
  });
});

describe('a DAG batch of 10,000 members', () => {
  it('completes with each member and each callback run exactly once, none before its parents', async () => {
    // 100 layers of 100: each member of a layer waits on two of the layer before it.
    const draft = batches.create('ten-thousand');
    const width = 100;
    for (let layer = 0; layer < 100; layer++) {
      for (let i = 0; i < width; i++) {
        const after = layer === 0 ? [] : [`${layer - 1}.${i}`, `${layer - 1}.${(i + 1) % width}`];
        draft.add(GraphTick, { i: layer * width + i }, { key: `${layer}.${i}`, after });
      }
    }
    const { id } = await draft
      .then(GraphStep, { tag: 'big-then' })
      .catch(GraphStep, { tag: 'big-catch' })
      .finally(GraphStep, { tag: 'big-finally' })
      .dispatch();
    await batchUntil(id, 'succeeded');
    await waitFor('then and finally', async () => (await runs('big-')).length === 2, 30_000);
    const [counts] = await sql<{ runs: number; jobs: number }>(
      `SELECT count(*)::int AS runs, count(DISTINCT job_id)::int AS jobs FROM "${schema}".graph_run
        WHERE batch_id = $1 AND tag LIKE 'tick-%'`,
      [id],
    );
    expect(counts).toEqual({ runs: 10_000, jobs: 10_000 });
    expect(await jobs.batchStatus(id)).toMatchObject({ total: 10_000, succeeded: 10_000, pending: 0 });
    expect((await runs('big-then')).length).toBe(1);
    expect((await runs('big-finally')).length).toBe(1);
    expect(await runs('big-catch')).toHaveLength(0);
    expect(await startedEarly(id)).toBe(0);
  }, 300_000);
});
