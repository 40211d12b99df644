import { spawn, type ChildProcess } from 'node:child_process';
import { workerStorage } from '../../support/job-storage.js';
import type { INestApplication, Provider } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { JobQueue, JobQueues } from 'nestjs-durable-jobs';

import { SlowReport } from '../../../sample/jobs/slow-report.job.js';
import { readyWorkerId } from '../../support/child-ready.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { CountingProbe, DoomedProbe, ProbeRecorder, RunMeeting, probeProviders } from '../../support/probe.jobs.js';
import { startSampleApp } from '../../support/sample-app.js';
import { sleep, waitFor } from '../../support/wait.js';

const schemas: string[] = [];
const apps: INestApplication[] = [];

async function start(
  schema: string,
  instance: string,
  worker: Parameters<typeof startSampleApp>[0]['worker'] = {},
  providers: Provider[] = [],
) {
  const app = await startSampleApp({
    schema,
    worker: { pollInterval: 100, ...worker },
    providers: [...probeProviders(instance), ...providers],
  });
  apps.push(app);
  return app;
}

async function closeAll() {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
}

afterAll(async () => {
  await closeAll();
  await dropSchemas(...schemas.flatMap((s) => [s, `${s}_jobs`]));
});

it('two instances share 1,000 jobs: each runs exactly once and both take work', async () => {
  const schema = uniqueSchema('pair');
  schemas.push(schema);
  // The first twenty runs meet: twenty at once take the ten slots of each instance, so both
  // take work however the machine's load and the prefetch split the rest.
  const meeting = [{ provide: RunMeeting, useValue: new RunMeeting(20) }];
  const a = await start(schema, 'A', { concurrency: 10 }, meeting);
  await sql(`CREATE TABLE "${schema}".probe_run (job_id uuid NOT NULL, instance text NOT NULL)`);
  const b = await start(schema, 'B', { concurrency: 10 }, meeting);
  const items = Array.from({ length: 1000 }, (_, i) => ({ job: CountingProbe, payload: { i } }));
  // Half from each instance, in chunks, while both are already working.
  const chunks = [];
  for (let i = 0; i < items.length; i += 100) chunks.push(items.slice(i, i + 100));
  await Promise.all(chunks.map((chunk, i) => (i % 2 ? a : b).get(JobQueue).enqueueMany(chunk)));
  await waitFor(
    'all 1,000 jobs to succeed',
    async () =>
      (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}_jobs".job WHERE state = 'succeeded'`))[0]!
        .n === 1000,
    60_000,
    100,
  );
  const perJob = await sql<{ runs: number; jobs: number }>(
    `SELECT runs, count(*)::int AS jobs FROM (SELECT job_id, count(*)::int AS runs FROM "${schema}".probe_run GROUP BY job_id) r GROUP BY runs`,
  );
  expect(perJob).toEqual([{ runs: 1, jobs: 1000 }]);
  const perInstance = await sql<{ instance: string; n: number }>(
    `SELECT instance, count(*)::int AS n FROM "${schema}".probe_run GROUP BY instance ORDER BY instance`,
  );
  expect(perInstance.map((r) => r.instance)).toEqual(['A', 'B']);
  for (const row of perInstance) expect(row.n).toBeGreaterThanOrEqual(10);
  await closeAll();
});

