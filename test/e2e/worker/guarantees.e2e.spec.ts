import { Injectable, type INestApplication } from '@nestjs/common';
import type { OutcomeStorage } from '../../../lib/storage/jobs/outcomes/outcome-storage.interface.js';
import { type WorkerStorage, workerStorage } from '../../support/job-storage.js';
import { BatchBuilder, Job, JobQueue, RetentionService, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import type { AttemptOutcome, ClaimedJob } from '../../../lib/model/index.js';

import { JobWorker } from '../../../lib/worker/job-worker.service.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { DoomedProbe, ProbeRecorder } from '../../support/probe.jobs.js';
import { waitFor } from '../../support/wait.js';

// The promises of "What it guarantees" that a plausible slip in lib/ would
// break without any other test noticing: fencing of outcome writes, what a
// cancel and a lost lease do to a running handler, the retry of a failed
// outcome write, the default backoff's jitter, the hand-back of prefetched
// jobs at shutdown and retention's care for parents with waiting children.

/** Per app instance: what the runs of `g-held` saw, and the gates the test opens. */
@Injectable()
class Runs {
  /** Handler starts, per job. */
  readonly started = new Map<string, number>();
  /** Per job: what its handler saw when ctx.signal fired. */
  readonly aborted = new Map<string, { aborted: boolean; reason: string }>();
  private readonly gates = new Map<string, () => void>();
  private open = false;

  /** Resolves when the test lets the run go; rejects with the signal's reason when it aborts. */
  hold(ctx: JobContext): Promise<void> {
    if (this.open) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.aborted.set(ctx.jobId, { aborted: ctx.signal.aborted, reason: (ctx.signal.reason as Error).name });
        reject(ctx.signal.reason as Error);
      };
      if (ctx.signal.aborted) return onAbort();
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      this.gates.set(ctx.jobId, resolve);
    });
  }

  release(id: string): void {
    this.gates.get(id)?.();
    this.gates.delete(id);
  }

  /** Lets every held run go, and every later one straight through. */
  openAll(): void {
    this.open = true;
    for (const release of this.gates.values()) release();
    this.gates.clear();
  }
}

/** Counts its runs; with `hold`, returns only when the test releases it (or throws when its signal aborts). */
@Job('g-held')
class Held implements JobHandler<{ hold?: boolean }, { by: string }> {
  constructor(private readonly runs: Runs) {}
  async run(payload: { hold?: boolean }, ctx: JobContext): Promise<{ by: string }> {
    this.runs.started.set(ctx.jobId, (this.runs.started.get(ctx.jobId) ?? 0) + 1);
    if (payload.hold) await this.runs.hold(ctx);
    return { by: 'worker' };
  }
}

/** Fails its first attempt. No backoff option: the default backoff decides when it runs again. */
@Job('g-fails-first', { maxAttempts: 2 })
class FailsFirst implements JobHandler<Record<string, never>> {
  run(_: Record<string, never>, ctx: JobContext): void {
    if (ctx.attempt === 1) throw new Error('the first attempt fails');
  }
}

const DAY = 86_400_000;
const schema = uniqueSchema('guar');
const schemas = [schema];
// Time stands still unless a test moves it: a lease then ends only when a
// test writes it off or moves the clock, never because this shared machine
// stalled the event loop for a while.
const clock = new ManualClock(new Date('2026-06-01T08:00:00Z'));
let app: INestApplication;
let queue: JobQueue;
let storage: WorkerStorage;
let runs: Runs;
let workerId: string;

const stateOf = async (id: string) => (await queue.get(id))?.state;
const until = (id: string, state: string) =>
  waitFor(`job ${id} to be ${state}`, async () => (await stateOf(id)) === state);
const history = async (id: string) =>
  (await queue.get(id))!.executions.map((e) => [e.attempt, e.state, e.workerId] as const);

beforeAll(async () => {
  app = await startJobsApp(
    schema,
    {
      clock,
      // Renewals every third of the lease: a lost lease is noticed within a second.
      worker: { concurrency: 4, lease: 3_000, pollInterval: 100 },
      // Pruning only when a test asks: a timer's pass could read the clock before the test moved it.
      retention: { interval: 3_600_000 },
    },
    { providers: [Runs, Held, FailsFirst, ProbeRecorder, DoomedProbe] },
  );
  queue = app.get(JobQueue);
  storage = workerStorage(app);
  runs = app.get(Runs);
  workerId = app.get(JobWorker).id;
});

