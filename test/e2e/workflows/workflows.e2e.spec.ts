import type { INestApplication } from '@nestjs/common';
import { BatchBuilder, JobQueue, JobsError } from 'nestjs-durable-jobs';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { probeProviders } from '../../support/probe.jobs.js';
import { startSampleApp } from '../../support/sample-app.js';
import { waitFor } from '../../support/wait.js';
import { Continue, Grow, Step, WF_RUN_TABLE, workflowProviders } from '../../support/workflow.jobs.js';

const schema = uniqueSchema('wf');
let app: INestApplication;
let jobs: JobQueue;
let batches: BatchBuilder;

const stateOf = async (id: string) => (await jobs.get(id))?.state;
const until = (id: string, state: string) =>
  waitFor(`job ${id} to be ${state}`, async () => (await stateOf(id)) === state);
const batchUntil = (id: string, state: string) =>
  waitFor(`batch ${id} to be ${state}`, async () => (await jobs.batchStatus(id))?.state === state);
const runsOf = async (tag: string) =>
  (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".wf_run WHERE tag = $1`, [tag]))[0]!.n;
const jobCount = async () => (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}_jobs".job`))[0]!.n;

beforeAll(async () => {
  app = await startSampleApp({
    schema,
    worker: { concurrency: 10, pollInterval: 100 },
    providers: [...probeProviders(), ...workflowProviders],
  });
  await sql(WF_RUN_TABLE(schema));
  jobs = app.get(JobQueue);
  batches = app.get(BatchBuilder);
});

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema, `${schema}_jobs`);
});