it('a worker killed with SIGKILL mid-job: another instance completes it after the lease; history shows interrupted, then succeeded', async () => {
  const schema = uniqueSchema('crash');
  schemas.push(schema);
  // An API-only instance enqueues, so only the child can take the job.
  const api = await start(schema, 'api', { enabled: false });
  // A minute-long lease: no stall of this shared machine can end it while the child lives (a
  // lost lease would add attempts to the history checked below). Once the child is dead, the
  // test writes its lease off instead of waiting it out.
  const child = spawnWorker(schema, 60_000);
  try {
    const childId = await readyWorkerId(child, 'worker child');
    const { id } = await api.get(JobQueue).enqueue(SlowReport, { steps: 40, stepMs: 100 });
    await waitFor('the child to run the job', async () => {
      const job = await api.get(JobQueue).get(id);
      return job?.state === 'active' && job.workerId === childId && (job.progress ?? 0) > 0;
    });
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    await sql(`UPDATE "${schema}_jobs".job SET lease_expires_at = $2 WHERE id = $1`, [
      id,
      new Date(Date.now() - 1_000),
    ]);
    // It rescues at start; a long lease keeps its own 4 s run of the job safe from stalls too.
    await start(schema, 'rescuer', { lease: 60_000 });
    await waitFor(
      'the job to succeed elsewhere',
      async () => (await api.get(JobQueue).get(id))?.state === 'succeeded',
      20_000,
    );
    const job = (await api.get(JobQueue).get(id))!;
    expect(job.executions.map((e) => [e.attempt, e.state])).toEqual([
      [1, 'interrupted'],
      [2, 'succeeded'],
    ]);
    expect(job.executions[0]!.workerId).toBe(childId);
    expect(job.executions[1]!.workerId).not.toBe(childId);
    expect(job.executions[0]!.error?.name).toBe('LeaseLostError');
  } finally {
    child.kill('SIGKILL');
    await closeAll();
  }
});

it('a worker killed with SIGKILL holding a job claimed ahead: both it and the running one run again elsewhere', async () => {
  const schema = uniqueSchema('crashahead');
  schemas.push(schema);
  const api = await start(schema, 'api', { enabled: false });
  // Limited to one: the child runs one report and holds the next claimed ahead, uncounted.
  await api.get(JobQueues).setLimits('reports', { concurrency: 1 });
  const child = spawnWorker(schema, 60_000);
  try {
    const childId = await readyWorkerId(child, 'worker child');
    const queue = api.get(JobQueue);
    const [running, ahead] = await queue.enqueueMany([
      { job: SlowReport, payload: { steps: 40, stepMs: 100 } },
      { job: SlowReport, payload: { steps: 1, stepMs: 0 } },
    ]);
    const held = () =>
      sql<{ id: string; reserved: boolean }>(
        `SELECT id, reserved FROM "${schema}_jobs".job WHERE state = 'active' AND worker_id = $1 ORDER BY id`,
        [childId],
      );
    await waitFor('the child to run one report and hold the other ahead', async () => {
      const rows = await held();
      return rows.length === 2 && !rows[0]!.reserved && rows[1]!.reserved;
    });
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    await sql(`UPDATE "${schema}_jobs".job SET lease_expires_at = $1 WHERE worker_id = $2 AND state = 'active'`, [
      new Date(Date.now() - 1_000),
      childId,
    ]);
    await start(schema, 'rescuer', { lease: 60_000 });
    for (const { id } of [running!, ahead!]) {
      await waitFor(
        'both reports to succeed elsewhere',
        async () => (await queue.get(id))?.state === 'succeeded',
        20_000,
      );
    }
    // The rescue cannot tell a job claimed ahead that never started from one started in a
    // success's place whose write the crash lost: each counts as an interrupted attempt.
    for (const { id } of [running!, ahead!]) {
      const job = (await queue.get(id))!;
      expect(job.executions.map((e) => [e.attempt, e.state])).toEqual([
        [1, 'interrupted'],
        [2, 'succeeded'],
      ]);
      expect(job.executions[1]!.workerId).not.toBe(childId);
    }
  } finally {
    child.kill('SIGKILL');
    await closeAll();
  }
});

it('graceful shutdown waits for a running job', async () => {
  const schema = uniqueSchema('grace');
  schemas.push(schema);
  const app = await start(schema, 'A', { shutdownGrace: 10_000 });
  const queue = app.get(JobQueue);
  const { id } = await queue.enqueue(SlowReport, { steps: 5, stepMs: 150 });
  await waitFor('the job to start', async () => (await queue.get(id))?.state === 'active');
  const api = await start(schema, 'api', { enabled: false });
  await app.close();
  const job = (await api.get(JobQueue).get(id))!;
  expect(job.state).toBe('succeeded');
  expect(job.executions.map((e) => e.state)).toEqual(['succeeded']);
  await closeAll();
});

