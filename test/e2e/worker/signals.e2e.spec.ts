import type { INestApplication } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import {
  Job,
  JOBS_DATA_SOURCE,
  JobQueue,
  JobsError,
  JobsNotFoundError,
  type JobContext,
  type JobHandler,
} from 'nestjs-durable-jobs';
import { SIGNAL_STORAGE, type SignalStorage } from '../../../lib/storage/jobs/signals/signal-storage.interface.js';
import { appFixture } from '../../support/app-fixture.js';
import { workerStorage } from '../../support/job-storage.js';
import { sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor as waitUntil } from '../../support/wait.js';

// Signals into jobs and values out of them, on two instances of one schema: `runner` runs the jobs,
// `caller` (worker off) enqueues, signals and reads, as a webhook endpoint or an API would.

/** What each handler did, by job id: which steps ran (a replayed step does not run). */
const ran = new Map<string, string[]>();
const note = (id: string, what: string) => ran.set(id, [...(ran.get(id) ?? []), what]);
/** Jobs of failAfter that already failed once after their wait. */
const failedOnce = new Set<string>();
const gates = new Map<string, () => void>();
const gate = (key: string) => new Promise<void>((resolve) => gates.set(key, resolve));
async function openGate(key: string): Promise<void> {
  await waitUntil(`the gate ${key}`, () => gates.has(key), 30_000);
  gates.get(key)!();
  gates.delete(key);
}

type Approval = { timeout?: number; gate?: string; failAfter?: boolean };

@Job('sig-approval', { maxAttempts: 3, backoff: { type: 'fixed', delay: 10 } })
class Approve implements JobHandler<Approval> {
  async run(p: Approval, ctx: JobContext): Promise<{ decision: unknown }> {
    await ctx.step('before', () => note(ctx.jobId, 'before'));
    if (p.gate) await gate(p.gate);
    const decision = await ctx.waitForSignal<{ ok: boolean }>('approval', { timeout: p.timeout ?? 3_600_000 });
    note(ctx.jobId, `decided:${JSON.stringify(decision)}`);
    if (p.failAfter && !failedOnce.has(ctx.jobId)) {
      failedOnce.add(ctx.jobId);
      throw new Error('the ledger was busy');
    }
    return { decision };
  }
}

@Job('sig-checkout', { maxAttempts: 1 })
class Checkout implements JobHandler<{ order: number }> {
  async run(p: { order: number }, ctx: JobContext): Promise<string> {
    await ctx.setEvent('status', 'awaiting-payment');
    await ctx.setEvent('payment-url', `https://pay.example/${p.order}`);
    const paid = await ctx.waitForSignal<{ amount: number }>('paid', { timeout: 3_600_000 });
    await ctx.setEvent('status', 'paid');
    return `paid ${paid?.amount}`;
  }
}

@Job('sig-twice', { maxAttempts: 1 })
class WaitTwice implements JobHandler<Record<string, never>> {
  async run(_p: unknown, ctx: JobContext): Promise<void> {
    await ctx.waitForSignal('go', { timeout: 10 });
    await ctx.waitForSignal('go', { timeout: 10 });
  }
}

@Job('sig-quick', { maxAttempts: 1 })
class Quick implements JobHandler<{ n: number }> {
  run(p: { n: number }): number {
    return p.n;
  }
}

const HANDLERS = [Approve, Checkout, WaitTwice, Quick];
const { apps, schemas } = appFixture({ closeApps: 'each' });

async function instances(
  runWorker = true,
): Promise<{ caller: JobQueue; runner: () => Promise<JobQueue>; schema: string; callerApp: INestApplication }> {
  const schema = uniqueSchema('signals');
  schemas.push(schema);
  const callerApp = await startJobsApp(
    schema,
    { worker: { enabled: false }, scheduler: { enabled: false } },
    {
      providers: HANDLERS,
    },
  );
  apps.push(callerApp);
  const runner = async () => {
    const app = await startJobsApp(
      schema,
      { worker: { concurrency: 10, pollInterval: 200 }, scheduler: { enabled: false } },
      { providers: HANDLERS },
    );
    apps.push(app);
    return app.get(JobQueue);
  };
  if (runWorker) await runner();
  return { caller: callerApp.get(JobQueue), runner, schema, callerApp };
}

