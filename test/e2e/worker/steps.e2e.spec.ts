import { spawn, type ChildProcess } from 'node:child_process';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { BatchBuilder, JobsAdmin, JobQueue, RecurringSchedules, type JobInfo } from 'nestjs-durable-jobs';
import { JobsDashboardModule } from 'nestjs-durable-jobs/dashboard';
import type { AttemptReport, ManualClock } from 'nestjs-durable-jobs/testing';
import { readyWorkerId } from '../../support/child-ready.js';
import { dropSchemas, sql, takeLeaseAway, uniqueSchema } from '../../support/database.js';
import { workerStorage } from '../../support/job-storage.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { KitLog } from '../../support/kit.jobs.js';
import {
  Checkout,
  GatedStep,
  Member,
  Misuse,
  Napper,
  Renewal,
  STEP_RUNS,
  StepGates,
  StepLog,
  ThreeSteps,
  VICTIM,
  type MisuseMode,
} from '../../support/steps.jobs.js';
import { startTestingApp, type TestingApp } from '../../support/testing-app.js';
import { waitFor } from '../../support/wait.js';

const DAY = 86_400_000;
const LEASE = 30_000;

const outcomes = (reports: AttemptReport[]) => reports.map((r) => r.outcome);
const stepsOf = (job: JobInfo | null) => job!.steps.map((s) => [s.name, s.kind, s.attempt]);
const attemptsOf = (job: JobInfo | null) => job!.executions.map((e) => [e.attempt, e.state]);

// ---------------------------------------------------------------------------
// On the testing kit: one app, a manual clock, jobs run by drain().