it('with a short grace, shutdown hands the job back and another instance finishes it at once', async () => {
  const schema = uniqueSchema('handback');
  schemas.push(schema);
  // A 30 s lease: if the job moves within seconds it was handed back, not rescued.
  const first = await start(schema, 'A', { shutdownGrace: 200, lease: 30_000 });
  const { id } = await first.get(JobQueue).enqueue(SlowReport, { steps: 10, stepMs: 200 });
  await waitFor('the job to start', async () => (await first.get(JobQueue).get(id))?.state === 'active');
  const firstWorker = (await first.get(JobQueue).get(id))!.workerId;
  await first.close();
  const second = await start(schema, 'B', { lease: 30_000 });
  await waitFor(
    'the second instance to finish it',
    async () => (await second.get(JobQueue).get(id))?.state === 'succeeded',
    10_000,
  );
  const job = (await second.get(JobQueue).get(id))!;
  // One execution per attempt: the handed-back one stays in the history, and the job got an attempt in return.
  expect(job.executions.map((e) => [e.attempt, e.state])).toEqual([
    [1, 'interrupted'],
    [2, 'succeeded'],
  ]);
  expect(job.maxAttempts).toBe(4);
  expect(job.executions[0]!.workerId).toBe(firstWorker);
  expect(job.executions[0]!.error?.name).toBe('WorkerShutdownError');
  expect(job.executions[1]!.workerId).not.toBe(firstWorker);
  await closeAll();
});

it('a NOTIFY sent at commit wakes an idle worker on another instance, with polling out of the picture', async () => {
  const schema = uniqueSchema('wake');
  schemas.push(schema);
  const api = await start(schema, 'api', { enabled: false });
  await sql(`CREATE TABLE "${schema}".probe_run (seq bigserial, job_id uuid NOT NULL, instance text NOT NULL)`);
  // A 60 s poll: if the job runs within seconds, a notification woke the worker.
  await start(schema, 'W', { pollInterval: 60_000 });
  await sleep(300);
  let id = '';
  await api.get(DataSource).transaction(async (manager) => {
    id = (await api.get(JobQueue).enqueue(CountingProbe, { i: 1 }, { manager })).id;
    await sleep(400);
    // Uncommitted: no worker can see it yet.
    expect((await sql(`SELECT 1 FROM "${schema}".probe_run`)).length).toBe(0);
  });
  await waitFor(
    'the notified worker to run the job',
    async () => (await api.get(JobQueue).get(id))?.state === 'succeeded',
    10_000,
  );
  const runs = await sql<{ instance: string }>(`SELECT instance FROM "${schema}".probe_run`);
  expect(runs).toEqual([{ instance: 'W' }]);
  await closeAll();
});

it('serves queues in the configured order, then by priority', async () => {
  const schema = uniqueSchema('order');
  schemas.push(schema);
  const api = await start(schema, 'api', { enabled: false });
  await sql(`CREATE TABLE "${schema}".probe_run (seq bigserial, job_id uuid NOT NULL, instance text NOT NULL)`);
  const queue = api.get(JobQueue);
  const low = await queue.enqueueMany([
    { job: CountingProbe, payload: { i: 1 } },
    { job: CountingProbe, payload: { i: 2 } },
  ]);
  const [high] = await queue.enqueueMany([{ job: CountingProbe, payload: { i: 3 }, options: { priority: 5 } }]);
  const critical = await queue.enqueueMany([
    { job: CountingProbe, payload: { i: 4 }, options: { queue: 'critical' } },
    { job: CountingProbe, payload: { i: 5 }, options: { queue: 'critical' } },
  ]);
  await start(schema, 'W', { concurrency: 1, prefetch: 0, queues: ['critical', 'counting'] });
  await waitFor('all five jobs', async () => (await sql(`SELECT 1 FROM "${schema}".probe_run`)).length === 5);
  const order = (await sql<{ job_id: string }>(`SELECT job_id FROM "${schema}".probe_run ORDER BY seq`)).map(
    (r) => r.job_id,
  );
  expect(new Set(order.slice(0, 2))).toEqual(new Set(critical.map((j) => j.id)));
  expect(order[2]).toBe(high!.id);
  expect(new Set(order.slice(3))).toEqual(new Set(low.map((j) => j.id)));
  await closeAll();
});