/** The job parked in its wait: queued, flagged for the signal, its wait recorded. */
async function parked(schema: string, id: string, signal = 'approval'): Promise<boolean> {
  const [row] = await sql<{ state: string; awaits_signal: string | null; steps: number }>(
    `SELECT state, awaits_signal, (SELECT count(*)::int FROM "${schema}".job_step WHERE job_id = j.id AND name = $2) AS steps
       FROM "${schema}".job j WHERE id = $1`,
    [id, `signal:${signal}`],
  );
  return row!.state === 'queued' && row!.awaits_signal === signal && row!.steps === 1;
}

describe('signals into a job', () => {
  it('a job waits out of any slot for a signal sent through another instance, then resumes with its payload', async () => {
    const { caller, schema } = await instances();
    const { id } = await caller.enqueue(Approve, {});
    await waitUntil('the job to park in its wait', () => parked(schema, id));
    await caller.signal(id, 'approval', { ok: true });
    const job = await caller.waitFor(id, { timeout: 30_000 });
    expect(job).toMatchObject({ state: 'succeeded', result: { decision: { ok: true } } });
    // The step before the wait ran once: the resumed attempt answered it from storage.
    expect(ran.get(id)).toEqual(['before', 'decided:{"ok":true}']);
    // The park spent no attempt: its history row is a snooze, as for ctx.sleep().
    expect(job.executions.map((e) => e.state)).toEqual(['snoozed', 'succeeded']);
    expect(job.steps.map((s) => [s.name, s.kind])).toEqual([
      ['before', 'step'],
      ['signal:approval', 'signal'],
    ]);
  });

  it('keeps a signal sent before the job started, and one sent while it ran, for its wait', async () => {
    const { caller, runner } = await instances(false);
    const early = await caller.enqueue(Approve, {});
    await caller.signal(early.id, 'approval', { ok: 'early' });
    await runner();
    await expect(caller.waitFor(early.id, { timeout: 30_000 })).resolves.toMatchObject({
      result: { decision: { ok: 'early' } },
      executions: [{ state: 'succeeded' }],
    });
    const during = await caller.enqueue(Approve, { gate: 'sig-during' });
    await waitUntil('the job to run', async () => (await caller.get(during.id))!.state === 'active');
    await caller.signal(during.id, 'approval', { ok: 'during' });
    await openGate('sig-during');
    await expect(caller.waitFor(during.id, { timeout: 30_000 })).resolves.toMatchObject({
      result: { decision: { ok: 'during' } },
      executions: [{ state: 'succeeded' }],
    });
  });

  it('returns null at the timeout, and a retry after the wait gets the same value and consumes nothing more', async () => {
    const { caller, schema } = await instances();
    const late = await caller.enqueue(Approve, { timeout: 300 });
    await expect(caller.waitFor(late.id, { timeout: 30_000 })).resolves.toMatchObject({
      state: 'succeeded',
      result: { decision: null },
    });
    const replayed = await caller.enqueue(Approve, { failAfter: true });
    await waitUntil('the job to park', () => parked(schema, replayed.id));
    await caller.signal(replayed.id, 'approval', { ok: 1 });
    await caller.signal(replayed.id, 'approval', { ok: 2 });
    await expect(caller.waitFor(replayed.id, { timeout: 30_000 })).resolves.toMatchObject({
      state: 'succeeded',
      result: { decision: { ok: 1 } },
    });
    expect(ran.get(replayed.id)).toEqual(['before', 'decided:{"ok":1}', 'decided:{"ok":1}']);
    const signals = await sql<{ payload: unknown; consumed: boolean }>(
      `SELECT payload, consumed_at IS NOT NULL AS consumed FROM "${schema}".job_signal WHERE job_id = $1 ORDER BY id`,
      [replayed.id],
    );
    expect(signals).toEqual([
      { payload: { ok: 1 }, consumed: true },
      { payload: { ok: 2 }, consumed: false },
    ]);
  });

  it('parks 1,000 waiting jobs without a slot while other jobs run beside them, and wakes each on its signal', async () => {
    const { caller, schema } = await instances();
    const waiting = await caller.enqueueMany(Array.from({ length: 1_000 }, () => ({ job: Approve, payload: {} })));
    await waitUntil(
      '1,000 jobs parked',
      async () => {
        const [{ n }] = await sql<{ n: number }>(
          `SELECT count(*)::int AS n FROM "${schema}".job WHERE state = 'queued' AND awaits_signal = 'approval'`,
        );
        return n === 1_000;
      },
      60_000,
    );
    const others = await caller.enqueueMany(Array.from({ length: 200 }, (_, n) => ({ job: Quick, payload: { n } })));
    const done = await Promise.all(others.map((o) => caller.waitFor(o.id, { timeout: 60_000 })));
    expect(done.every((d) => d.state === 'succeeded')).toBe(true);
    for (const { id } of waiting) await caller.signal(id, 'approval', { ok: id });
    const results = await Promise.all(waiting.map(({ id }) => caller.waitFor(id, { timeout: 120_000 })));
    expect(
      results.filter(
        (r, i) => r.state === 'succeeded' && (r.result as { decision: { ok: string } }).decision.ok === waiting[i]!.id,
      ),
    ).toHaveLength(1_000);
  }, 240_000);

  it('wakes a job whose signal comes after its handler looked and before its park is written', async () => {
    const { callerApp, caller, schema } = await instances(false);
    const { id } = await caller.enqueue(Approve, {});
    // The worker's statements, driven by hand so the signal lands in the gap: a claim, the wait's
    // flag and look (nothing yet), the signal, then the park's outcome write.
    const { claims, outcomes } = workerStorage(callerApp);
    const signals = callerApp.get<SignalStorage>(SIGNAL_STORAGE);
    const now = new Date();
    const [job] = await claims.claim({
      workerId: 'w-gap',
      queue: 'default',
      names: ['sig-approval'],
      limit: 1,
      now,
      leaseMs: 60_000,
    });
    const deadline = new Date(now.getTime() + 3_600_000);
    expect(await signals.beginWait('w-gap', job!, 'approval', 'signal:approval', now, deadline)).toBe(true);
    expect(await signals.consume('w-gap', job!, 'approval', 'signal:approval', now)).toEqual({ outcome: 'none' });
    await caller.signal(id, 'approval', { ok: 'in the gap' });
    const parkedAt = new Date();
    await outcomes.finish(
      'w-gap',
      [{ job: job!, outcome: { kind: 'snoozed', until: deadline, reason: 'waiting', signal: 'approval' } }],
      parkedAt,
      60_000,
    );
    const [row] = await sql<{ state: string; run_at: Date }>(
      `SELECT state, run_at FROM "${schema}".job WHERE id = $1`,
      [id],
    );
    expect(row!.state).toBe('queued');
    expect(row!.run_at.getTime()).toBe(parkedAt.getTime());
  });

  it('stores a signal in the caller’s transaction only when it commits', async () => {
    const { caller, schema, callerApp } = await instances(false);
    const { id } = await caller.enqueue(Approve, {});
    const dataSource = callerApp.get<DataSource>(JOBS_DATA_SOURCE);
    await dataSource
      .transaction(async (manager) => {
        await caller.signal(id, 'approval', { ok: 'rolled back' }, { manager });
        throw new Error('the order was refused');
      })
      .catch(() => undefined);
    await dataSource.transaction((manager) => caller.signal(id, 'approval', { ok: 'committed' }, { manager }));
    const rows = await sql<{ payload: unknown }>(`SELECT payload FROM "${schema}".job_signal WHERE job_id = $1`, [id]);
    expect(rows).toEqual([{ payload: { ok: 'committed' } }]);
  });

  it('refuses bad signals with a JobsError and stores nothing', async () => {
    const { caller, schema } = await instances();
    const unknown = '01937c5e-1a2b-7c3d-8e4f-5a6b7c8d9e0f';
    await expect(caller.signal(unknown, 'approval')).rejects.toThrow(JobsNotFoundError);
    const finished = await caller.enqueue(Quick, { n: 1 });
    await caller.waitFor(finished.id, { timeout: 30_000 });
    await expect(caller.signal(finished.id, 'approval')).rejects.toThrow(/already ended \(succeeded\)/);
    const { id } = await caller.enqueue(Approve, { timeout: 3_600_000 });
    await expect(caller.signal('nope', 'approval')).rejects.toThrow(/not a job id/);
    await expect(caller.signal(id, '')).rejects.toThrow(/"name" must be a non-empty string/);
    await expect(caller.signal(id, 'x'.repeat(181))).rejects.toThrow(/limit is 180/);
    await expect(caller.signal(id, 'approval', { at: new Date() })).rejects.toThrow(/not JSON-serialisable/);
    await expect(caller.signal(id, 'approval', 'x'.repeat(2_000_000))).rejects.toThrow(/over maxPayloadBytes/);
    await expect(caller.signal(id, 'approval', null, { mangaer: 1 } as never)).rejects.toThrow(JobsError);
    const [{ n }] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".job_signal`);
    expect(n).toBe(0);
  });

  it('fails a run that waits for one signal name twice, as for a duplicate step name', async () => {
    const { caller } = await instances();
    const { id } = await caller.enqueue(WaitTwice, {});
    const job = await caller.waitFor(id, { timeout: 30_000 });
    expect(job.state).toBe('failed');
    expect(job.lastError!.message).toMatch(/"signal:go" was already used in this run/);
  });
});

