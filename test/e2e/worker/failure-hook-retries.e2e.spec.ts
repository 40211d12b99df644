import { spawn, type ChildProcess } from 'node:child_process';
import type { INestApplication } from '@nestjs/common';
import { DEFAULT_MAX_ERROR_BYTES, Job, JobQueue, JobsError, type FailureHookInfo } from 'nestjs-durable-jobs';
import { readyWorkerId } from '../../support/child-ready.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import {
  HookProbe,
  hookRuns,
  hookRunTable,
  NoHookProbe,
  SlowHookProbe,
  TimeoutHookProbe,
  type HookProbePayload,
} from '../../support/hook.jobs.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

/** onFailure hooks that throw run again with backoff, a bounded number of times, across instances. */

const schema = uniqueSchema('hook_retries');
const runs = `${schema}_runs`;
/** The schema of an app its defaults keep from starting. */
const badSchema = `${schema}_bad`;
const apps: INestApplication[] = [];
let app: INestApplication;
/** The job of the PermanentJobError test, retried by the last test. */
let permanentId = '';
/** An instance that only enqueues and reads (its worker disabled), from the crash test on. */
let api: INestApplication;

async function start(worker: { enabled?: boolean } = {}): Promise<INestApplication> {
  const started = await startJobsApp(
    schema,
    { worker: { lease: 1000, pollInterval: 100, ...worker } },
    { providers: [HookProbe, SlowHookProbe, NoHookProbe, TimeoutHookProbe] },
  );
  apps.push(started);
  return started;
}

beforeAll(async () => {
  await sql(`CREATE SCHEMA IF NOT EXISTS "${runs}"`);
  await hookRunTable(runs);
  app = await start();
});

afterAll(async () => {
  for (const a of apps.splice(0)) await a.close().catch(() => undefined);
  await dropSchemas(schema, runs, badSchema);
});

async function hookOf(id: string, from = app): Promise<FailureHookInfo | null> {
  return (await from.get(JobQueue).get(id))?.failureHook ?? null;
}

function waitForHook(id: string, state: FailureHookInfo['state'], from = app): Promise<unknown> {
  return waitFor(
    `the onFailure hook of ${id} to be ${state}`,
    async () => (await hookOf(id, from))?.state === state,
    20_000,
  );
}

function payload(p: Omit<HookProbePayload, 'schema'>): HookProbePayload {
  return { schema: runs, ...p };
}

it('refuses onFailureRetries it cannot follow, on the @Job and in the module defaults', async () => {
  const declare = (onFailureRetries: unknown) => () =>
    Job('hook-bad', { onFailureRetries: onFailureRetries as never })(class BadHook {});
  expect(declare({ attempts: 0 })).toThrow(JobsError);
  expect(declare({ attempts: 0 })).toThrow(
    /@Job\('hook-bad'\) on class BadHook: "onFailureRetries\.attempts" must be an integer .*Potential fix/,
  );
  expect(declare({ backoff: { type: 'linear', delay: 1 } })).toThrow(
    /"onFailureRetries\.backoff" must be \{ type: 'fixed' \| 'exponential', delay: ms >= 0 \}.*Potential fix: onFailureRetries\.backoff:/,
  );
  expect(declare(5)).toThrow(/"onFailureRetries" must be an object \{ attempts, backoff \}, got 5\. Potential fix/);
  await expect(startJobsApp(badSchema, { defaults: { onFailureRetries: { attempts: 1.5 } } }, {})).rejects.toThrow(
    /JobsModule\.forRoot\(\) defaults: "onFailureRetries\.attempts" must be an integer/,
  );
});

it('a hook that fails twice, then returns, runs 3 times with its backoff between and ends done', async () => {
  const { id } = await app.get(JobQueue).enqueue(HookProbe, payload({ failTimes: 2 }));
  await waitForHook(id, 'done');
  const recorded = await hookRuns(runs, id);
  expect(recorded.map((r) => r.run)).toEqual([1, 2, 3]);
  // Each rerun waits out the fixed 400 ms backoff after the run before ended.
  for (const r of recorded.slice(1)) expect(r.gapMs).toBeGreaterThanOrEqual(400);
  const hook = (await hookOf(id))!;
  expect(hook).toMatchObject({ state: 'done', attempts: 3, nextRunAt: null });
  expect(hook.lastError).toMatchObject({ name: 'Error', message: 'hook run 2 broke' });
  const job = (await app.get(JobQueue).get(id))!;
  expect(job.state).toBe('failed');
  expect(job.lastError?.message).toBe('the job broke');
});