describe('batches', () => {
  it('all members succeed: then and finally run once, catch is skipped', async () => {
    const { id } = await batches
      .create('all-good')
      .add(Step, { tag: 'ok-1' })
      .add(Step, { tag: 'ok-2' })
      .add(Step, { tag: 'ok-3', ms: 100 })
      .then(Step, { tag: 'ok-then' })
      .catch(Step, { tag: 'ok-catch' })
      .finally(Step, { tag: 'ok-finally' })
      .dispatch();
    await batchUntil(id, 'succeeded');
    const graph = (await jobs.batchGraph(id))!;
    const byRole = (role: string) => graph.nodes.find((n) => n.role === role)!;
    await until(byRole('then').id, 'succeeded');
    await until(byRole('finally').id, 'succeeded');
    expect(byRole('catch').state).toBe('skipped');
    const status = (await jobs.batchStatus(id))!;
    expect(status).toMatchObject({ name: 'all-good', total: 3, pending: 0, succeeded: 3, failed: 0, progress: 1 });
    expect(status.startedAt).not.toBeNull();
    expect(status.completedAt).not.toBeNull();
    expect(graph.nodes.filter((n) => n.role === 'member')).toHaveLength(3);
    expect(graph.edges.map((e) => e.on).sort()).toEqual(['always', 'failure', 'success']);
    for (const tag of ['ok-1', 'ok-2', 'ok-3', 'ok-then', 'ok-finally']) expect(await runsOf(tag)).toBe(1);
    expect(await runsOf('ok-catch')).toBe(0);
  });

  it('the first failure runs catch once and cancels the members that have not started', async () => {
    const { id } = await batches
      .create()
      .add(Step, { tag: 'ff-bad', failUntilAttempt: 99 })
      .add(Step, { tag: 'ff-later-1' }, { delay: 60_000 })
      .add(Step, { tag: 'ff-later-2' }, { delay: 60_000 })
      .then(Step, { tag: 'ff-then' })
      .catch(Step, { tag: 'ff-catch' })
      .finally(Step, { tag: 'ff-finally' })
      .dispatch();
    await batchUntil(id, 'failed');
    const graph = (await jobs.batchGraph(id))!;
    await until(graph.nodes.find((n) => n.role === 'catch')!.id, 'succeeded');
    await until(graph.nodes.find((n) => n.role === 'finally')!.id, 'succeeded');
    expect(graph.nodes.find((n) => n.role === 'then')!.state).toBe('skipped');
    expect(await jobs.batchStatus(id)).toMatchObject({ total: 3, failed: 1, cancelled: 2, succeeded: 0, pending: 0 });
    const cancelled = await jobs.batchMembers(id, { state: 'cancelled' });
    expect(cancelled).toHaveLength(2);
    expect(cancelled[0]!.lastError?.name).toBe('BatchFailed');
    expect(await runsOf('ff-catch')).toBe(1);
    expect(await runsOf('ff-later-1')).toBe(0);
  });

  it('allowFailures: the others run on; catch runs once at the first failure; the batch ends failed', async () => {
    const { id } = await batches
      .create()
      .add(Step, { tag: 'af-bad-1', failUntilAttempt: 99 })
      .add(Step, { tag: 'af-bad-2', failUntilAttempt: 99, ms: 150 })
      .add(Step, { tag: 'af-good', ms: 300 })
      .then(Step, { tag: 'af-then' })
      .catch(Step, { tag: 'af-catch' })
      .finally(Step, { tag: 'af-finally' })
      .allowFailures()
      .dispatch();
    await batchUntil(id, 'failed');
    const graph = (await jobs.batchGraph(id))!;
    await until(graph.nodes.find((n) => n.role === 'finally')!.id, 'succeeded');
    expect(await jobs.batchStatus(id)).toMatchObject({ total: 3, failed: 2, succeeded: 1, cancelled: 0 });
    expect(await runsOf('af-good')).toBe(1);
    expect(await runsOf('af-catch')).toBe(1);
    expect(await runsOf('af-then')).toBe(0);
  });

  it('cancelBatch: queued members are cancelled, running ones aborted; finally runs, then does not', async () => {
    const { id } = await batches
      .create()
      .add(Step, { tag: 'cx-running', ms: 10_000 })
      .add(Step, { tag: 'cx-waiting' }, { delay: 60_000 })
      .then(Step, { tag: 'cx-then' })
      .catch(Step, { tag: 'cx-catch' })
      .finally(Step, { tag: 'cx-finally' })
      .dispatch();
    await waitFor('the slow member to start', async () => (await runsOf('cx-running')) === 1);
    await jobs.cancelBatch(id);
    await batchUntil(id, 'cancelled');
    const graph = (await jobs.batchGraph(id))!;
    await until(graph.nodes.find((n) => n.role === 'finally')!.id, 'succeeded');
    expect(graph.nodes.find((n) => n.role === 'then')!.state).toBe('skipped');
    expect(graph.nodes.find((n) => n.role === 'catch')!.state).toBe('skipped');
    expect(await jobs.batchStatus(id)).toMatchObject({ cancelled: 2, failed: 0, succeeded: 0 });
    await expect(jobs.cancelBatch(id)).rejects.toThrow(/already settled/);
  });

  it('an empty batch settles at once', async () => {
    const { id } = await batches
      .create('empty')
      .then(Step, { tag: 'empty-then' })
      .finally(Step, { tag: 'empty-finally' })
      .dispatch();
    expect((await jobs.batchStatus(id))!.state).toBe('succeeded');
    await waitFor('both callbacks', async () => (await runsOf('empty-then')) + (await runsOf('empty-finally')) === 2);
  });

  it('retry() of a failed member reopens its batch; then runs when it settles again', async () => {
    const { id } = await batches
      .create()
      .add(Step, { tag: 'ro-flaky', failUntilAttempt: 2 })
      .add(Step, { tag: 'ro-fine' })
      .then(Step, { tag: 'ro-then' })
      .allowFailures()
      .dispatch();
    await batchUntil(id, 'failed');
    const [flaky] = await jobs.batchMembers(id, { state: 'failed' });
    await jobs.retry(flaky!.id);
    // Reopened by retry()'s own write: no longer failed once it resolves (executing, or already
    // succeeded again if the worker ran the member before this read).
    expect((await jobs.batchStatus(id))!.state).not.toBe('failed');
    await batchUntil(id, 'succeeded');
    await waitFor('then to run', async () => (await runsOf('ro-then')) === 1);
    expect(await jobs.batchStatus(id)).toMatchObject({ succeeded: 2, failed: 0, pending: 0 });
  });

  it('ctx.addToBatch grows the batch; then waits for the new members too', async () => {
    const { id } = await batches
      .create()
      .add(Grow, { tag: 'grow', extra: 3 })
      .then(Step, { tag: 'grow-then' })
      .dispatch();
    await batchUntil(id, 'succeeded');
    expect(await jobs.batchStatus(id)).toMatchObject({ total: 4, succeeded: 4 });
    await waitFor('then to run', async () => (await runsOf('grow-then')) === 1);
    const [thenRun] = await sql<{ started_at: Date }>(
      `SELECT started_at FROM "${schema}".wf_run WHERE tag = 'grow-then'`,
    );
    const [lastAdded] = await sql<{ ended_at: Date }>(
      `SELECT max(ended_at) AS ended_at FROM "${schema}".wf_run WHERE tag LIKE 'grow-added-%'`,
    );
    expect(thenRun!.started_at.getTime()).toBeGreaterThanOrEqual(lastAdded!.ended_at.getTime());
  });

  it("a batch's then job sees the batch but cannot add to it: the batch has settled", async () => {
    const { id } = await batches
      .create()
      .add(Step, { tag: 'late-member' })
      .then(Grow, { tag: 'late-grow', extra: 1 })
      .dispatch();
    await batchUntil(id, 'succeeded');
    const thenJob = async () =>
      (
        await sql<{ state: string; error: string | null }>(
          `SELECT state, last_error->>'message' AS error FROM "${schema}_jobs".job WHERE payload->>'tag' = 'late-grow'`,
        )
      )[0];
    await waitFor('the then job to end', async () => (await thenJob())?.state === 'failed');
    expect((await thenJob())!.error).toMatch(/^ctx\.addToBatch\(\) in job "wf-grow" .*not a batch member/);
    expect(await jobs.batchStatus(id)).toMatchObject({ state: 'succeeded', total: 1, succeeded: 1 });
    expect(await runsOf('late-grow-added-0')).toBe(0);
  });

  it('members can be listed by state and page; a batch is deleted only once settled', async () => {
    const draft = batches.create('paged');
    for (let i = 0; i < 5; i++) draft.add(Step, { tag: `pg-${i}` }, { delay: 60_000 });
    const { id } = await draft.dispatch();
    expect(await jobs.batchMembers(id, { take: 2 })).toHaveLength(2);
    expect(await jobs.batchMembers(id, { skip: 4, take: 2 })).toHaveLength(1);
    expect(await jobs.batchMembers(id, { state: 'succeeded' })).toHaveLength(0);
    await expect(jobs.deleteBatch(id)).rejects.toThrow(/still executing/);
    await jobs.cancelBatch(id);
    await jobs.deleteBatch(id);
    expect(await jobs.batchStatus(id)).toBeNull();
    await expect(draft.dispatch()).rejects.toThrow(/already dispatched/);
  });
});

