import type { INestApplication } from '@nestjs/common';
import { spawn, type ChildProcess } from 'node:child_process';
import { JobQueue, JobsAdmin } from 'nestjs-durable-jobs';
import { readyWorkerId } from '../../support/child-ready.js';
import { runCli } from '../../support/cli-process.js';
import { DashboardGraphs } from '../../../lib/dashboard/dashboard-graphs.service.js';
import { SIGNAL_STORAGE, type SignalStorage } from '../../../lib/storage/jobs/signals/signal-storage.interface.js';
import { appFixture } from '../../support/app-fixture.js';
import { workerStorage } from '../../support/job-storage.js';
import { sql, uniqueSchema } from '../../support/database.js';
import { BadInvoke, InvokedChild, InvokingParent, openGate, RUNS } from '../../support/invoke.jobs.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor as waitUntil } from '../../support/wait.js';

// ctx.invoke() on two instances of one schema: `parents` runs only the parents' queue and
// `children` only the children's, so a parent and its child always run on different instances.
// A third, `caller`, has no worker: it enqueues and steers, as an API would.

const HANDLERS = [InvokingParent, InvokedChild, BadInvoke];
const { apps, schemas } = appFixture({ closeApps: 'each' });

/** A schema of the file's, dropped after it. */
function newSchema(prefix: string): string {
  const schema = uniqueSchema(prefix);
  schemas.push(schema);
  return schema;
}

/** Starts apps of `schema` with the given worker options (`enabled: false`: an app that only calls), closed after each test. */
function starter(schema: string): (worker: Record<string, unknown>) => Promise<INestApplication> {
  return async (worker) => {
    const app = await startJobsApp(
      schema,
      { worker: { pollInterval: 100, ...worker }, scheduler: { enabled: false } },
      { providers: HANDLERS },
    );
    apps.push(app);
    return app;
  };
}

async function instances(): Promise<{ caller: JobQueue; admin: JobsAdmin; schema: string }> {
  const schema = newSchema('invoke');
  const start = starter(schema);
  const callerApp = await start({ enabled: false });
  await start({ queues: ['inv-parents'] });
  await start({ queues: ['inv-children'] });
  return { caller: callerApp.get(JobQueue), admin: callerApp.get(JobsAdmin), schema };
}

async function childrenOf(schema: string, parent: string): Promise<Array<{ id: string; state: string }>> {
  return sql(`SELECT id, state FROM "${schema}".job WHERE invoked_by = $1 ORDER BY id`, [parent]);
}

/** The parent parked in its wait for the child: queued, flagged for it. */
async function parkedOn(schema: string, parent: string, child: string): Promise<boolean> {
  const [row] = await sql<{ state: string; awaits_signal: string | null }>(
    `SELECT state, awaits_signal FROM "${schema}".job WHERE id = $1`,
    [parent],
  );
  return row!.state === 'queued' && row!.awaits_signal === `child:${child}`;
}

