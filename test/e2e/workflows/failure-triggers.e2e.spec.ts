import type { INestApplication } from '@nestjs/common';
import { BatchBuilder, Job, JobQueue, JobsError, type JobHandler } from 'nestjs-durable-jobs';
import { dropSchemas, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

// Failure triggers on several parents: 'failure' on each of them needs every one to fail,
// 'any-failure' needs one; mixed with 'success' and 'always' edges, each of those is met by its own
// parent. Decided when the last parent settles, in the database (release_children), or at once at
// the write when every parent had already settled.

/** Succeeds or fails (for good: one attempt) as its payload says. */
@Job('ft-step', { maxAttempts: 1 })
class Step implements JobHandler<{ fail?: boolean }> {
  run(p: { fail?: boolean }): void {
    if (p.fail) throw new Error('this step fails');
  }
}

const schemas: string[] = [];
let app: INestApplication;
let jobs: JobQueue;

beforeAll(async () => {
  const schema = uniqueSchema('ftrig');
  schemas.push(schema);
  app = await startJobsApp(schema, { worker: { concurrency: 8, pollInterval: 50 } }, { providers: [Step] });
  jobs = app.get(JobQueue);
});
afterAll(async () => {
  await app.close();
  await dropSchemas(...schemas);
});

const settled = async (id: string) => {
  await waitFor(`job ${id} to settle`, async () =>
    ['succeeded', 'failed', 'skipped', 'cancelled'].includes((await jobs.get(id))!.state),
  );
  return (await jobs.get(id))!.state;
};

/** A flow of three parents that fail as `fails` says, and children waiting on them as `children` says. */
async function threeParents(
  fails: [boolean, boolean, boolean],
  children: Record<string, Array<{ key: 'a' | 'b' | 'c'; on: 'success' | 'failure' | 'any-failure' | 'always' }>>,
): Promise<Record<string, string>> {
  const flow = jobs
    .flow()
    .add('a', Step, { fail: fails[0] })
    .add('b', Step, { fail: fails[1] })
    .add('c', Step, { fail: fails[2] });
  for (const [key, after] of Object.entries(children)) flow.add(key, Step, {}, { after });
  const { ids } = await flow.dispatch();
  const states: Record<string, string> = {};
  for (const key of Object.keys(children)) states[key] = await settled(ids[key]!);
  return states;
}

const every = (on: 'failure' | 'any-failure') => (['a', 'b', 'c'] as const).map((key) => ({ key, on }));

it("'any-failure' on three parents runs its child when one of them failed, and skips it when none did", async () => {
  expect(await threeParents([false, true, false], { any: every('any-failure'), all: every('failure') })).toEqual({
    any: 'succeeded',
    all: 'skipped',
  });
  expect(await threeParents([false, false, false], { any: every('any-failure'), all: every('failure') })).toEqual({
    any: 'skipped',
    all: 'skipped',
  });
});

it("'failure' on three parents runs its child only when every one of them failed", async () => {
  expect(await threeParents([true, true, true], { any: every('any-failure'), all: every('failure') })).toEqual({
    any: 'succeeded',
    all: 'succeeded',
  });
});

it("mixed edges: each 'success' and 'always' edge by its own parent, the 'any-failure' edges by one failure among them", async () => {
  const mixed = {
    m: [
      { key: 'a' as const, on: 'success' as const },
      { key: 'b' as const, on: 'any-failure' as const },
      { key: 'c' as const, on: 'any-failure' as const },
    ],
    n: [
      { key: 'a' as const, on: 'always' as const },
      { key: 'b' as const, on: 'any-failure' as const },
    ],
  };
  // a succeeded, b failed: m's success edge and one of its failures are met; n's too.
  expect(await threeParents([false, true, false], mixed)).toEqual({ m: 'succeeded', n: 'succeeded' });
  // a failed: m's success edge is not met, whatever b and c did; n's 'always' is, but b succeeded.
  expect(await threeParents([true, false, true], mixed)).toEqual({ m: 'skipped', n: 'skipped' });
});

it('parents that had already settled are judged by the same rule at the write', async () => {
  const ok = await jobs.enqueue(Step, {});
  const bad = await jobs.enqueue(Step, { fail: true });
  await settled(ok.id);
  await settled(bad.id);
  const any = await jobs.enqueue(
    Step,
    {},
    {
      after: [
        { job: ok.id, on: 'any-failure' },
        { job: bad.id, on: 'any-failure' },
      ],
    },
  );
  const all = await jobs.enqueue(
    Step,
    {},
    {
      after: [
        { job: ok.id, on: 'failure' },
        { job: bad.id, on: 'failure' },
      ],
    },
  );
  expect(await settled(any.id)).toBe('succeeded');
  expect(await settled(all.id)).toBe('skipped');
});

it("a job waiting on a batch with 'any-failure' starts at the batch's first failure", async () => {
  const gate = await jobs.enqueue(Step, {}, { delay: 3_600_000 });
  const batch = await app
    .get(BatchBuilder)
    .create('ft-batch')
    .allowFailures()
    .add(Step, { fail: true })
    .add(Step, {}, { delay: 3_600_000 })
    .dispatch();
  const alert = await jobs.enqueue(Step, {}, { after: [{ batch: batch.id, on: 'any-failure' }] });
  // The batch is still executing (one member waits an hour), yet its failure released the alert.
  expect(await settled(alert.id)).toBe('succeeded');
  expect((await jobs.batchStatus(batch.id))!.state).toBe('executing');
  await jobs.cancelBatch(batch.id);
  await jobs.cancel(gate.id);
});

it('an unknown trigger is a JobsError naming the choices', async () => {
  await expect(
    jobs.enqueue(
      Step,
      {},
      { after: [{ job: '01a1968d-44b8-7000-a419-d834b0c2c76b', on: 'some-failure' as 'failure' }] },
    ),
  ).rejects.toThrow(
    new JobsError(
      `enqueue('ft-step'): "on" of "after" entry 0 must be 'success', 'failure', 'any-failure' or 'always', got the string "some-failure". Potential fix: { job: id, on: 'always' }.`,
    ),
  );
});