it('a job whose attempts are used up by crashes ends failed, saying so', async () => {
  const schema = uniqueSchema('exhaust');
  schemas.push(schema);
  const api = await start(schema, 'api', { enabled: false });
  const { id } = await api.get(JobQueue).enqueue(SlowReport, { steps: 1, stepMs: 1 }, { maxAttempts: 1 });
  // A worker that claims the job and then vanishes without a word.
  const storage = workerStorage(api);
  const claimed = await storage.claims.claim({
    workerId: 'ghost:1',
    queue: 'reports',
    names: ['slow-report'],
    limit: 1,
    now: new Date(),
    leaseMs: 200,
  });
  expect(claimed.map((j) => j.id)).toEqual([id]);
  await start(schema, 'rescuer', { lease: 1000 });
  await waitFor('the job to fail', async () => (await api.get(JobQueue).get(id))?.state === 'failed', 10_000);
  const job = (await api.get(JobQueue).get(id))!;
  expect(job.lastError?.name).toBe('LeaseLostError');
  expect(job.lastError?.message).toMatch(
    /Attempt 1 of 1 was interrupted \(worker ghost:1 stopped renewing its lease\) and no attempts remain/,
  );
  expect(job.executions.map((e) => [e.attempt, e.state, e.workerId])).toEqual([[1, 'interrupted', 'ghost:1']]);
  await closeAll();
});

it("when crashes use up a job's attempts, the instance that fails it runs its onFailure, once", async () => {
  const schema = uniqueSchema('exhaust_hook');
  schemas.push(schema);
  const api = await start(schema, 'api', { enabled: false });
  const { id } = await api.get(JobQueue).enqueue(DoomedProbe, {}, { maxAttempts: 1 });
  const claimed = await workerStorage(api).claims.claim({
    workerId: 'ghost:2',
    queue: 'default',
    names: ['probe-doomed'],
    limit: 1,
    now: new Date(),
    leaseMs: 200,
  });
  expect(claimed.map((j) => j.id)).toEqual([id]);
  const rescuers = [await start(schema, 'r1', { lease: 1000 }), await start(schema, 'r2', { lease: 1000 })];
  await waitFor('the job to fail', async () => (await api.get(JobQueue).get(id))?.state === 'failed', 10_000);
  await waitFor('onFailure to run', async () => rescuers.some((app) => app.get(ProbeRecorder).failures.has(id)));
  await sleep(1500); // two more rescue rounds on each instance: none may call the hook again
  const calls = rescuers.map((app) => app.get(ProbeRecorder).failures.get(id) ?? 0);
  expect(calls.reduce((a, b) => a + b)).toBe(1);
  const seen = rescuers.map((app) => app.get(ProbeRecorder).failureSeen.get(id)).find(Boolean);
  // The hook runs on its own, after the attempt: its signal aborts only if its own run is stopped.
  expect(seen).toEqual({ error: 'LeaseLostError', aborted: false });
  expect(api.get(ProbeRecorder).failures.has(id)).toBe(false);
  await closeAll();
});

function spawnWorker(schema: string, lease: number): ChildProcess {
  return spawn(process.execPath, ['--import', './test/support/register-swc.mjs', 'test/support/worker-child.ts'], {
    env: { ...process.env, CHILD_SCHEMA: schema, CHILD_LEASE: String(lease), NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}