afterAll(async () => {
  runs?.openAll();
  await app?.close();
  await dropSchemas(...schemas);
});

describe('fencing: a worker that lost its job cannot write its outcome', () => {
  /**
   * A ghost worker claims the job (attempt 1) and goes silent. Then this
   * app's worker takes it over and runs it, held until the test releases it:
   * after the rescue of the ghost's expired lease (written off, not waited
   * for) as attempt 2, or after the ghost handed it back as attempt 1 again.
   * Returns the ghost's claim.
   */
  async function takeOver(queueName: string, how: 'rescued' | 'handed back'): Promise<ClaimedJob> {
    const { id } = await queue.enqueue(Held, { hold: true }, { queue: queueName, delay: 60_000 });
    // Not due for a minute on the frozen clock: only the ghost, claiming "a minute later", can take it.
    const [ghost] = await storage.claims.claim({
      workerId: 'ghost:1',
      queue: queueName,
      names: ['g-held'],
      limit: 1,
      now: new Date(clock.now().getTime() + 60_000),
      leaseMs: 1_000,
    });
    expect(ghost).toMatchObject({ id, attempt: 1 });
    if (how === 'rescued') {
      await sql(`UPDATE "${schema}".job SET lease_expires_at = $2 WHERE id = $1`, [
        id,
        new Date(clock.now().getTime() - 1),
      ]);
      await storage.maintenance.rescueExpired(clock.now(), 10);
      // A rescued job keeps its run_at, which the ghost's early claim left a minute ahead of the frozen clock.
      await sql(`UPDATE "${schema}".job SET run_at = $2 WHERE id = $1`, [id, clock.now()]);
    } else {
      await storage.outcomes.handBack('ghost:1', [ghost!], clock.now(), null);
    }
    await waitFor(`the live worker to run the ${how} job`, () => runs.started.get(id) === 1);
    expect(await queue.get(id)).toMatchObject({ state: 'active', attempt: how === 'rescued' ? 2 : 1, workerId });
    return ghost!;
  }

  /**
   * Writes the fence must refuse, each missing one part of it: the ghost's
   * for the rescued job (another worker and an older attempt), this worker's
   * own for an attempt of that job it no longer runs (only the attempt
   * differs), and the ghost's for the handed-back job, whose attempt 1 was
   * not spent and is running again here (only the worker differs). Returns
   * the ids any of them applied to.
   */
  async function lateWrites(rescued: ClaimedJob, handedBack: ClaimedJob, outcome: AttemptOutcome): Promise<string[]> {
    const applied: string[] = [];
    for (const [writer, job] of [
      ['ghost:1', rescued],
      [workerId, rescued],
      ['ghost:1', handedBack],
    ] as const) {
      applied.push(...(await storage.outcomes.finish(writer, [{ job, outcome }], clock.now(), 30_000)));
    }
    return applied;
  }

  it("late successes are not applied: state, result and attempt stay the live worker's", async () => {
    const rescued = await takeOver('fence-success', 'rescued');
    const handedBack = await takeOver('fence-success', 'handed back');
    const success: AttemptOutcome = { kind: 'succeeded', result: { by: 'ghost' } };
    // While the live worker still runs them...
    expect(await lateWrites(rescued, handedBack, success)).toEqual([]);
    expect(await queue.get(rescued.id)).toMatchObject({ state: 'active', attempt: 2, workerId, result: null });
    expect(await queue.get(handedBack.id)).toMatchObject({ state: 'active', attempt: 1, workerId, result: null });
    runs.release(rescued.id);
    runs.release(handedBack.id);
    await until(rescued.id, 'succeeded');
    await until(handedBack.id, 'succeeded');
    // ...and after it finished them.
    expect(await lateWrites(rescued, handedBack, success)).toEqual([]);
    const done = { state: 'succeeded', workerId, result: { by: 'worker' } };
    expect(await queue.get(rescued.id)).toMatchObject({ ...done, attempt: 2 });
    expect(await queue.get(handedBack.id)).toMatchObject({ ...done, attempt: 1 });
    expect(await history(rescued.id)).toEqual([
      [1, 'interrupted', 'ghost:1'],
      [2, 'succeeded', workerId],
    ]);
    expect(await history(handedBack.id)).toEqual([[1, 'succeeded', workerId]]);
  });

  it('late failures are not applied: no retry, no failure, no history row of their own', async () => {
    const rescued = await takeOver('fence-failure', 'rescued');
    const handedBack = await takeOver('fence-failure', 'handed back');
    const error = { name: 'Error', message: 'failed, late' };
    const retry: AttemptOutcome = { kind: 'retry', error, retryAt: new Date(clock.now().getTime() + 1_000) };
    const failure: AttemptOutcome = { kind: 'failed', error, hook: false };
    expect(await lateWrites(rescued, handedBack, retry)).toEqual([]);
    expect(await lateWrites(rescued, handedBack, failure)).toEqual([]);
    expect(await queue.get(rescued.id)).toMatchObject({ state: 'active', attempt: 2, workerId, lastError: null });
    expect(await queue.get(handedBack.id)).toMatchObject({ state: 'active', attempt: 1, workerId, lastError: null });
    expect(await history(rescued.id)).toEqual([
      [1, 'interrupted', 'ghost:1'],
      [2, 'active', workerId],
    ]);
    expect(await history(handedBack.id)).toEqual([[1, 'active', workerId]]);
    runs.release(rescued.id);
    runs.release(handedBack.id);
    await until(rescued.id, 'succeeded');
    await until(handedBack.id, 'succeeded');
    expect(await lateWrites(rescued, handedBack, retry)).toEqual([]);
    expect(await lateWrites(rescued, handedBack, failure)).toEqual([]);
    const done = { state: 'succeeded', workerId, lastError: null, result: { by: 'worker' } };
    expect(await queue.get(rescued.id)).toMatchObject({ ...done, attempt: 2 });
    expect(await queue.get(handedBack.id)).toMatchObject({ ...done, attempt: 1 });
    expect(await history(rescued.id)).toEqual([
      [1, 'interrupted', 'ghost:1'],
      [2, 'succeeded', workerId],
    ]);
    expect(await history(handedBack.id)).toEqual([[1, 'succeeded', workerId]]);
  });
});

