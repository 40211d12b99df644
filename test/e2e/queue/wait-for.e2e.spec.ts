import type { INestApplication } from '@nestjs/common';
import pg from 'pg';
import {
  Job,
  JobQueue,
  JobsError,
  JobsNotFoundError,
  PermanentJobError,
  type JobContext,
  type JobHandler,
} from 'nestjs-durable-jobs';
import { databaseUrl, sql, uniqueSchema } from '../../support/database.js';
import { appFixture } from '../../support/app-fixture.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor as waitUntil } from '../../support/wait.js';

// JobQueue.waitFor across instances: instance `runner` runs the jobs, instance `caller` (worker off)
// enqueues and waits, as an HTTP endpoint that returns a job's result when it is ready would. Jobs
// that must not end on their own wait on a gate the test opens.

const gates = new Map<string, () => void>();
/** Resolves once the test opens the gate of `key` (openGate). */
function gate(key: string): Promise<void> {
  return new Promise((resolve) => gates.set(key, resolve));
}
async function openGate(key: string): Promise<void> {
  await waitUntil(`the gate ${key}`, () => gates.has(key), 30_000);
  gates.get(key)!();
  gates.delete(key);
}

@Job('wf-double', { maxAttempts: 1 })
class Double implements JobHandler<{ n: number; gate?: string }> {
  async run(p: { n: number; gate?: string }): Promise<number> {
    if (p.gate) await gate(p.gate);
    return p.n * 2;
  }
}

@Job('wf-refuse', { maxAttempts: 3 })
class Refuse implements JobHandler<{ why: string }> {
  run(p: { why: string }): never {
    throw new PermanentJobError(p.why);
  }
}

@Job('wf-stall', { maxAttempts: 1 })
class Stall implements JobHandler<{ gate: string }> {
  async run(p: { gate: string }, ctx: JobContext): Promise<void> {
    await Promise.race([gate(p.gate), new Promise((r) => ctx.signal.addEventListener('abort', r))]);
  }
}

const HANDLERS = [Double, Refuse, Stall];
const { apps, schemas } = appFixture({ closeApps: 'each' });

/** Two instances on one schema: `runner` runs the jobs, `caller` only enqueues and waits. */
async function instances(): Promise<{
  runner: JobQueue;
  caller: JobQueue;
  callerApp: INestApplication;
  schema: string;
}> {
  const schema = uniqueSchema('wait_for');
  schemas.push(schema);
  const runnerApp = await startJobsApp(schema, { scheduler: { enabled: false } }, { providers: HANDLERS });
  const callerApp = await startJobsApp(
    schema,
    { worker: { enabled: false }, scheduler: { enabled: false } },
    { providers: HANDLERS },
  );
  apps.push(runnerApp, callerApp);
  return { runner: runnerApp.get(JobQueue), caller: callerApp.get(JobQueue), callerApp, schema };
}

