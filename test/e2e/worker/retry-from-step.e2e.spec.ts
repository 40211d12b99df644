import { Injectable, type INestApplication } from '@nestjs/common';
import {
  BatchBuilder,
  Job,
  JobQueue,
  JobsError,
  JobsNotFoundError,
  type JobContext,
  type JobHandler,
} from 'nestjs-durable-jobs';
import { appFixture } from '../../support/app-fixture.js';
import { sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

/** Every call of a step's function, per job key: `<step>#<attempt>`, and the values step a returned. */
@Injectable()
class RerunLog {
  readonly calls = new Map<string, string[]>();
  private made = 0;

  call(key: string, step: string, ctx: JobContext): number {
    this.calls.set(key, [...(this.calls.get(key) ?? []), `${step}#${ctx.attempt}`]);
    return ++this.made;
  }

  of(key: string): string[] {
    return this.calls.get(key) ?? [];
  }

  private readonly gates = new Map<string, Promise<void>>();

  /** Holds the next runs of `key`'s job before step b until the returned function is called. */
  hold(key: string): () => void {
    let open!: () => void;
    this.gates.set(key, new Promise<void>((resolve) => (open = resolve)));
    return () => {
      this.gates.delete(key);
      open();
    };
  }

  /** Resolves at once unless `key`'s job is held. */
  pass(key: string): Promise<void> {
    return this.gates.get(key) ?? Promise.resolve();
  }
}

interface ThreePayload {
  key: string;
  /** After step c, the first attempt fails for good. */
  failOnce?: boolean;
}

/** Steps a, b and c, each returning a number no other call returns; fails after c on its first attempt when asked. */
@Job('rfs-three', { queue: 'rfs', maxAttempts: 1 })
class ThreeSteps implements JobHandler<ThreePayload> {
  constructor(private readonly log: RerunLog) {}

  async run(p: ThreePayload, ctx: JobContext): Promise<{ a: number; b: number; c: number }> {
    const a = await ctx.step('a', () => this.log.call(p.key, 'a', ctx));
    await this.log.pass(p.key);
    const b = await ctx.step('b', () => this.log.call(p.key, 'b', ctx));
    const c = await ctx.step('c', () => this.log.call(p.key, 'c', ctx));
    if (p.failOnce && ctx.attempt === 1) throw new Error(`${p.key}: failed after c`);
    return { a, b, c };
  }
}

/** 25 steps, then a failure for good: more recorded names than a refusal lists. */
@Job('rfs-many', { queue: 'rfs', maxAttempts: 1 })
class ManySteps implements JobHandler<Record<string, never>> {
  async run(_: Record<string, never>, ctx: JobContext): Promise<void> {
    for (let i = 1; i <= 25; i++) await ctx.step(`s${i}`, () => i);
    throw new Error('failed after 25 steps');
  }
}

const fixture = appFixture();
const schema = uniqueSchema('rfs');
fixture.schemas.push(schema);
let app: INestApplication;
let jobs: JobQueue;
let log: RerunLog;

const stateOf = async (id: string) => (await jobs.get(id))?.state;
const until = (id: string, state: string) =>
  waitFor(`job ${id} to be ${state}`, async () => (await stateOf(id)) === state);
const stepsOf = async (id: string) =>
  (await jobs.get(id, { stepResults: true }))!.steps.map((s) => [s.name, s.attempt, s.result]);
/** The job's row and its step records as stored, to tell that a refused call wrote nothing. */
const stored = async (id: string) => ({
  job: await sql(`SELECT * FROM "${schema}".job WHERE id = $1`, [id]),
  steps: await sql(`SELECT * FROM "${schema}".job_step WHERE job_id = $1 ORDER BY seq`, [id]),
  history: await sql(`SELECT * FROM "${schema}".job_execution WHERE job_id = $1 ORDER BY id`, [id]),
});

/** A job that ran a, b and c on its first attempt and failed after them. */
async function failedAfterSteps(key: string): Promise<string> {
  const { id } = await jobs.enqueue(ThreeSteps, { key, failOnce: true });
  await until(id, 'failed');
  return id;
}

beforeAll(async () => {
  app = await startJobsApp(
    schema,
    { worker: { pollInterval: 100, queues: ['rfs'] } },
    { providers: [RerunLog, ThreeSteps, ManySteps] },
  );
  fixture.apps.push(app);
  jobs = app.get(JobQueue);
  log = app.get(RerunLog);
});

describe('JobQueue.retry(id, { fromStep })', () => {
  it('runs the named step and the ones recorded after it again; the earlier ones are answered from storage', async () => {
    const id = await failedAfterSteps('rerun');
    const [a1, b1, c1] = (await stepsOf(id)).map(([, , result]) => result);
    expect(log.of('rerun')).toEqual(['a#1', 'b#1', 'c#1']);

    await jobs.retry(id, { fromStep: 'b' });
    await until(id, 'succeeded');

    // Step a's function ran once, on the first attempt: the rerun got its stored value.
    expect(log.of('rerun')).toEqual(['a#1', 'b#1', 'c#1', 'b#2', 'c#2']);
    const job = (await jobs.get(id, { stepResults: true }))!;
    expect(job.result).toMatchObject({ a: a1 });
    expect(job.result).not.toMatchObject({ b: b1 });
    expect(job.result).not.toMatchObject({ c: c1 });
    expect(job.steps.map((s) => [s.name, s.attempt])).toEqual([
      ['a', 1],
      ['b', 2],
      ['c', 2],
    ]);
    expect(job.executions.map((e) => [e.attempt, e.state])).toEqual([
      [1, 'failed'],
      [2, 'succeeded'],
    ]);
    expect(job.executions[0]!.error?.message).toBe('rerun: failed after c');
  });

  it('from the first step runs every step again; from the last, only that one', async () => {
    const first = await failedAfterSteps('from-first');
    const last = await failedAfterSteps('from-last');
    await jobs.retry(first, { fromStep: 'a' });
    await jobs.retry(last, { fromStep: 'c' });
    await Promise.all([until(first, 'succeeded'), until(last, 'succeeded')]);
    expect(log.of('from-first')).toEqual(['a#1', 'b#1', 'c#1', 'a#2', 'b#2', 'c#2']);
    expect(log.of('from-last')).toEqual(['a#1', 'b#1', 'c#1', 'c#2']);
  });

  it('a step the job never recorded is a JobsError naming the call, the step, the recorded steps and the fix; nothing is written', async () => {
    const id = await failedAfterSteps('unknown');
    const before = await stored(id);
    const refusal = await jobs.retry(id, { fromStep: 'd' }).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(JobsError);
    expect(refusal).not.toBeInstanceOf(JobsNotFoundError);
    expect((refusal as Error).message).toBe(
      `retry(${id}, { fromStep: "d" }): the job recorded no step named "d"; it recorded "a", "b", "c", in that order. ` +
        'Nothing was written. Potential fix: pass one of those names, the one given to ctx.step() or ctx.sleep() as ' +
        'get(id).steps lists it; retry(id) keeps every step.',
    );
    // ctx.stepKey(name) is not a step's name: the message says which name was meant.
    await expect(jobs.retry(id, { fromStep: `${id}:b` })).rejects.toThrow(
      `that is ctx.stepKey("b"); pass the step's name: retry(id, { fromStep: "b" })`,
    );
    expect(await stored(id)).toEqual(before);
    expect(await stateOf(id)).toBe('failed');
    expect(log.of('unknown')).toEqual(['a#1', 'b#1', 'c#1']);
  });

  it('lists the first 20 names a job recorded and how many more; a job that recorded none says so', async () => {
    const { id: many } = await jobs.enqueue(ManySteps, {});
    await until(many, 'failed');
    const names = Array.from({ length: 20 }, (_, i) => `"s${i + 1}"`).join(', ');
    await expect(jobs.retry(many, { fromStep: 's26' })).rejects.toThrow(
      `the job recorded no step named "s26"; it recorded ${names} and 5 more, in that order.`,
    );
    // Cancelled before it ran: retryable, with no step to keep.
    const { id: none } = await jobs.enqueue(ThreeSteps, { key: 'never-ran' }, { delay: 3_600_000 });
    await jobs.cancel(none);
    const before = await stored(none);
    await expect(jobs.retry(none, { fromStep: 'a' })).rejects.toThrow(
      `retry(${none}, { fromStep: "a" }): the job recorded no step named "a"; it recorded no steps at all, so there is nothing to keep. ` +
        'Nothing was written. Potential fix: retry(id) runs the job again from its start.',
    );
    expect(await stored(none)).toEqual(before);
    expect(await stateOf(none)).toBe('cancelled');
  });

  it('refuses fromStep with resetSteps: true, and a blank or non-string fromStep, writing nothing', async () => {
    const id = await failedAfterSteps('bad-input');
    const before = await stored(id);
    const cases: Array<[unknown, RegExp]> = [
      [{ fromStep: 'b', resetSteps: true }, /"fromStep" and "resetSteps: true" cannot go together.*Potential fix/],
      [{ fromStep: '' }, /"fromStep" must be a step's name, a non-blank string .*got an empty string.*Potential fix/],
      [{ fromStep: '   ' }, /"fromStep" must be a step's name.*Potential fix/],
      [{ fromStep: 7 }, /"fromStep" must be a step's name.*got 7.*Potential fix/],
      [{ fromStep: 'x'.repeat(201) }, /"fromStep" must be a step's name.*up to 200 characters/],
      [{ fromStp: 'b' }, /fromStp/],
    ];
    for (const [options, message] of cases) {
      const refusal = await jobs.retry(id, options as never).catch((e: unknown) => e);
      expect(refusal).toBeInstanceOf(JobsError);
      expect((refusal as Error).message).toMatch(new RegExp(`^retry\\(${id}\\): `));
      expect((refusal as Error).message).toMatch(message);
    }
    expect(await stored(id)).toEqual(before);
    // resetSteps: false says nothing against fromStep.
    await jobs.retry(id, { fromStep: 'c', resetSteps: false });
    await until(id, 'succeeded');
    expect(log.of('bad-input')).toEqual(['a#1', 'b#1', 'c#1', 'c#2']);
  });

  it('takes the states plain retry takes: a succeeded job and an unknown id are refused as retry() refuses them', async () => {
    const { id } = await jobs.enqueue(ThreeSteps, { key: 'done' });
    await until(id, 'succeeded');
    const before = await stored(id);
    await expect(jobs.retry(id, { fromStep: 'b' })).rejects.toThrow(
      `retry(${id}, { fromStep: "b" }): the job is "succeeded"; only failed, cancelled or skipped jobs can be retried.`,
    );
    expect(await stored(id)).toEqual(before);
    const unknown = '01937c5e-1a2b-7c3d-8e4f-5a6b7c8d9e0f';
    await expect(jobs.retry(unknown, { fromStep: 'b' })).rejects.toThrow(JobsNotFoundError);
  });

  it('two retries from a step at once: one re-queues the job, the other finds it no longer ended', async () => {
    const id = await failedAfterSteps('twice');
    const results = await Promise.allSettled([jobs.retry(id, { fromStep: 'b' }), jobs.retry(id, { fromStep: 'b' })]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const [refused] = results.filter((r) => r.status === 'rejected');
    expect(String(refused!.reason)).toMatch(
      /the job is "(queued|active|succeeded)"; only failed, cancelled or skipped/,
    );
    await until(id, 'succeeded');
    expect(log.of('twice')).toEqual(['a#1', 'b#1', 'c#1', 'b#2', 'c#2']);
  });

  it("reopens the job's batch and its skipped dependents, as plain retry does", async () => {
    const { id: batchId } = await app
      .get(BatchBuilder)
      .create('rfs-batch')
      .add(ThreeSteps, { key: 'member', failOnce: true })
      .then(ThreeSteps, { key: 'batch-then' })
      .dispatch();
    const [member] = await jobs.batchMembers(batchId);
    const child = await jobs.enqueue(ThreeSteps, { key: 'child' }, { after: member!.id });
    await waitFor('the batch to fail', async () => (await jobs.batchStatus(batchId))?.state === 'failed');
    await until(child.id, 'skipped');
    const thenJob = (await jobs.batchGraph(batchId))!.nodes.find((n) => n.role === 'then')!;
    await until(thenJob.id, 'skipped');

    // Held before step b, so the rerun cannot end (and settle the batch again) before the batch is read.
    const open = log.hold('member');
    await jobs.retry(member!.id, { fromStep: 'b' });
    expect((await jobs.batchStatus(batchId))!.state).toBe('executing');
    open();
    await until(child.id, 'succeeded');
    await until(thenJob.id, 'succeeded');
    expect(await jobs.batchStatus(batchId)).toMatchObject({ state: 'succeeded', succeeded: 1, failed: 0 });
    expect(log.of('member')).toEqual(['a#1', 'b#1', 'c#1', 'b#2', 'c#2']);
    expect(log.of('child')).toEqual(['a#1', 'b#1', 'c#1']);
    expect(log.of('batch-then')).toEqual(['a#1', 'b#1', 'c#1']);
  });
});