describe('a running handler', () => {
  it('sees ctx.signal aborted with a JobCancelledError when its job is cancelled; the job ends cancelled', async () => {
    const { id } = await queue.enqueue(Held, { hold: true }, { queue: 'cancel' });
    await waitFor('the job to start', () => runs.started.get(id) === 1);
    await queue.cancel(id);
    expect(await waitFor('its signal to abort', () => runs.aborted.get(id))).toEqual({
      aborted: true,
      reason: 'JobCancelledError',
    });
    await until(id, 'cancelled');
    expect(await history(id)).toEqual([[1, 'cancelled', workerId]]);
  });

  it('stops when its lease is lost: the signal aborts with LeaseLostError and no outcome of this worker is written', async () => {
    const [taken, reclaimed] = await queue.enqueueMany([
      { job: Held, payload: { hold: true }, options: { queue: 'lease' } },
      { job: Held, payload: { hold: true }, options: { queue: 'lease' } },
    ]);
    const ids = [taken!.id, reclaimed!.id];
    await waitFor('both jobs to start', () => ids.every((id) => runs.started.get(id) === 1));
    const activeOnWorker = async () =>
      (await sql<{ active: number }>(`SELECT active FROM "${schema}".worker WHERE id = $1`, [workerId]))[0]?.active;
    await waitFor('a heartbeat to count both running', async () => (await activeOnWorker()) === 2);
    // One job went to another worker; the other was claimed again (a later attempt) under the same
    // worker id. The renewal, fenced by worker and attempt, must report both lost.
    await sql(`UPDATE "${schema}".job SET worker_id = 'thief:1' WHERE id = $1`, [taken!.id]);
    await sql(`UPDATE "${schema}".job SET attempt = attempt + 1 WHERE id = $1`, [reclaimed!.id]);
    for (const id of ids) {
      expect(await waitFor(`the signal of ${id} to abort`, () => runs.aborted.get(id))).toEqual({
        aborted: true,
        reason: 'LeaseLostError',
      });
    }
    await waitFor('the worker to let go of both', async () => (await activeOnWorker()) === 0);
    expect(await queue.get(taken!.id)).toMatchObject({
      state: 'active',
      attempt: 1,
      workerId: 'thief:1',
      result: null,
    });
    expect(await queue.get(reclaimed!.id)).toMatchObject({ state: 'active', attempt: 2, workerId, result: null });
    const written = await sql(`SELECT job_id FROM "${schema}".job_execution WHERE job_id = ANY($1::uuid[])`, [ids]);
    expect(written).toEqual([]);
    // The "other workers" end them, so that no later clock move lets the rescue bring them back.
    await sql(`UPDATE "${schema}".job SET state = 'cancelled', lease_expires_at = NULL WHERE id = ANY($1::uuid[])`, [
      ids,
    ]);
  });
});