describe('chains', () => {
  it('a failure stops the chain (the rest are skipped); retry resumes it', async () => {
    const { ids } = await jobs
      .chain()
      .then(Step, { tag: 'ch-a' })
      .then(Step, { tag: 'ch-b', failUntilAttempt: 2 })
      .then(Step, { tag: 'ch-c' })
      .then(Step, { tag: 'ch-d' })
      .dispatch();
    await until(ids[1]!, 'failed');
    await until(ids[3]!, 'skipped');
    expect(await stateOf(ids[2]!)).toBe('skipped');
    expect(await runsOf('ch-c')).toBe(0);
    await jobs.retry(ids[1]!);
    await until(ids[3]!, 'succeeded');
    expect(await Promise.all(ids.map(stateOf))).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    for (const tag of ['ch-a', 'ch-c', 'ch-d']) expect(await runsOf(tag)).toBe(1);
    expect(await runsOf('ch-b')).toBe(2);
  });
});

describe('continuations and flows', () => {
  it('after: a child waits for its parents and runs when every trigger is met', async () => {
    const a = await jobs.enqueue(Step, { tag: 'af-a', ms: 200 });
    const b = await jobs.enqueue(Step, { tag: 'af-b', failUntilAttempt: 9 });
    const child = await jobs.enqueue(
      Step,
      { tag: 'af-child' },
      { after: [{ job: a.id }, { job: b.id, on: 'failure' }] },
    );
    expect(await stateOf(child.id)).toBe('waiting');
    await until(child.id, 'succeeded');
    const [parentEnd] = await sql<{ t: Date }>(
      `SELECT max(ended_at) AS t FROM "${schema}".wf_run WHERE tag IN ('af-a','af-b')`,
    );
    const [childStart] = await sql<{ t: Date }>(
      `SELECT started_at AS t FROM "${schema}".wf_run WHERE tag = 'af-child'`,
    );
    expect(childStart!.t.getTime()).toBeGreaterThanOrEqual(parentEnd!.t.getTime());
  });

  it('after with a unique key: a held key answers with its holder and writes nothing, as a lone enqueue does', async () => {
    const parent = await jobs.enqueue(Step, { tag: 'uq-parent' }, { delay: 60_000 });
    const holder = await jobs.enqueue(Step, { tag: 'uq-holder' }, { delay: 60_000, unique: { key: 'uq-after' } });
    const before = await jobCount();
    const second = await jobs.enqueue(
      Step,
      { tag: 'uq-child' },
      { after: [{ job: parent.id }], unique: { key: 'uq-after' } },
    );
    expect(second).toEqual({ id: holder.id, created: false });
    expect(await jobCount()).toBe(before);
    const [edges] = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}_jobs".job_dependency WHERE parent_job_id = $1`,
      [parent.id],
    );
    expect(edges!.n).toBe(0);
    // A free key writes the waiting child, which then holds the key itself.
    const child = await jobs.enqueue(
      Step,
      { tag: 'uq-child' },
      { after: [{ job: parent.id }], unique: { key: 'uq-free' } },
    );
    expect(child.created).toBe(true);
    expect(await stateOf(child.id)).toBe('waiting');
    expect(await jobs.enqueue(Step, { tag: 'uq-again' }, { unique: { key: 'uq-free' } })).toEqual({
      id: child.id,
      created: false,
    });
    // A debounce cannot replace the holder's payload: the holder waits on parents of its own.
    await expect(
      jobs.enqueue(
        Step,
        { tag: 'uq-debounce' },
        { after: [{ job: parent.id }], unique: { key: 'uq-after', replace: true } },
      ),
    ).rejects.toThrow(`the unique key "uq-after" is held by job ${holder.id}, and a debounce (unique.replace) cannot`);
    expect(await jobCount()).toBe(before + 1);
    // Bad input still fails first: an unknown parent is named even when the key is held.
    await expect(
      jobs.enqueue(
        Step,
        { tag: 'uq-bad' },
        { after: [{ job: '00000000-0000-7000-8000-000000000000' }], unique: { key: 'uq-after' } },
      ),
    ).rejects.toThrow(JobsError);
    await jobs.cancel(holder.id);
    await jobs.cancel(child.id);
    await jobs.cancel(parent.id);
  });

  it('a trigger that is not met skips the child, and the skip propagates (always still runs)', async () => {
    const parent = await jobs.enqueue(Step, { tag: 'sk-parent', failUntilAttempt: 9, ms: 100 });
    const child = await jobs.enqueue(Step, { tag: 'sk-child' }, { after: parent.id });
    const grandchild = await jobs.enqueue(Step, { tag: 'sk-grandchild' }, { after: child.id });
    const sweeper = await jobs.enqueue(Step, { tag: 'sk-always' }, { after: [{ job: child.id, on: 'always' }] });
    await until(grandchild.id, 'skipped');
    expect(await stateOf(child.id)).toBe('skipped');
    expect((await jobs.get(grandchild.id))!.lastError?.name).toBe('DependencyNotMet');
    await until(sweeper.id, 'succeeded');
    expect(await runsOf('sk-child')).toBe(0);
  });

  it('parents that already settled are evaluated at once', async () => {
    const done = await jobs.enqueue(Step, { tag: 'ps-done' });
    await until(done.id, 'succeeded');
    const runs = await jobs.enqueue(Step, { tag: 'ps-runs' }, { after: done.id });
    const skips = await jobs.enqueue(Step, { tag: 'ps-skips' }, { after: [{ job: done.id, on: 'failure' }] });
    expect(await stateOf(skips.id)).toBe('skipped');
    await until(runs.id, 'succeeded');
  });

  it('an unknown parent is a JobsError and writes nothing', async () => {
    const before = await jobCount();
    await expect(jobs.enqueue(Step, { tag: 'x' }, { after: '00000000-0000-7000-8000-000000000000' })).rejects.toThrow(
      /wf-step.*parent job 00000000-0000-7000-8000-000000000000 does not exist, so nothing was written/,
    );
    await expect(
      jobs.enqueue(Step, { tag: 'x' }, { after: [{ batch: '00000000-0000-7000-8000-000000000001' }] }),
    ).rejects.toThrow(JobsError);
    expect(await jobCount()).toBe(before);
  });

  it('flow(): a DAG with many parents per job runs in order', async () => {
    const { ids } = await jobs
      .flow()
      .add('fetch-a', Step, { tag: 'fl-fetch-a', ms: 50 })
      .add('fetch-b', Step, { tag: 'fl-fetch-b', ms: 100 })
      .add('merge', Step, { tag: 'fl-merge' }, { after: ['fetch-a', 'fetch-b'] })
      .add('report', Step, { tag: 'fl-report' }, { after: ['merge', { key: 'fetch-a', on: 'always' }] })
      .dispatch();
    await until(ids.report!, 'succeeded');
    const rows = await sql<{ tag: string; started_at: Date; ended_at: Date }>(
      `SELECT tag, started_at, ended_at FROM "${schema}".wf_run WHERE tag LIKE 'fl-%'`,
    );
    const at = Object.fromEntries(rows.map((r) => [r.tag, r]));
    expect(at['fl-merge']!.started_at.getTime()).toBeGreaterThanOrEqual(at['fl-fetch-b']!.ended_at.getTime());
    expect(at['fl-report']!.started_at.getTime()).toBeGreaterThanOrEqual(at['fl-merge']!.ended_at.getTime());
  });

  it('flow(): a cycle is a JobsError naming its keys, and nothing is written', async () => {
    const before = await jobCount();
    const attempt = jobs
      .flow()
      .add('start', Step, { tag: 'cy-start' })
      .add('a', Step, { tag: 'cy-a' }, { after: ['start', 'c'] })
      .add('b', Step, { tag: 'cy-b' }, { after: ['a'] })
      .add('c', Step, { tag: 'cy-c' }, { after: ['b'] })
      .dispatch();
    await expect(attempt).rejects.toThrow(
      /flow\(\): the dependencies form a cycle: (a -> b -> c -> a|b -> c -> a -> b|c -> a -> b -> c)\. Nothing was written/,
    );
    await expect(
      jobs
        .flow()
        .add('x', Step, { tag: 'x' }, { after: ['ghost'] })
        .dispatch(),
    ).rejects.toThrow(/step "x" waits on "ghost", which is not in the flow/);
    expect(await jobCount()).toBe(before);
  });

  it('a chain or flow is written once: a second dispatch or a later step is refused', async () => {
    const chain = jobs.chain().then(Step, { tag: 'once-c1' });
    const flow = jobs.flow().add('a', Step, { tag: 'once-f1' });
    await chain.dispatch();
    await flow.dispatch();
    const before = await jobCount();
    await expect(chain.dispatch()).rejects.toThrow(
      /chain\(\)\.dispatch\(\): this chain was already dispatched, so its jobs would be written twice\. Potential fix/,
    );
    expect(() => chain.then(Step, { tag: 'once-c2' })).toThrow(/this step would be lost/);
    await expect(flow.dispatch()).rejects.toThrow(/flow\(\)\.dispatch\(\): this flow was already dispatched/);
    expect(() => flow.add('b', Step, { tag: 'once-f2' })).toThrow(JobsError);
    expect(await jobCount()).toBe(before);
  });

  it('continueWith is written with the outcome, only for the matching outcome', async () => {
    const ok = await jobs.enqueue(Continue, { tag: 'cw-ok', fail: false });
    const bad = await jobs.enqueue(Continue, { tag: 'cw-bad', fail: true });
    await until(ok.id, 'succeeded');
    await until(bad.id, 'failed');
    await waitFor('4 continuations to run', async () => {
      const rows = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".wf_run WHERE tag LIKE 'cw-%'`);
      return rows[0]!.n === 4;
    });
    const names = await sql<{ tag: string }>(`SELECT tag FROM "${schema}".wf_run WHERE tag LIKE 'cw-%' ORDER BY tag`);
    expect(names.map((r) => r.tag)).toEqual(['cw-bad-always', 'cw-bad-on-failure', 'cw-ok-always', 'cw-ok-on-success']);
    const written = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}_jobs".job WHERE payload->>'tag' IN ('cw-ok-on-failure', 'cw-bad-on-success')`,
    );
    expect(written[0]!.n).toBe(0);
  });

  it('continueWith refuses an "on" it cannot take with a JobsError naming the job and the fix', async () => {
    const { id } = await jobs.enqueue(Continue, { tag: 'cw-on', fail: false, badOn: true });
    await until(id, 'succeeded');
    expect((await jobs.get(id))!.result).toEqual({
      name: 'JobsError',
      message: expect.stringMatching(
        /^ctx\.continueWith\(\) in job "[^"]+": "on" must be 'success', 'failure', 'any-failure' or 'always', got .*Potential fix/,
      ),
    });
  });
});