it('a hook that always throws stops after its bound and shows failed with its last error', async () => {
  const { id } = await app.get(JobQueue).enqueue(HookProbe, payload({ failTimes: 1_000 }));
  await waitFor(
    'the hook to wait for its second run',
    async () => (await hookOf(id))?.state === 'pending' && (await hookOf(id))?.attempts === 1,
    20_000,
    20,
  );
  const waiting = (await hookOf(id))!;
  expect(waiting.nextRunAt).toBeInstanceOf(Date);
  expect(waiting.lastError?.message).toBe('hook run 1 broke');
  await waitForHook(id, 'failed');
  expect((await hookRuns(runs, id)).map((r) => r.run)).toEqual([1, 2, 3, 4]);
  const hook = (await hookOf(id))!;
  expect(hook).toMatchObject({ state: 'failed', attempts: 4, nextRunAt: null });
  expect(hook.lastError).toMatchObject({ name: 'Error', message: 'hook run 4 broke' });
  expect(hook.lastError?.stack).toContain('hook run 4 broke');
  const [row] = await sql<{ failure_hook: string; hook_run_at: Date | null; hook_worker_id: string | null }>(
    `SELECT failure_hook, hook_run_at, hook_worker_id FROM "${schema}".job WHERE id = $1`,
    [id],
  );
  expect(row).toEqual({ failure_hook: 'failed', hook_run_at: null, hook_worker_id: null });
});

it('a hook that throws a PermanentJobError is not run again', async () => {
  const { id } = await app.get(JobQueue).enqueue(HookProbe, payload({ failTimes: 0, permanent: true }));
  permanentId = id;
  await waitForHook(id, 'failed');
  expect((await hookRuns(runs, id)).map((r) => r.run)).toEqual([1]);
  const hook = (await hookOf(id))!;
  expect(hook).toMatchObject({ state: 'failed', attempts: 1 });
  expect(hook.lastError).toMatchObject({ name: 'PermanentJobError', message: 'hook run 1: the record is gone' });
});

it("a hook's error is stored within maxErrorBytes as a job's is: its message and its stack each cut", async () => {
  // The app keeps the default bound; the hook's message (and so its stack) is well over it.
  const { id } = await app
    .get(JobQueue)
    .enqueue(HookProbe, payload({ failTimes: 0, permanent: true, padBytes: 3 * DEFAULT_MAX_ERROR_BYTES }));
  await waitForHook(id, 'failed');
  const { message, stack } = (await hookOf(id))!.lastError!;
  // Sizes first: a failure then says how far over the bound it is, not the whole text.
  expect(Buffer.byteLength(message)).toBeLessThanOrEqual(DEFAULT_MAX_ERROR_BYTES);
  expect(Buffer.byteLength(stack!)).toBeLessThanOrEqual(DEFAULT_MAX_ERROR_BYTES);
  expect(message).toMatch(/^hook run 1: the record is gone x+… \[cut \d+ bytes\]$/);
  expect(stack).toMatch(/^PermanentJobError: hook run 1: the record is gone x+… \[cut \d+ bytes\]$/);
});

it('the hook of a job whose last attempt timed out runs again after throwing, and ends done once', async () => {
  const { id } = await app.get(JobQueue).enqueue(TimeoutHookProbe, payload({ failTimes: 1 }));
  await waitForHook(id, 'done');
  expect((await hookRuns(runs, id)).map((r) => r.run)).toEqual([1, 2]);
  expect(await hookOf(id)).toMatchObject({ state: 'done', attempts: 2, lastError: { message: 'hook run 1 broke' } });
  expect((await app.get(JobQueue).get(id))!.lastError?.name).toBe('JobTimeoutError');
});

it('jobs the rescue fails: a hook runs from the sweep; a handler without onFailure shows no hook', async () => {
  const later = new Date(Date.now() + 3_600_000);
  const { id: withHook } = await app.get(JobQueue).enqueue(HookProbe, payload({ failTimes: 0 }), { runAt: later });
  const { id: without } = await app.get(JobQueue).enqueue(NoHookProbe, {}, { runAt: later });
  // What a worker that claimed them and died leaves: attempts spent, leases run out.
  await sql(
    `UPDATE "${schema}".job SET state = 'active', attempt = 1, worker_id = 'ghost:1', started_at = now(),
            lease_expires_at = now() - interval '1 second' WHERE id = ANY($1::uuid[])`,
    [[withHook, without]],
  );
  await waitForHook(withHook, 'done');
  expect(await hookOf(withHook)).toMatchObject({ state: 'done', attempts: 1, lastError: null });
  await waitFor('the job without a hook to be swept', async () => {
    const [row] = await sql<{ failure_hook: string }>(`SELECT failure_hook FROM "${schema}".job WHERE id = $1`, [
      without,
    ]);
    return row?.failure_hook === 'done';
  });
  const job = (await app.get(JobQueue).get(without))!;
  expect(job.state).toBe('failed');
  expect(job.failureHook).toBeNull();
  const [row] = await sql(`SELECT hook_attempt, hook_error FROM "${schema}".job WHERE id = $1`, [without]);
  expect(row).toEqual({ hook_attempt: 0, hook_error: null });
});