describe('outcome writes', () => {
  it('a failed outcome write is retried: the outcome lands, and the job ran once', async () => {
    // Fault injection, not a mock: the first write of this queue's outcomes fails as a dropped
    // connection would; every other call goes to the real storage.
    const realFinish = storage.outcomes.finish;
    let injected = 0;
    storage.outcomes.finish = function (this: OutcomeStorage, ...args: Parameters<OutcomeStorage['finish']>) {
      if (injected === 0 && args[1].some((a) => a.job.queue === 'outcome-retry')) {
        injected++;
        return Promise.reject(new Error('Connection terminated unexpectedly (injected)'));
      }
      return realFinish.apply(this, args);
    };
    try {
      const { id } = await queue.enqueue(Held, {}, { queue: 'outcome-retry' });
      await until(id, 'succeeded');
      expect(injected).toBe(1);
      expect(runs.started.get(id)).toBe(1);
      expect(await queue.get(id)).toMatchObject({ attempt: 1, workerId, result: { by: 'worker' } });
      expect(await history(id)).toEqual([[1, 'succeeded', workerId]]);
    } finally {
      storage.outcomes.finish = realFinish;
    }
  });

  it('the default backoff is jittered: with no backoff option, attempt 2 comes 500-1000 ms after the failure', async () => {
    const ids = (
      await queue.enqueueMany(Array.from({ length: 20 }, () => ({ job: FailsFirst, payload: {}, options: {} })))
    ).map((j) => j.id);
    // The clock stands still, so run_at - now is exactly the delay chosen at the failure.
    const retries = await waitFor('20 first attempts to fail', async () => {
      const rows = await sql<{ run_at: Date }>(
        `SELECT run_at FROM "${schema}".job WHERE id = ANY($1::uuid[]) AND state = 'queued' AND attempt = 1`,
        [ids],
      );
      return rows.length === 20 ? rows : null;
    });
    const delays = retries.map((r) => r.run_at.getTime() - clock.now().getTime());
    expect(delays.filter((d) => d < 500 || d > 1_000)).toEqual([]);
    // 1 s with "equal jitter" draws from 500 values: twenty alike would mean no jitter at all.
    expect(new Set(delays).size).toBeGreaterThan(1);
    for (const id of ids) await queue.cancel(id);
  });
});