describe('ctx.invoke()', () => {
  it('enqueues the child once, waits for it out of any slot, and returns its result', async () => {
    const { caller, admin, schema } = await instances();
    const { id } = await caller.enqueue(InvokingParent, { child: { n: 4, gate: 'inv-ok' } });
    const [child] = await waitUntil('the child to be enqueued', async () => {
      const rows = await childrenOf(schema, id);
      return rows.length ? rows : null;
    });
    await waitUntil('the parent to park', () => parkedOn(schema, id, child!.id));
    openGate('inv-ok');
    const parent = await caller.waitFor(id, { timeout: 30_000 });
    expect(parent).toMatchObject({ state: 'succeeded', result: { before: 'set up', doubled: 80 } });
    expect(parent.executions.map((e) => e.state)).toEqual(['snoozed', 'succeeded']);
    expect(await childrenOf(schema, id)).toEqual([{ id: child!.id, state: 'succeeded' }]);
    expect(RUNS.get(child!.id)).toBe(1);
    // The parent and the child know each other: the child's invokedBy, the parent's recorded step.
    const childInfo = await caller.get(child!.id);
    expect(childInfo).toMatchObject({ invokedBy: id, result: 40 });
    // Operators see both: the admin's detail, the CLI's show, the dashboard's flow graph.
    expect((await admin.detail(id))!.invoked).toEqual([{ id: child!.id, name: 'inv-child', state: 'succeeded' }]);
    expect((await admin.detail(child!.id))!.invokedBy).toBe(id);
    const shown = await runCli(['show', id, '--schema', schema]);
    expect(shown.stdout).toContain('invoked (ctx.invoke)');
    expect(shown.stdout).toContain(child!.id);
    expect((await runCli(['show', child!.id, '--schema', schema])).stdout).toMatch(new RegExp(`invoked by\\s+${id}`));
    const graph = await new DashboardGraphs(admin).jobGraph(child!.id);
    expect(graph.edges).toEqual([expect.objectContaining({ from: id, to: child!.id, on: 'invoke' })]);
    const withResults = await caller.get(id, { stepResults: true });
    expect(withResults!.steps).toEqual([
      expect.objectContaining({ name: 'before', kind: 'step' }),
      expect.objectContaining({ name: 'invoke:inv-child#1', kind: 'step', result: child!.id }),
    ]);
  });

  it('surfaces a failed child as a ChildJobFailedError the parent may catch, and fails a parent that does not', async () => {
    const { caller, schema } = await instances();
    const caught = await caller.enqueue(InvokingParent, { child: { n: 1, fail: true }, catchFailure: true });
    const [c] = await waitUntil('the child', async () => {
      const rows = await childrenOf(schema, caught.id);
      return rows.length ? rows : null;
    });
    await expect(caller.waitFor(caught.id, { timeout: 30_000 })).resolves.toMatchObject({
      state: 'succeeded',
      result: { childId: c!.id, state: 'failed', message: 'child 1 refused' },
    });
    const uncaught = await caller.enqueue(InvokingParent, { child: { n: 2, fail: true } });
    const failed = await caller.waitFor(uncaught.id, { timeout: 30_000 });
    // Nothing a retry could change: the child stays failed, so the parent fails at once.
    expect(failed.state).toBe('failed');
    expect(failed.lastError).toMatchObject({ name: 'ChildJobFailedError' });
    expect(failed.lastError!.message).toContain('failed');
    expect(await childrenOf(schema, uncaught.id)).toHaveLength(1);
  });

  it('ends the wait of a parent whose child is cancelled with a ChildJobFailedError naming the cancel', async () => {
    const { caller, schema } = await instances();
    const { id } = await caller.enqueue(InvokingParent, { child: { n: 3, gate: 'inv-never' }, catchFailure: true });
    const [child] = await waitUntil('the child to run', async () => {
      const rows = await childrenOf(schema, id);
      return rows[0]?.state === 'active' ? rows : null;
    });
    await caller.cancel(child!.id);
    await expect(caller.waitFor(id, { timeout: 30_000 })).resolves.toMatchObject({
      state: 'succeeded',
      result: { childId: child!.id, state: 'cancelled' },
    });
  });

  it('cancels the child a parent waits on when the parent is cancelled', async () => {
    const { caller, schema } = await instances();
    const { id } = await caller.enqueue(InvokingParent, { child: { n: 5, gate: 'inv-forever' } });
    const [child] = await waitUntil('the child to run', async () => {
      const rows = await childrenOf(schema, id);
      return rows[0]?.state === 'active' ? rows : null;
    });
    await waitUntil('the parent to park', () => parkedOn(schema, id, child!.id));
    await caller.cancel(id);
    await expect(caller.waitFor(id, { timeout: 30_000 })).resolves.toMatchObject({ state: 'cancelled' });
    await expect(caller.waitFor(child!.id, { timeout: 30_000 })).resolves.toMatchObject({ state: 'cancelled' });
  });

  it("survives a SIGKILL of the parent's worker while the child runs: one child, and the parent resumes with its result", async () => {
    const schema = newSchema('invoke_kill');
    const start = starter(schema);
    const callerApp = await start({ enabled: false });
    await start({ queues: ['inv-children'] });
    const caller = callerApp.get(JobQueue);
    const parents = await Promise.all(
      [1, 2, 3].map((n) => caller.enqueue(InvokingParent, { child: { n, gate: 'inv-kill' } })),
    );
    const victim = spawnParentWorker(schema);
    try {
      await readyWorkerId(victim, 'the parents worker');
      await waitUntil('each parent to enqueue its child, and the children to run', async () => {
        for (const p of parents) if ((await childrenOf(schema, p.id))[0]?.state !== 'active') return false;
        return true;
      });
      victim.kill('SIGKILL');
      await new Promise((resolve) => victim.once('exit', resolve));
    } finally {
      if (victim.exitCode === null && victim.signalCode === null) victim.kill('SIGKILL');
    }
    await start({ queues: ['inv-parents'], lease: 1_000 });
    openGate('inv-kill');
    for (const [i, p] of parents.entries()) {
      await expect(caller.waitFor(p.id, { timeout: 60_000 })).resolves.toMatchObject({
        state: 'succeeded',
        result: { doubled: (i + 1) * 20 },
      });
      const children = await childrenOf(schema, p.id);
      expect(children).toHaveLength(1);
      expect(RUNS.get(children[0]!.id)).toBe(1);
    }
  }, 120_000);

  it('wakes a parent whose child ends after the invoke step committed and before its park is written', async () => {
    const schema = newSchema('invoke_gap');
    const app = await starter(schema)({ enabled: false });
    const jobs = app.get(JobQueue);
    const parent = await jobs.enqueue(InvokingParent, { child: { n: 1 } });
    const child = await jobs.enqueue(InvokedChild, { n: 1 });
    // The worker's statements by hand, so the child's end lands in the gap: the parent claimed, the
    // child linked with the parent's flag (the invoke step), the child's end, then the park's write.
    const { claims, outcomes } = workerStorage(app);
    const signals = app.get<SignalStorage>(SIGNAL_STORAGE);
    const now = new Date();
    const [job] = await claims.claim({
      workerId: 'w-gap',
      queue: 'inv-parents',
      names: ['inv-parent'],
      limit: 1,
      now,
      leaseMs: 60_000,
    });
    expect(await signals.linkChild('w-gap', job!, child.id)).toBe(true);
    await sql(`UPDATE "${schema}".job SET state = 'succeeded', completed_at = now() WHERE id = $1`, [child.id]);
    const parkedAt = new Date();
    const deadline = new Date(parkedAt.getTime() + 3_600_000);
    await outcomes.finish(
      'w-gap',
      [{ job: job!, outcome: { kind: 'snoozed', until: deadline, reason: 'waiting', signal: `child:${child.id}` } }],
      parkedAt,
      60_000,
    );
    const [row] = await sql<{ state: string; run_at: Date }>(
      `SELECT state, run_at FROM "${schema}".job WHERE id = $1`,
      [parent.id],
    );
    expect(row!.state).toBe('queued');
    expect(row!.run_at.getTime()).toBe(parkedAt.getTime());
  });

  it('a later attempt that finds its child not ended flags itself before looking again, and stops waiting once it has ended', async () => {
    const schema = newSchema('invoke_replay');
    const app = await starter(schema)({ enabled: false });
    const jobs = app.get(JobQueue);
    const parent = await jobs.enqueue(InvokingParent, { child: { n: 2 } });
    const child = await jobs.enqueue(InvokedChild, { n: 2 });
    const { claims } = workerStorage(app);
    const signals = app.get<SignalStorage>(SIGNAL_STORAGE);
    const [job] = await claims.claim({
      workerId: 'w-replay',
      queue: 'inv-parents',
      names: ['inv-parent'],
      limit: 1,
      now: new Date(),
      leaseMs: 60_000,
    });
    const flag = async () =>
      (
        await sql<{ awaits_signal: string | null }>(`SELECT awaits_signal FROM "${schema}".job WHERE id = $1`, [
          parent.id,
        ])
      )[0]!.awaits_signal;
    expect((await signals.childEnd('w-replay', job!, child.id))!.state).toBe('queued');
    expect(await flag()).toBeNull();
    expect(await signals.awaitChild('w-replay', job!, child.id)).toBe(true);
    expect(await flag()).toBe(`child:${child.id}`);
    // A look while the child runs leaves the flag for its end to clear.
    expect((await signals.childEnd('w-replay', job!, child.id))!.state).toBe('queued');
    expect(await flag()).toBe(`child:${child.id}`);
    // An end the trigger could not clear the flag for (it is not linked here): the look clears it.
    await sql(`UPDATE "${schema}".job SET state = 'succeeded', completed_at = now(), result = '7' WHERE id = $1`, [
      child.id,
    ]);
    const end = await signals.childEnd('w-replay', job!, child.id);
    expect(end).toMatchObject({ state: 'succeeded', result: 7 });
    expect(await flag()).toBeNull();
  });

  it('refuses an option an invoked child cannot take, and writes no child', async () => {
    const { caller, schema } = await instances();
    for (const option of ['after', 'manager', 'unique']) {
      const { id } = await caller.enqueue(BadInvoke, { option });
      const job = await caller.waitFor(id, { timeout: 30_000 });
      expect(job.state).toBe('failed');
      expect(job.lastError!.message).toContain(`"${option}" cannot apply to an invoked child`);
      expect(await childrenOf(schema, id)).toEqual([]);
    }
  });
});

function spawnParentWorker(schema: string): ChildProcess {
  return spawn(process.execPath, ['--import', './test/support/register-swc.mjs', 'test/support/invoke-child.ts'], {
    env: { ...process.env, CHILD_SCHEMA: schema, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}