describe('JobQueue.waitFor', () => {
  it('resolves on the calling instance with the job another instance ran, its result and final state', async () => {
    const { caller } = await instances();
    const { id } = await caller.enqueue(Double, { n: 21, gate: 'wf-across' });
    const waited = caller.waitFor(id, { timeout: 30_000 });
    await openGate('wf-across');
    const info = await waited;
    expect(info).toMatchObject({ id, state: 'succeeded', result: 42 });
  });

  it('resolves for every end: failed for good, cancelled, and at once for a job that already ended', async () => {
    const { caller } = await instances();
    const failed = await caller.enqueue(Refuse, { why: 'no such customer' });
    const later = await caller.enqueue(Double, { n: 1 }, { delay: 3_600_000 });
    const waits = [caller.waitFor(failed.id), caller.waitFor(later.id)];
    await caller.cancel(later.id);
    const [f, c] = await Promise.all(waits);
    expect(f).toMatchObject({ state: 'failed', lastError: { message: 'no such customer' } });
    expect(c.state).toBe('cancelled');
    // Ended before the call: answered from the row.
    await expect(caller.waitFor(failed.id, { timeout: 1_000 })).resolves.toMatchObject({ state: 'failed' });
  });

  it('rejects at its timeout with a JobsError naming the job and its state, and leaves the job alone', async () => {
    const { caller } = await instances();
    const { id } = await caller.enqueue(Double, { n: 1 }, { delay: 3_600_000 });
    const error = await caller.waitFor(id, { timeout: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobsError);
    expect((error as Error).message).toContain(`waitFor(${id})`);
    expect((error as Error).message).toContain('state: queued');
    expect((await caller.get(id))!.state).toBe('queued');
  });

  it('announces only awaited jobs: the end of a job nobody waits for sends no notification', async () => {
    const { caller, schema } = await instances();
    const heard: string[] = [];
    const listener = new pg.Client({ connectionString: databaseUrl() });
    await listener.connect();
    try {
      listener.on('notification', (m) => {
        if (m.payload?.startsWith('e:')) heard.push(m.payload.slice(2));
      });
      await listener.query(`LISTEN "durable_jobs:${schema}"`);
      const plain = await caller.enqueue(Double, { n: 1 });
      const awaited = await caller.enqueue(Double, { n: 2, gate: 'wf-announced' });
      const waited = caller.waitFor(awaited.id, { timeout: 30_000 });
      // Flagged while it runs, so its end is the announced kind (one that ended first is read, not heard).
      await waitUntil('the job flagged as awaited', async () => {
        const [row] = await sql<{ awaited: boolean }>(`SELECT awaited FROM "${schema}".job WHERE id = $1`, [
          awaited.id,
        ]);
        return row!.awaited;
      });
      await openGate('wf-announced');
      await waited;
      await waitUntil('the plain job to end', async () => (await caller.get(plain.id))!.state === 'succeeded', 30_000);
      await waitUntil('the awaited end announced', () => heard.includes(awaited.id), 5_000);
      expect(heard).toEqual([awaited.id]);
    } finally {
      await listener.end();
    }
  });

  it('serves many waiters on one listening connection per instance', async () => {
    const { caller, schema } = await instances();
    const ids = (
      await caller.enqueueMany(Array.from({ length: 500 }, (_, n) => ({ job: Double, payload: { n } })))
    ).map((r) => r.id);
    const infos = await Promise.all(ids.map((id) => caller.waitFor(id, { timeout: 60_000 })));
    expect(infos.map((i) => i.result)).toEqual(ids.map((_, n) => n * 2));
    const [{ listeners }] = await sql<{ listeners: number }>(
      `SELECT count(*)::int AS listeners FROM pg_stat_activity WHERE query = $1`,
      [`LISTEN "durable_jobs:${schema}"`],
    );
    expect(listeners).toBe(2);
  });

  it('still resolves when the announcement is lost with the listening connection (the re-check finds the end)', async () => {
    const { caller, schema } = await instances();
    const { id } = await caller.enqueue(Double, { n: 5, gate: 'wf-lost' });
    const waited = caller.waitFor(id, { timeout: 60_000 });
    await waitUntil('the job to start', async () => (await caller.get(id))!.state === 'active', 30_000);
    // Every listening session of the schema goes, the caller's too: what is announced now is lost.
    await sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1`, [
      `LISTEN "durable_jobs:${schema}"`,
    ]);
    await openGate('wf-lost');
    await expect(waited).resolves.toMatchObject({ state: 'succeeded', result: 10 });
  });

  it('rejects with a JobsNotFoundError for an unknown job and for a job deleted while waited on', async () => {
    const { caller, schema } = await instances();
    const unknown = '01937c5e-1a2b-7c3d-8e4f-5a6b7c8d9e0f';
    await expect(caller.waitFor(unknown)).rejects.toThrow(JobsNotFoundError);
    const { id } = await caller.enqueue(Double, { n: 1 }, { delay: 3_600_000 });
    const waited = caller.waitFor(id, { timeout: 60_000 });
    await sql(`DELETE FROM "${schema}".job WHERE id = $1`, [id]);
    await expect(waited).rejects.toThrow(/deleted/);
  });

  it('refuses bad input with a JobsError before it waits', async () => {
    const { caller } = await instances();
    const { id } = await caller.enqueue(Double, { n: 1 }, { delay: 3_600_000 });
    await expect(caller.waitFor('not-an-id')).rejects.toThrow(/waitFor\(not-an-id\).*not a job id/);
    for (const timeout of [0, -5, Number.NaN, Number.POSITIVE_INFINITY, '500']) {
      await expect(caller.waitFor(id, { timeout } as never)).rejects.toThrow(
        /"timeout" must be a positive, finite number/,
      );
    }
    await expect(caller.waitFor(id, { timeOut: 5 } as never)).rejects.toThrow(JobsError);
  });

  it('ends the waits still open with a JobsError when its app closes', async () => {
    const { caller, callerApp, schema } = await instances();
    const { id } = await caller.enqueue(Stall, { gate: 'wf-never' });
    const waited = caller.waitFor(id).catch((e: unknown) => e);
    // Started, and its wait begun (the job flagged): the close meets a wait that listens.
    await waitUntil(
      'the job to start, flagged as awaited',
      async () => {
        const [row] = await sql<{ state: string; awaited: boolean }>(
          `SELECT state, awaited FROM "${schema}".job WHERE id = $1`,
          [id],
        );
        return row!.state === 'active' && row!.awaited;
      },
      30_000,
    );
    await callerApp.close();
    const error = await waited;
    expect(error).toBeInstanceOf(JobsError);
    expect((error as Error).message).toContain('shut down');
    await openGate('wf-never');
  });

  it('ends a wait that the app closes before it began with the same JobsError, not a database error', async () => {
    const { caller, callerApp } = await instances();
    const { id } = await caller.enqueue(Double, { n: 1 }, { delay: 3_600_000 });
    const waited = caller.waitFor(id).catch((e: unknown) => e);
    await callerApp.close();
    const error = await waited;
    expect(error).toBeInstanceOf(JobsError);
    expect((error as Error).message).toMatch(/waitFor\(.*\): the app shut down before the job ended/);
  });
});