describe('durable steps, run by the testing kit', () => {
  let kit: TestingApp;
  let log: StepLog;
  let clock: ManualClock;

  beforeAll(async () => {
    kit = await startTestingApp(
      { worker: { lease: LEASE } },
      {
        imports: [JobsDashboardModule.register({ public: true })],
        // KitLog: what startTestingApp() hands back beside the app.
        providers: [KitLog, StepLog, Checkout, Misuse, Member, Renewal],
      },
    );
    log = kit.app.get(StepLog);
    clock = kit.tester.clock as ManualClock;
  });
  afterAll(() => kit.app.close());

  it('a finished step is not run again: the next attempt gets its stored result', async () => {
    const { jobs, tester } = kit;
    const { id } = await jobs.enqueue(Checkout, { order: 'retry', shipFailsOnce: true });
    expect(outcomes(await tester.drain())).toEqual(['retry']);
    await tester.advance(1_000);
    expect(outcomes(await tester.drain())).toEqual(['succeeded']);
    expect(log.of('retry')).toEqual(['charge#1', 'ship#1', 'ship#2', 'receipt#2']);
    const job = await jobs.get(id);
    expect(job!.result).toEqual({ charged: 'ch-retry', tracking: 'tr-retry' });
    expect(stepsOf(job)).toEqual([
      ['charge', 'step', 1],
      ['ship', 'step', 2],
      ['receipt', 'step', 2],
    ]);
    expect(job!.steps[0]).not.toHaveProperty('result');
    const detailed = await jobs.get(id, { stepResults: true });
    expect(detailed!.steps.map((s) => s.result)).toEqual([
      { id: 'ch-retry', at: '1970-01-01T00:00:00.000Z' },
      { tracking: 'tr-retry' },
      null,
    ]);
    expect(detailed!.steps[0]!.completedAt).toEqual(expect.any(Date));
    expect(detailed!.steps[0]!.wakeAt).toBeNull();
  });

  it("dieAfterStep: a crash between a step's work and its record runs that step again, and not the ones before it", async () => {
    const { jobs, tester } = kit;
    tester.dieAfterStep(Checkout, 'ship');
    expect(tester.pendingFaults()).toEqual({ 'steps-checkout': ['die-after-step'] });
    const { id } = await jobs.enqueue(Checkout, { order: 'crash' });
    const [died] = await tester.drain();
    expect(died).toMatchObject({ outcome: 'died', injected: 'dieAfterStep', attempt: 1 });
    expect(tester.pendingFaults()).toEqual({});
    expect(stepsOf(await jobs.get(id))).toEqual([['charge', 'step', 1]]);
    // The job is still active under the dead runner's lease: nothing runs until it runs out.
    expect(await tester.drain()).toEqual([]);
    await tester.advance(LEASE + 1);
    expect(outcomes(await tester.drain())).toEqual(['succeeded']);
    expect(log.of('crash')).toEqual(['charge#1', 'ship#1', 'ship#2', 'receipt#2']);
    const job = await jobs.get(id);
    expect(attemptsOf(job)).toEqual([
      [1, 'interrupted'],
      [2, 'succeeded'],
    ]);
    expect(stepsOf(job)).toEqual([
      ['charge', 'step', 1],
      ['ship', 'step', 2],
      ['receipt', 'step', 2],
    ]);
    // The idempotency key the charge step was given: the job's id and the step's name.
    expect(log.keys.filter((k) => k.startsWith(id))).toEqual([`${id}:charge`]);
  });

  it('a worker that lost its lease cannot record a step: its attempt ends lost, and the step runs again in the next', async () => {
    const { jobs, tester } = kit;
    const { id } = await jobs.enqueue(Checkout, { order: 'stolen', shipGate: 'stolen' });
    const reached = log.reached('stolen');
    const drained = tester.drain();
    await reached;
    await takeLeaseAway(tester.schema, id);
    log.open('stolen');
    expect((await drained).map((r) => [r.attempt, r.outcome])).toEqual([
      [1, 'lost'],
      [2, 'succeeded'],
    ]);
    expect(log.of('stolen')).toEqual(['charge#1', 'ship#1', 'ship#2', 'receipt#2']);
    expect(stepsOf(await jobs.get(id))).toEqual([
      ['charge', 'step', 1],
      ['ship', 'step', 2],
      ['receipt', 'step', 2],
    ]);
  });

  it('a sleep of a day: the job goes back to the queue, and resumes at advance(1 day) past its finished steps', async () => {
    const { jobs, tester } = kit;
    const start = clock.now().getTime();
    const { id } = await jobs.enqueue(Checkout, { order: 'nap', sleepMs: DAY });
    const [slept] = await tester.drain();
    expect(slept).toMatchObject({ outcome: 'snoozed', retryAt: new Date(start + DAY) });
    let job = await jobs.get(id);
    // Not an attempt spent: the attempt is given back as for a snooze.
    expect(job).toMatchObject({ state: 'queued', runAt: new Date(start + DAY), attempt: 1, maxAttempts: 4 });
    expect(job!.steps.at(-1)).toMatchObject({ name: 'cooling-off', kind: 'sleep', wakeAt: new Date(start + DAY) });
    expect((await kit.app.get(JobsAdmin).search({ state: 'scheduled' })).jobs.map((j) => j.id)).toContain(id);

    await tester.advance(DAY - 1);
    expect(await tester.drain()).toEqual([]);
    // Woken early by hand: what is left of the sleep is slept, without running anything again.
    await kit.app.get(JobsAdmin).runNow(id);
    const [early] = await tester.drain();
    expect(early).toMatchObject({ outcome: 'snoozed', retryAt: new Date(start + DAY) });
    await tester.advance(1);
    expect(outcomes(await tester.drain())).toEqual(['succeeded']);
    expect(log.of('nap')).toEqual(['charge#1', 'ship#1', 'receipt#3']);
    job = await jobs.get(id);
    expect(attemptsOf(job)).toEqual([
      [1, 'snoozed'],
      [2, 'snoozed'],
      [3, 'succeeded'],
    ]);
    expect(job!.executions[0]!.error?.message).toBe(
      `ctx.sleep('cooling-off') until ${new Date(start + DAY).toISOString()}`,
    );
  });

  it('ctx.sleepUntil(): the job waits for the date, not a duration; more than a year away is refused', async () => {
    const { jobs, tester } = kit;
    const day = new Date(clock.now().getTime() + 3 * 3_600_000);
    const { id } = await jobs.enqueue(Renewal, { tag: 'renewal', until: day.toISOString() });
    expect(await tester.drain()).toMatchObject([{ outcome: 'snoozed', retryAt: day }]);
    await tester.advance(3 * 3_600_000 - 1);
    expect(await tester.drain()).toEqual([]);
    await tester.advance(1);
    expect(outcomes(await tester.drain())).toEqual(['succeeded']);
    expect(log.of('renewal')).toEqual(['notice#1', 'renew#2']);
    expect((await jobs.get(id))!.steps.find((s) => s.name === 'renewal-day')).toMatchObject({
      kind: 'sleep',
      wakeAt: day,
    });

    const far = new Date(clock.now().getTime() + 400 * DAY);
    const refused = await jobs.enqueue(Renewal, { tag: 'far', until: far.toISOString() });
    expect(outcomes(await tester.drain())).toEqual(['failed']);
    expect((await jobs.get(refused.id))!.lastError?.message).toMatch(
      /ctx\.sleepUntil\(\) in job "steps-renewal" \(\S+\): \S+ is more than a year away\. Potential fix/,
    );
  });

  it('steps and ctx.snooze: the attempt after the snooze goes on from the steps already done', async () => {
    const { jobs, tester } = kit;
    await jobs.enqueue(Checkout, { order: 'snooze', snoozeOnce: true });
    expect(outcomes(await tester.drain())).toEqual(['snoozed']);
    await tester.advance(5_000);
    expect(outcomes(await tester.drain())).toEqual(['succeeded']);
    expect(log.of('snooze')).toEqual(['charge#1', 'ship#2', 'receipt#2']);
  });

  it('retry keeps the finished steps; retry({ resetSteps: true }) starts over', async () => {
    const { jobs, tester } = kit;
    const kept = await jobs.enqueue(Checkout, { order: 'kept', failAfterOnce: true });
    const reset = await jobs.enqueue(Checkout, { order: 'reset', failAfterOnce: true });
    expect(outcomes(await tester.drain())).toEqual(['failed', 'failed']);
    await jobs.retry(kept.id);
    await jobs.retry(reset.id, { resetSteps: true });
    expect(outcomes(await tester.drain())).toEqual(['succeeded', 'succeeded']);
    expect(log.of('kept')).toEqual(['charge#1', 'ship#1', 'receipt#1']);
    expect(log.of('reset')).toEqual(['charge#1', 'ship#1', 'receipt#1', 'charge#2', 'ship#2', 'receipt#2']);
    expect(stepsOf(await jobs.get(reset.id)).map(([, , attempt]) => attempt)).toEqual([2, 2, 2]);
    await expect(jobs.retry(kept.id, { resetSteps: 'yes' as never })).rejects.toThrow(/"resetSteps" must be a boolean/);
  });

  it('a step that throws records nothing and fails the attempt as any error does', async () => {
    const { jobs, tester } = kit;
    const { id } = await jobs.enqueue(Checkout, { order: 'throws', shipFailsOnce: true });
    const [first] = await tester.drain();
    expect(first).toMatchObject({ outcome: 'retry', error: { message: 'carrier down' } });
    expect(stepsOf(await jobs.get(id))).toEqual([['charge', 'step', 1]]);
    await tester.advance(1_000);
    await tester.drain();
  });

  it('misuse is a clear error naming the job, the step and the fix', async () => {
    const { jobs, tester } = kit;
    const expected: Record<MisuseMode, RegExp> = {
      duplicate:
        /ctx\.step\("charge"\) in job "steps-misuse" \(\S+\): the name "charge" was already used in this run.*Potential fix/,
      empty: /ctx\.step\(""\) in job "steps-misuse".*must be a string of 1 to 200 characters, got an empty string/,
      long: /must be a string of 1 to 200 characters, got the string "x{60}…" \(201 characters\)/,
      number: /ctx\.step\(…\) in job "steps-misuse".*got 42/,
      clash: /"wait" is recorded as a sleep of this job, so it cannot be used here too/,
      big: /ctx\.step\("export"\) in job "steps-misuse" \(\S+\) returned 307202 bytes of JSON, over maxResultBytes \(262144\)/,
      'bad-options': /the second argument must be the step's function or \{ transaction: true \}/,
      unserialisable: /ctx\.step\("count"\).*returned a result that is not JSON-serialisable/,
      'bad-sleep': /ctx\.sleep\(\) in job "steps-misuse" \(\S+\): the duration must be a number of ms from 0 to/,
    };
    for (const [mode, message] of Object.entries(expected)) {
      const { id } = await jobs.enqueue(Misuse, { mode: mode as MisuseMode });
      // A clash is across attempts (within one, the name is refused as used): its first one snoozes.
      expect(outcomes(await tester.drain())).toEqual(mode === 'clash' ? ['snoozed', 'failed'] : ['failed']);
      const job = await jobs.get(id);
      expect({ mode, message: job!.lastError?.message }).toEqual({ mode, message: expect.stringMatching(message) });
    }
    // The refused calls ran nothing; only the first of the duplicates ran its function.
    expect(log.calls.filter((c) => c.startsWith('duplicate:') || c.startsWith('empty:'))).toEqual(['duplicate:fn#1']);
    // Oversized and unserialisable results fail for good: another attempt would only repeat the work.
    expect(() => kit.tester.dieAfterStep(Checkout, '')).toThrow(/JobsTester\.dieAfterStep\(\): the name must be/);
  });

  it('ctx.batchId and ctx.parentIds: batch members, their then job, chains and continuations, each with its steps', async () => {
    const { jobs, tester, app } = kit;
    const { id: batchId } = await app
      .get(BatchBuilder)
      .create('lineage')
      .add(Member, { tag: 'm1' })
      .add(Member, { tag: 'm2' })
      .then(Member, { tag: 'then' })
      .dispatch();
    const chain = await jobs.chain().then(Member, { tag: 'c1' }).then(Member, { tag: 'c2' }).dispatch();
    const flow = await jobs
      .flow()
      .add('a', Member, { tag: 'fa' })
      .add('b', Member, { tag: 'fb' })
      .add('c', Member, { tag: 'fc' }, { after: ['a', 'b'] })
      .dispatch();
    const parent = await jobs.enqueue(Member, { tag: 'parent', continueTo: 'continued' });
    await app.get(RecurringSchedules).upsert('steps-hourly', Member, '0 * * * *', { payload: { tag: 'tick' } });
    await tester.advance(3_600_000);
    await app.get(RecurringSchedules).remove('steps-hourly');
    await tester.drain();
    const seen = (tag: string) => {
      const entry = [...log.lineage].find(([, v]) => v.tag === tag);
      return entry ? { batchId: entry[1].batchId, parentIds: entry[1].parentIds } : undefined;
    };
    expect(seen('m1')).toEqual({ batchId, parentIds: [] });
    expect(seen('m2')).toEqual({ batchId, parentIds: [] });
    expect(seen('then')).toEqual({ batchId, parentIds: [] });
    expect(seen('c1')).toEqual({ batchId: null, parentIds: [] });
    expect(seen('c2')).toEqual({ batchId: null, parentIds: [chain.ids[0]] });
    // A flow is written with a batch record: its steps see it.
    expect(seen('fc')).toEqual({ batchId: flow.batchId, parentIds: [flow.ids.a, flow.ids.b].sort() });
    expect(seen('continued')).toEqual({ batchId: null, parentIds: [parent.id] });
    expect(seen('tick')).toEqual({ batchId: null, parentIds: [] });
    for (const tag of ['m1', 'then', 'c2', 'fc', 'continued', 'tick']) expect(log.of(tag)).toEqual(['work#1']);
    for (const [jobId] of log.lineage) expect(stepsOf(await jobs.get(jobId))).toEqual([['work', 'step', 1]]);
    // The continuation's edge shows where it came from; it never waited on it.
    const detail = await app.get(JobsAdmin).detail(parent.id);
    expect(detail!.children).toEqual([
      expect.objectContaining({ kind: 'job', on: 'success', parentOutcome: 'succeeded' }),
    ]);
  });

  it('JobsAdmin.detail() and the dashboard show the steps; results on request', async () => {
    const { jobs, tester, app } = kit;
    const { id } = await jobs.enqueue(Checkout, { order: 'shown', sleepMs: 60_000 });
    await tester.drain();
    const detail = await app.get(JobsAdmin).detail(id);
    expect(stepsOf(detail)).toEqual([
      ['charge', 'step', 1],
      ['ship', 'step', 1],
      ['cooling-off', 'sleep', 1],
    ]);
    expect(detail!.steps[0]).not.toHaveProperty('result');
    expect((await app.get(JobsAdmin).detail(id, { stepResults: true }))!.steps[1]!.result).toEqual({
      tracking: 'tr-shown',
    });
    const http = request(app.getHttpServer());
    const page = await http.get(`/jobs-dashboard/api/jobs/${id}`).expect(200);
    expect(page.body.steps.map((s: { name: string }) => s.name)).toEqual(['charge', 'ship', 'cooling-off']);
    expect(page.body.steps[0]).not.toHaveProperty('result');
    const steps = await http.get(`/jobs-dashboard/api/jobs/${id}/steps`).expect(200);
    expect(steps.body).toMatchObject([
      { name: 'charge', kind: 'step', attempt: 1, result: { id: 'ch-shown' } },
      { name: 'ship', kind: 'step', result: { tracking: 'tr-shown' } },
      { name: 'cooling-off', kind: 'sleep', wakeAt: expect.any(String), result: null },
    ]);
    await tester.advance(60_000);
    await tester.drain();
  });
});

