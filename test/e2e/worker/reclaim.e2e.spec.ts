import { Injectable, type INestApplication } from '@nestjs/common';
import { Job, JobQueue, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { JobWorker } from '../../../lib/worker/job-worker.service.js';
import { LeaseKeeper } from '../../../lib/worker/lease-keeper.service.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

// A worker that claims again a job it is still running: its lease ran out
// (here: written off while its renewals were held back, as an event-loop
// stall would), the rescue put it back, and the same worker claimed it as
// attempt 2 while attempt 1's handler was still going. Attempt 1 has lost its
// lease for sure; attempt 2 must be the one this worker keeps and records.
// The same for an onFailure hook whose run this worker's sweep claims again.

/** Per attempt (`<job id>#<attempt>`): when it started, what its signal said, and the gates the test opens. */
@Injectable()
class Attempts {
  readonly started: string[] = [];
  readonly aborted = new Map<string, string>();
  readonly returned = new Set<string>();
  private readonly hookRuns = new Map<string, number>();
  private readonly gates = new Map<string, () => void>();
  private readonly arrivals = new Map<string, () => void>();

  reached(key: string): Promise<void> {
    if (this.gates.has(key)) return Promise.resolve();
    return new Promise((resolve) => this.arrivals.set(key, resolve));
  }

  /** Waits for the test, whatever the signal says: a handler that does not listen to it. */
  wait(key: string, ctx: JobContext): Promise<void> {
    ctx.signal.addEventListener('abort', () => this.aborted.set(key, (ctx.signal.reason as Error).name), {
      once: true,
    });
    return new Promise((resolve) => {
      this.gates.set(key, resolve);
      this.arrivals.get(key)?.();
    });
  }

  /** The number of this run of the job's onFailure hook here, 1 for its first. */
  hookRun(id: string): number {
    const n = (this.hookRuns.get(id) ?? 0) + 1;
    this.hookRuns.set(id, n);
    return n;
  }

  open(key: string): void {
    this.gates.get(key)?.();
  }

  openAll(): void {
    for (const open of this.gates.values()) open();
  }
}

@Job('reclaimed')
class Reclaimed implements JobHandler<Record<string, never>, { attempt: number }> {
  constructor(private readonly attempts: Attempts) {}
  async run(_: Record<string, never>, ctx: JobContext): Promise<{ attempt: number }> {
    const key = `${ctx.jobId}#${ctx.attempt}`;
    this.attempts.started.push(key);
    await this.attempts.wait(key, ctx);
    this.attempts.returned.add(key);
    return { attempt: ctx.attempt };
  }
}

/** Fails for good at once; its onFailure hook waits for the test, run by run. */
@Job('reclaimed-hook', { maxAttempts: 1 })
class ReclaimedHook implements JobHandler<Record<string, never>> {
  constructor(private readonly attempts: Attempts) {}
  run(): void {
    throw new Error('fails for good');
  }
  async onFailure(_: Record<string, never>, _error: Error, ctx: JobContext): Promise<void> {
    const key = `${ctx.jobId}@hook${this.attempts.hookRun(ctx.jobId)}`;
    this.attempts.started.push(key);
    await this.attempts.wait(key, ctx);
    this.attempts.returned.add(key);
  }
}

const LEASE = 1_500;
const schema = uniqueSchema('reclaim');
let app: INestApplication;
let attempts: Attempts;

beforeAll(async () => {
  app = await startJobsApp(
    schema,
    // Two slots: attempt 1 still takes one while attempt 2 is claimed. Polls often, so the claim comes soon.
    { worker: { concurrency: 2, lease: LEASE, pollInterval: 100 } },
    { providers: [Attempts, Reclaimed, ReclaimedHook] },
  );
  attempts = app.get(Attempts);
});

// A test that failed leaves its runs waiting: they must not hold the slots the next one needs.
afterEach(() => attempts?.openAll());

afterAll(async () => {
  attempts?.openAll();
  await app?.close();
  await dropSchemas(schema);
});

interface Row {
  state: string;
  attempt: number;
  worker_id: string | null;
  lease_ms: string | null;
}

/**
 * Holds back this worker's lease renewals (jobs and hooks) until the returned
 * function is called: they wait for the lock they take exclusively, as in a stall.
 */
async function holdRenewals(): Promise<() => void> {
  const { rowLock } = app.get(LeaseKeeper);
  let letGo!: () => void;
  await new Promise<void>((held) => {
    void rowLock.runShared(() => {
      held();
      return new Promise<void>((go) => (letGo = go));
    });
  });
  return letGo;
}

const rowOf = async (id: string) =>
  (
    await sql<Row>(
      `SELECT state, attempt, worker_id, (extract(epoch FROM lease_expires_at) * 1000)::bigint AS lease_ms
         FROM "${schema}".job WHERE id = $1`,
      [id],
    )
  )[0]!;

it('a job claimed again by the worker still running it: the old attempt is stopped and unrecorded, the new one is renewed, not rescued, and succeeds', async () => {
  const queue = app.get(JobQueue);
  const workerId = app.get(JobWorker).id;
  const { id } = await queue.enqueue(Reclaimed, {});
  await attempts.reached(`${id}#1`);

  const letRenewalsGo = await holdRenewals();
  try {
    await sql(`UPDATE "${schema}".job SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
    // The rescue puts it back (attempt 1 interrupted) and the same worker claims it: attempt 2, attempt 1 still running.
    await attempts.reached(`${id}#2`);
  } finally {
    letRenewalsGo();
  }
  expect(await rowOf(id)).toMatchObject({ state: 'active', attempt: 2, worker_id: workerId });
  // A renewal sent before that claim answers late that attempt 1's lease is lost: it stops nothing of attempt 2.
  app.get(JobWorker).leasesLost([{ id, attempt: 1 }]);

  // Attempt 1's handler returns a result: it is not this worker's to record any more.
  attempts.open(`${id}#1`);
  await waitFor('attempt 1 to return', () => attempts.returned.has(`${id}#1`));
  const { lease_ms: leaseThen } = await rowOf(id);

  // Attempt 2's lease is renewed past two more lease periods, and the job is never rescued again meanwhile.
  await waitFor('attempt 2 to be renewed for two lease periods', async () => {
    const row = await rowOf(id);
    if (row.state !== 'active' || row.attempt !== 2 || row.worker_id !== workerId) {
      throw new Error(`attempt 2 lost its lease: ${JSON.stringify(row)}`);
    }
    return Number(row.lease_ms) >= Number(leaseThen) + 2 * LEASE;
  });

  attempts.open(`${id}#2`);
  await waitFor('the job to succeed', async () => (await queue.get(id))?.state === 'succeeded');
  const job = (await queue.get(id))!;
  expect(job).toMatchObject({ state: 'succeeded', attempt: 2, result: { attempt: 2 } });
  expect(job.executions.map((e) => [e.attempt, e.state])).toEqual([
    [1, 'interrupted'],
    [2, 'succeeded'],
  ]);
  expect(attempts.started.filter((k) => k.startsWith(id))).toEqual([`${id}#1`, `${id}#2`]);
  // The claim of attempt 2 stopped attempt 1 as a lost lease does; attempt 2 was never stopped.
  expect(attempts.aborted.get(`${id}#1`)).toBe('LeaseLostError');
  expect(attempts.aborted.has(`${id}#2`)).toBe(false);
});

interface HookRow {
  failure_hook: string | null;
  hook_attempt: number;
  hook_worker_id: string | null;
  lease_ms: string | null;
}

const hookOf = async (id: string) =>
  (
    await sql<HookRow>(
      `SELECT failure_hook, hook_attempt, hook_worker_id, (extract(epoch FROM hook_lease_expires_at) * 1000)::bigint AS lease_ms
         FROM "${schema}".job WHERE id = $1`,
      [id],
    )
  )[0]!;

it('an onFailure hook claimed again by the worker still running it: the old run is stopped and settles nothing, the new one is renewed and settles', async () => {
  const queue = app.get(JobQueue);
  const workerId = app.get(JobWorker).id;
  const { id } = await queue.enqueue(ReclaimedHook, {});
  await attempts.reached(`${id}@hook1`);

  const letRenewalsGo = await holdRenewals();
  try {
    await sql(`UPDATE "${schema}".job SET hook_lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
    // The rescuer's sweep takes the abandoned hook: this worker runs it again while run 1 still goes.
    await attempts.reached(`${id}@hook2`);
  } finally {
    letRenewalsGo();
  }
  expect(await hookOf(id)).toMatchObject({ failure_hook: 'running', hook_attempt: 2, hook_worker_id: workerId });

  attempts.open(`${id}@hook1`);
  await waitFor('hook run 1 to return', () => attempts.returned.has(`${id}@hook1`));
  const { lease_ms: leaseThen } = await hookOf(id);
  await waitFor('hook run 2 to be renewed for two lease periods', async () => {
    const row = await hookOf(id);
    if (row.failure_hook !== 'running' || row.hook_attempt !== 2 || row.hook_worker_id !== workerId) {
      throw new Error(`hook run 2 lost its hold: ${JSON.stringify(row)}`);
    }
    return Number(row.lease_ms) >= Number(leaseThen) + 2 * LEASE;
  });

  attempts.open(`${id}@hook2`);
  await waitFor('the hook to be done', async () => (await hookOf(id)).failure_hook === 'done');
  expect(await hookOf(id)).toMatchObject({ failure_hook: 'done', hook_attempt: 2 });
  expect(attempts.started.filter((k) => k.startsWith(id))).toEqual([`${id}@hook1`, `${id}@hook2`]);
  expect(attempts.aborted.get(`${id}@hook1`)).toBe('LeaseLostError');
  expect(attempts.aborted.has(`${id}@hook2`)).toBe(false);
});