describe('shutdown', () => {
  it('hands back prefetched jobs at once, attempt unspent and without history; another instance runs them', async () => {
    const own = uniqueSchema('guar_handback');
    schemas.push(own);
    // One slot, five prefetched: the held run keeps the other five in the buffer. A minute-long
    // lease: whatever moves before it ends was handed back, not rescued.
    const worker = { concurrency: 1, prefetch: 5, lease: 60_000, shutdownGrace: 100, pollInterval: 100 };
    const first = await startJobsApp(own, { worker }, { providers: [Runs, Held] });
    const firstWorker = first.get(JobWorker).id;
    const ids = (
      await first
        .get(JobQueue)
        .enqueueMany(Array.from({ length: 6 }, () => ({ job: Held, payload: { hold: true }, options: {} })))
    ).map((j) => j.id);
    await waitFor('one job running and five in the buffer, all six leased', async () => {
      const leased = await sql(`SELECT 1 FROM "${own}".job WHERE state = 'active' AND worker_id = $1`, [firstWorker]);
      return first.get(Runs).started.size === 1 && leased.length === 6;
    });
    const buffered = ids.filter((id) => !first.get(Runs).started.has(id)).sort();
    await first.close();

    const rows = await sql(
      `SELECT j.id, j.state, j.attempt, j.worker_id, j.lease_expires_at,
              (SELECT count(*)::int FROM "${own}".job_execution e WHERE e.job_id = j.id) AS executions
         FROM "${own}".job j WHERE j.id = ANY($1::uuid[]) ORDER BY j.id`,
      [buffered],
    );
    expect(rows).toEqual(
      buffered.map((id) => ({
        id,
        state: 'queued',
        attempt: 0,
        worker_id: null,
        lease_expires_at: null,
        executions: 0,
      })),
    );

    const second = await startJobsApp(own, { worker: { ...worker, concurrency: 6 } }, { providers: [Runs, Held] });
    try {
      second.get(Runs).openAll();
      const secondWorker = second.get(JobWorker).id;
      const secondQueue = second.get(JobQueue);
      await waitFor('the second instance to run all six', async () => {
        const done = await sql(`SELECT 1 FROM "${own}".job WHERE id = ANY($1::uuid[]) AND state = 'succeeded'`, [ids]);
        return done.length === 6;
      });
      for (const id of buffered) {
        expect((await secondQueue.get(id))!.executions.map((e) => [e.attempt, e.state, e.workerId])).toEqual([
          [1, 'succeeded', secondWorker],
        ]);
      }
    } finally {
      await second.close();
    }
  });
});

describe('retention', () => {
  // Last in the file: it moves the shared clock by weeks.
  it('keeps a finished parent while a child still waits on it; the child is then judged on its outcome', async () => {
    const retention = app.get(RetentionService);
    const failed = await queue.enqueue(DoomedProbe, { permanent: true }, { queue: 'retention' });
    await until(failed.id, 'failed');
    // A settled batch goes with its members: it must stay too while something waits on it or on a member.
    const batch = await app
      .get(BatchBuilder)
      .create('kept')
      .add(DoomedProbe, { permanent: true }, { queue: 'retention' })
      .dispatch();
    await waitFor('the batch to fail', async () => (await queue.batchStatus(batch.id))?.state === 'failed');
    const [member] = await queue.batchMembers(batch.id);
    const later = await queue.enqueue(Held, {}, { queue: 'retention', delay: 40 * DAY });
    const child = await queue.enqueue(Held, {}, { queue: 'retention', after: [{ job: failed.id }, { job: later.id }] });
    const onBatch = await queue.enqueue(
      Held,
      {},
      { queue: 'retention', after: [{ batch: batch.id }, { job: later.id }] },
    );
    const onMember = await queue.enqueue(
      Held,
      {},
      { queue: 'retention', after: [{ job: member!.id }, { job: later.id }] },
    );
    for (const waiting of [child, onBatch, onMember]) expect(await stateOf(waiting.id)).toBe('waiting');

    // Past the 30 days that failed jobs are kept: the parents stay, their children still wait on them.
    clock.advance(31 * DAY);
    await retention.prune();
    expect(await stateOf(failed.id)).toBe('failed');
    expect((await queue.batchStatus(batch.id))?.state).toBe('failed');
    expect(await stateOf(member!.id)).toBe('failed');

    clock.advance(10 * DAY);
    await until(later.id, 'succeeded');
    for (const waiting of [child, onBatch, onMember]) {
      await until(waiting.id, 'skipped');
      expect((await queue.get(waiting.id))!.lastError?.name).toBe('DependencyNotMet');
      expect(runs.started.has(waiting.id)).toBe(false);
    }

    // Nothing waits on them any more: now they go.
    await retention.prune();
    expect(await queue.get(failed.id)).toBeNull();
    expect(await queue.batchStatus(batch.id)).toBeNull();
    expect(await queue.get(member!.id)).toBeNull();
  });
});
