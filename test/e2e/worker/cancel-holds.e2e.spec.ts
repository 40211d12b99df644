/**
 * A cancel, once accepted, ends the job cancelled whatever becomes of the worker that holds it.
 * The worker is a real process running a handler that ignores its signal; the test stops it
 * (SIGSTOP) before it can hear of the cancel, then kills it, lets its lease run out, or stops it
 * the way a process manager does. Each time the job ends cancelled, its handler is not started
 * again, and its history says why.
 */
import type { INestApplication } from '@nestjs/common';
import { JobQueue } from 'nestjs-durable-jobs';
import { AppProcess } from '../../support/app-process.js';
import { CancelThenRetry, HoldOn } from '../../support/cancel.jobs.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { KitJobsModule } from '../../support/kit.jobs.js';
import { startTestingApp, type TestingApp } from '../../support/testing-app.js';
import { sleep, waitFor } from '../../support/wait.js';

const schemas: string[] = [];
const apps: INestApplication[] = [];
const children = new Set<AppProcess>();
let kit: TestingApp | undefined;

// Each test's instances and child end with it: behind a session pooler every open instance keeps
// its server connections, and a file's worth of them would exhaust the pool.
afterEach(async () => {
  for (const child of children) child.killGroup();
  await Promise.all([...children].map((child) => child.exited));
  children.clear();
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
});

afterAll(async () => {
  await kit?.app.close();
  await dropSchemas(...schemas);
});

interface Setup {
  schema: string;
  jobs: JobQueue;
  /** HoldOn's payload: the table its handler records each start in. */
  log: string;
}

/** A schema, an API-only app on it, and the table of handler starts. */
async function setup(prefix: string): Promise<Setup> {
  const schema = uniqueSchema(prefix);
  schemas.push(schema);
  const api = await startJobsApp(schema, { worker: { enabled: false } }, { providers: [HoldOn] });
  apps.push(api);
  const log = `"${schema}".hold_run`;
  await sql(`CREATE TABLE ${log} (job_id uuid NOT NULL, attempt int NOT NULL, pid int NOT NULL)`);
  return { schema, jobs: api.get(JobQueue), log };
}

/** Another instance's worker, in this process: it rescues expired leases and would run the job. */
async function startRescuer(schema: string, lease: number): Promise<void> {
  apps.push(await startJobsApp(schema, { worker: { lease, pollInterval: 100 } }, { providers: [HoldOn] }));
}

async function startChild(schema: string, lease: number, grace = 1_000): Promise<AppProcess> {
  const child = new AppProcess(
    process.execPath,
    ['--import', './test/support/register-swc.mjs', 'test/support/cancel-child.ts'],
    { CHILD_SCHEMA: schema, CHILD_LEASE: String(lease), CHILD_GRACE: String(grace) },
  );
  children.add(child);
  await child.line(/^ready$/, 30_000);
  return child;
}

/** Enqueues HoldOn and waits until the child's handler runs it. */
async function runningInChild({ jobs, log }: Setup, child: AppProcess): Promise<string> {
  const { id } = await jobs.enqueue(HoldOn, { log });
  await child.line(new RegExp(`^running ${id} 1$`), 20_000);
  return id;
}

/** Cancels a running job and checks that the cancel was accepted (the flag is on its row). */
async function cancelAccepted(jobs: JobQueue, id: string): Promise<void> {
  await jobs.cancel(id);
  expect(await jobs.get(id)).toMatchObject({ state: 'active', cancelRequested: true });
}

async function handlerStarts(log: string, id: string): Promise<Array<{ attempt: number; pid: number }>> {
  return sql(`SELECT attempt, pid FROM ${log} WHERE job_id = $1 ORDER BY attempt`, [id]);
}

async function expectCancelledOnce(setup: Setup, id: string, child: AppProcess, why: RegExp): Promise<void> {
  const job = (await setup.jobs.get(id))!;
  expect(job.state).toBe('cancelled');
  expect(job.lastError).toMatchObject({ name: 'JobCancelledError', message: expect.stringMatching(why) });
  expect(job.executions.map((e) => [e.attempt, e.state, e.error?.name])).toEqual([
    [1, 'cancelled', 'JobCancelledError'],
  ]);
  expect(await handlerStarts(setup.log, id)).toEqual([{ attempt: 1, pid: child.pid }]);
}