// ---------------------------------------------------------------------------
// Real workers: instances of the app, and a worker process killed with SIGKILL.

const schemas: string[] = [];
const apps: INestApplication[] = [];

async function startInstance(schema: string, worker: Record<string, unknown>): Promise<INestApplication> {
  const app = await startJobsApp(
    schema,
    { worker: { pollInterval: 100, ...worker } },
    {
      providers: [
        ThreeSteps,
        Napper,
        GatedStep,
        StepGates,
        { provide: STEP_RUNS, useValue: `"${schema}".step_run` },
        { provide: VICTIM, useValue: false },
      ],
    },
  );
  apps.push(app);
  return app;
}

async function closeAll(): Promise<void> {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
}

afterAll(async () => {
  await closeAll();
  await dropSchemas(...schemas);
});

async function runs(schema: string, jobId: string): Promise<string[]> {
  const rows = await sql<{ step: string; attempt: number }>(
    `SELECT step, attempt FROM "${schema}".step_run WHERE job_id = $1 ORDER BY seq`,
    [jobId],
  );
  return rows.map((r) => `${r.step}#${r.attempt}`);
}

async function stepRunTable(schema: string): Promise<void> {
  await sql(
    `CREATE TABLE "${schema}".step_run (seq bigserial, job_id uuid NOT NULL, step text NOT NULL, attempt int NOT NULL, pid int NOT NULL)`,
  );
}