describe('values published by a job', () => {
  it('are read from another instance while the job still runs, the last write of a key winning', async () => {
    const { caller } = await instances();
    const { id } = await caller.enqueue(Checkout, { order: 42 });
    await expect(caller.getEvent(id, 'payment-url', { timeout: 30_000 })).resolves.toBe('https://pay.example/42');
    expect(await caller.getEvent(id, 'status')).toBe('awaiting-payment');
    await caller.signal(id, 'paid', { amount: 1999 });
    await expect(caller.waitFor(id, { timeout: 30_000 })).resolves.toMatchObject({ result: 'paid 1999' });
    expect(await caller.getEvent(id, 'status')).toBe('paid');
  });

  it('are null without a wait, at the timeout, and at once once the job ended without publishing', async () => {
    const { caller, runner } = await instances(false);
    const { id } = await caller.enqueue(Checkout, { order: 7 });
    expect(await caller.getEvent(id, 'payment-url')).toBeNull();
    await expect(caller.getEvent(id, 'payment-url', { timeout: 200 })).resolves.toBeNull();
    await runner();
    const quick = await caller.enqueue(Quick, { n: 1 });
    const pending = caller.getEvent(quick.id, 'never', { timeout: 60_000 });
    await caller.waitFor(quick.id, { timeout: 30_000 });
    const started = Date.now();
    await expect(pending).resolves.toBeNull();
    // Ended without publishing: the read did not wait out its minute.
    expect(Date.now() - started).toBeLessThan(30_000);
    await expect(caller.getEvent('01937c5e-1a2b-7c3d-8e4f-5a6b7c8d9e0f', 'status')).rejects.toThrow(JobsNotFoundError);
    await expect(caller.getEvent(id, 'status', { timeout: -1 })).rejects.toThrow(/"timeout" must be a positive/);
  });
});