it('a worker killed (SIGKILL) after the cancel was accepted: the rescue ends the job cancelled instead of running it again', async () => {
  const s = await setup('cancelkill');
  // A minute-long lease: the test writes it off once the child is dead rather than waiting.
  const child = await startChild(s.schema, 60_000);
  const id = await runningInChild(s, child);
  process.kill(child.pid, 'SIGSTOP');
  await cancelAccepted(s.jobs, id);
  process.kill(child.pid, 'SIGKILL');
  await child.exited;
  await sql(`UPDATE "${s.schema}".job SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
  // It rescues at start, and would claim the job if the rescue put it back in the queue.
  await startRescuer(s.schema, 60_000);
  await waitFor('the rescue to end the job', async () => (await s.jobs.get(id))?.state !== 'active', 20_000);
  await expectCancelledOnce(s, id, child, /was cancelled; its worker \S+ stopped renewing the lease/);
});

it('a worker stalled past its lease after the cancel was accepted: the job ends cancelled, and the worker, once it wakes, writes nothing', async () => {
  const s = await setup('cancelstall');
  const child = await startChild(s.schema, 2_000);
  const id = await runningInChild(s, child);
  process.kill(child.pid, 'SIGSTOP');
  await cancelAccepted(s.jobs, id);
  // Its rescue pass runs every second; the stalled child's lease runs out two seconds after its last renewal.
  await startRescuer(s.schema, 2_000);
  await waitFor('the rescue to end the job', async () => (await s.jobs.get(id))?.state !== 'active', 20_000);
  expect((await s.jobs.get(id))!.state).toBe('cancelled');
  // Woken, the child renews (a third of its lease later) and finds the job gone; stopped, it has
  // nothing to hand back.
  process.kill(child.pid, 'SIGCONT');
  await sleep(1_500);
  process.kill(child.pid, 'SIGTERM');
  expect(await child.exited).toEqual({ code: null, signal: 'SIGTERM' });
  await expectCancelledOnce(s, id, child, /was cancelled; its worker \S+ stopped renewing the lease/);
});

it('a worker stopped (SIGTERM) after the cancel was accepted and before it acted on it: the hand-back ends the job cancelled', async () => {
  const s = await setup('cancelstop');
  // A long lease (no renewal, so no word of the cancel, within the test) and a one-second grace.
  const child = await startChild(s.schema, 60_000, 1_000);
  const id = await runningInChild(s, child);
  process.kill(child.pid, 'SIGTERM');
  // The child no longer listens once its drain begins: the cancel reaches only the row.
  await child.line(/Waiting up to 1000 ms for 1 running job/, 10_000);
  await cancelAccepted(s.jobs, id);
  expect(await child.exited).toEqual({ code: null, signal: 'SIGTERM' });
  expect(child.stdout).toMatch(/Handing back 1 job\(s\) still running after the grace period/);
  await expectCancelledOnce(s, id, child, /was cancelled; its worker \S+ shut down before it ended the attempt/);
  // Another instance, polling every 100 ms, has nothing to run.
  await startRescuer(s.schema, 60_000);
  await sleep(1_000);
  expect(await handlerStarts(s.log, id)).toHaveLength(1);
});

it.each(['fail', 'snooze'] as const)(
  "an attempt that ends to run again (%s) as another instance's cancel is accepted: the job ends cancelled, not queued",
  async (how) => {
    kit ??= await startTestingApp({}, { imports: [KitJobsModule], providers: [CancelThenRetry] });
    const { id } = await kit.jobs.enqueue(CancelThenRetry, { how, table: `"${kit.tester.schema}".job` });
    await kit.tester.drain();
    const job = (await kit.jobs.get(id))!;
    expect(job.state).toBe('cancelled');
    const ended = how === 'fail' ? 'partner down' : 'partner busy';
    expect(job.lastError).toMatchObject({
      name: 'JobCancelledError',
      message: `Job ${id} was cancelled as its attempt 1 ended (${ended}); it is not run again`,
    });
    // The attempt's own end stays in the history.
    expect(job.executions.map((e) => [e.attempt, e.state])).toEqual([[1, how === 'fail' ? 'failed' : 'snoozed']]);
    expect(kit.app.get(CancelThenRetry).starts.get(id)).toBe(1);
  },
);