describe('durable steps across instances', () => {
  it('a worker killed with SIGKILL: after step 2 was recorded, the rescue runs only step 3; between step 2 and its record, step 2 again but not step 1', async () => {
    const schema = uniqueSchema('stepkill');
    schemas.push(schema);
    const api = await startInstance(schema, { enabled: false });
    await stepRunTable(schema);
    const queue = api.get(JobQueue);
    const afterRecord = await queue.enqueue(ThreeSteps, { hang: 'in-three' });
    const beforeRecord = await queue.enqueue(ThreeSteps, { hang: 'in-two' });
    const child = spawnVictim(schema);
    try {
      const victimId = await readyWorkerId(child, 'the victim worker');
      await waitFor('the victim to hang in both jobs', async () => {
        const [a, b] = [await runs(schema, afterRecord.id), await runs(schema, beforeRecord.id)];
        return a.includes('hanging-in-three#1') && b.includes('hanging-in-two#1');
      });
      // Where each one hangs, as the database has it: step two recorded for one, not for the other.
      expect(stepsOf(await queue.get(afterRecord.id))).toEqual([
        ['one', 'step', 1],
        ['two', 'step', 1],
      ]);
      expect(stepsOf(await queue.get(beforeRecord.id))).toEqual([['one', 'step', 1]]);
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      // Its minute-long leases are written off rather than waited out; the next instance rescues at start.
      await sql(`UPDATE "${schema}".job SET lease_expires_at = now() - interval '1 second' WHERE worker_id = $1`, [
        victimId,
      ]);
      await startInstance(schema, { lease: 60_000 });
      for (const { id } of [afterRecord, beforeRecord]) {
        await waitFor('the rescued job to succeed', async () => (await queue.get(id))?.state === 'succeeded', 20_000);
      }
      expect(await runs(schema, afterRecord.id)).toEqual(['one#1', 'two#1', 'hanging-in-three#1', 'three#2']);
      expect(await runs(schema, beforeRecord.id)).toEqual(['one#1', 'two#1', 'hanging-in-two#1', 'two#2', 'three#2']);
      for (const { id } of [afterRecord, beforeRecord]) {
        const job = await queue.get(id);
        expect(attemptsOf(job)).toEqual([
          [1, 'interrupted'],
          [2, 'succeeded'],
        ]);
        expect(job!.executions[0]!.workerId).toBe(victimId);
      }
      expect(stepsOf(await queue.get(beforeRecord.id))).toEqual([
        ['one', 'step', 1],
        ['two', 'step', 2],
        ['three', 'step', 2],
      ]);
    } finally {
      child.kill('SIGKILL');
      await closeAll();
    }
  });

  it("a superseded attempt's step is not recorded: claimed again while that attempt is inside the step, the job ends with the new attempt's", async () => {
    const schema = uniqueSchema('stepagain');
    schemas.push(schema);
    // A minute-long lease: it ends only when the test writes it off.
    const app = await startInstance(schema, { lease: 60_000 });
    const gates = app.get(StepGates);
    const queue = app.get(JobQueue);
    const firstInside = gates.reached('step#1');
    const { id } = await queue.enqueue(GatedStep, {});
    await firstInside;
    // Its lease runs out (as after a stall of this worker) and the rescue puts it back; this
    // worker, the only one, claims it again, and attempt 2 enters the step while attempt 1 is
    // still inside it.
    const secondInside = gates.reached('step#2');
    await sql(`UPDATE "${schema}".job SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
    await workerStorage(app).maintenance.rescueExpired(new Date(), 10);
    await secondInside;
    // Same worker, job active: only the attempt tells the earlier one's record from the new one's.
    gates.open('step#1');
    expect(await waitFor('attempt 1 to end its step', () => gates.ended.get(1))).toBe('LeaseLostError');
    expect(stepsOf(await queue.get(id))).toEqual([]);
    gates.open('step#2');
    await waitFor('the job to succeed', async () => (await queue.get(id))?.state === 'succeeded');
    expect(gates.ended.get(2)).toBe('recorded');
    const job = await queue.get(id, { stepResults: true });
    expect(job!.result).toEqual({ by: 2 });
    expect(job!.steps.map((s) => [s.name, s.attempt, s.result])).toEqual([['made', 2, { by: 2 }]]);
    expect(attemptsOf(job)).toEqual([
      [1, 'interrupted'],
      [2, 'succeeded'],
    ]);
    await closeAll();
  });

  it('a sleep of 2 s on one instance resumes on another', async () => {
    const schema = uniqueSchema('stepnap');
    schemas.push(schema);
    const first = await startInstance(schema, {});
    await stepRunTable(schema);
    const queue = first.get(JobQueue);
    const { id } = await queue.enqueue(Napper, { ms: 2_000 });
    await waitFor('the job to sleep', async () => {
      const job = await queue.get(id);
      return job?.state === 'queued' && job.steps.some((s) => s.kind === 'sleep');
    });
    const sleeper = (await queue.get(id))!.executions[0]!.workerId;
    await first.close();
    const second = await startInstance(schema, {});
    const job = await waitFor(
      'the job to resume and succeed',
      async () => {
        const j = await second.get(JobQueue).get(id);
        return j?.state === 'succeeded' ? j : null;
      },
      20_000,
    );
    expect(await runs(schema, id)).toEqual(['before#1', 'after#2']);
    expect(attemptsOf(job)).toEqual([
      [1, 'snoozed'],
      [2, 'succeeded'],
    ]);
    const nap = job.steps.find((s) => s.name === 'nap')!;
    expect(nap.wakeAt!.getTime() - nap.completedAt.getTime()).toBe(2_000);
    expect(job.executions[0]!.workerId).toBe(sleeper);
    expect(job.executions[1]!.workerId).not.toBe(sleeper);
    // It did not come back before its time.
    expect(job.executions[1]!.startedAt!.getTime()).toBeGreaterThanOrEqual(nap.wakeAt!.getTime());
    expect(job.maxAttempts).toBe(4);
    await closeAll();
  });
});

function spawnVictim(schema: string): ChildProcess {
  return spawn(process.execPath, ['--import', './test/support/register-swc.mjs', 'test/support/steps-child.ts'], {
    env: { ...process.env, CHILD_SCHEMA: schema, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}