it('a worker killed while its hook waits for a rerun: another instance runs the remaining runs', async () => {
  // Only the child works: this instance stops, and an API-only one enqueues and reads.
  await app.close();
  apps.splice(apps.indexOf(app), 1);
  api = await start({ enabled: false });
  const child = spawnHookChild();
  let exited = false;
  child.once('exit', () => (exited = true));
  try {
    const childId = await readyWorkerId(child, 'hook child');
    const { id } = await api.get(JobQueue).enqueue(SlowHookProbe, payload({ failTimes: 2 }));
    // Its first run threw; the 3 s backoff holds the second.
    await waitFor(
      'the child to run the hook once',
      async () => (await hookOf(id, api))?.state === 'pending',
      20_000,
      20,
    );
    child.kill('SIGKILL');
    await new Promise<void>((resolve) => (exited ? resolve() : child.once('exit', () => resolve())));
    const waiting = (await hookOf(id, api))!;
    expect(waiting).toMatchObject({ state: 'pending', attempts: 1 });
    expect((await hookRuns(runs, id)).map((r) => [r.run, r.instance])).toEqual([[1, 'child']]);

    // Another instance, started once the child is dead: only it can run the remaining runs.
    await start();
    await waitForHook(id, 'done', api);
    const recorded = await hookRuns(runs, id);
    expect(recorded.map((r) => [r.run, r.instance])).toEqual([
      [1, 'child'],
      [2, 'test'],
      [3, 'test'],
    ]);
    for (const r of recorded.slice(1)) expect(r.gapMs).toBeGreaterThanOrEqual(3_000);
    const [row] = await sql<{ hook_worker_id: string | null }>(
      `SELECT hook_worker_id FROM "${schema}".job WHERE id = $1`,
      [id],
    );
    expect(row!.hook_worker_id).toBeNull();
    const executions = (await api.get(JobQueue).get(id))!.executions;
    expect(executions.map((e) => e.workerId)).toEqual([childId]);
    expect(await hookOf(id, api)).toMatchObject({ state: 'done', attempts: 3 });
  } finally {
    if (!exited) child.kill('SIGKILL');
  }
});

it("a worker killed during a hook's last allowed run: no instance runs it again, and it ends failed after its allowed runs", async () => {
  // Only the child works until it dies: the instances that work here stop; the API-only one stays.
  for (const a of apps.splice(0)) {
    if (a === api) apps.push(a);
    else await a.close();
  }
  const child = spawnHookChild();
  let exited = false;
  child.once('exit', () => (exited = true));
  try {
    await readyWorkerId(child, 'hook child');
    // HookProbe allows 4 runs, 400 ms apart: the first three throw, the fourth hangs in the child.
    const { id } = await api.get(JobQueue).enqueue(HookProbe, payload({ failTimes: 1_000, hangOnRun: 4 }));
    await waitFor('the child to start the last run', async () => (await hookRuns(runs, id)).length === 4, 20_000);
    expect(await hookOf(id, api)).toMatchObject({ state: 'running', attempts: 4 });
    child.kill('SIGKILL');
    await new Promise<void>((resolve) => (exited ? resolve() : child.once('exit', () => resolve())));

    // Started once the child is dead: its sweep takes the hook when the dead run's lease runs out.
    await start();
    await waitForHook(id, 'failed', api);
    expect((await hookRuns(runs, id)).map((r) => [r.run, r.instance])).toEqual([
      [1, 'child'],
      [2, 'child'],
      [3, 'child'],
      [4, 'child'],
    ]);
    // Its 4 runs: the sweep's claim that found none left ran nothing, and does not count as a run.
    const hook = (await hookOf(id, api))!;
    expect(hook).toMatchObject({ state: 'failed', attempts: 4, nextRunAt: null });
    expect(hook.lastError?.message).toMatch(/has no run left: its 4 run\(s\) are used up, the last one interrupted/);
    const [row] = await sql(`SELECT hook_worker_id, hook_lease_expires_at FROM "${schema}".job WHERE id = $1`, [id]);
    expect(row).toEqual({ hook_worker_id: null, hook_lease_expires_at: null });
  } finally {
    if (!exited) child.kill('SIGKILL');
  }
});

it('a retried job starts its hook afresh: the hook of its earlier failure no longer shows', async () => {
  // Only the API-only instance is left: the retried job waits, unclaimed.
  for (const a of apps.splice(0)) {
    if (a === api) apps.push(a);
    else await a.close();
  }
  await api.get(JobQueue).retry(permanentId);
  const job = (await api.get(JobQueue).get(permanentId))!;
  expect(job.state).toBe('queued');
  expect(job.failureHook).toBeNull();
  const [row] = await sql(`SELECT hook_attempt, hook_error, hook_run_at FROM "${schema}".job WHERE id = $1`, [
    permanentId,
  ]);
  expect(row).toEqual({ hook_attempt: 0, hook_error: null, hook_run_at: null });
});

function spawnHookChild(): ChildProcess {
  return spawn(process.execPath, ['--import', './test/support/register-swc.mjs', 'test/support/hook-child.ts'], {
    env: { ...process.env, CHILD_SCHEMA: schema, HOOK_INSTANCE: 'child', NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}
