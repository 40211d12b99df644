import type { INestApplication } from '@nestjs/common';
import { JobQueue } from 'nestjs-durable-jobs';
import { Clock, type AttemptOutcome, type ClaimedJob, type FinishedAttempt } from '../../lib/model/index.js';
import type { ClaimRequest, ClaimResult } from '../../lib/storage/jobs/claim/claim-storage.interface.js';
import { WORKFLOW_STORAGE, type WorkflowStorage } from '../../lib/storage/workflows/workflow-storage.interface.js';
import { CompletionBatcher, type ClaimOnOutcomeWrite } from '../../lib/worker/completion-batcher.js';
import { ReadersWriterLock } from '../../lib/worker/readers-writer-lock.js';
import pg from 'pg';
import { databaseUrl, dropSchemas, sql, takeLeaseAway, uniqueSchema } from '../support/database.js';
import { workerStorage, type WorkerStorage } from '../support/job-storage.js';
import { flowProviders, Work } from '../support/flow.jobs.js';
import { startJobsApp } from '../support/jobs-app.js';
import { waitFor } from '../support/wait.js';

/** The CompletionBatcher on the real storage of a schema of its own; no worker runs there. */
const schema = uniqueSchema('batcher');
let app: INestApplication;
let storage: WorkerStorage;
let workflows: WorkflowStorage;
let clock: Clock;
/** Every outcome statement the storage was asked for, in order: which one, and how many outcomes. */
const writes: Array<{ statement: 'finish' | 'finishAndClaim'; outcomes: number }> = [];
/** Makes the next finishAndClaim fail before it reaches the database, once. */
let failNextClaimingWrite = false;

const LEASE = 30_000;
const WORKER = 'batcher-worker';

beforeAll(async () => {
  app = await startJobsApp(
    schema,
    { worker: { enabled: false }, queues: { limited: { concurrency: 2 } } },
    { providers: flowProviders(schema) },
  );
  storage = workerStorage(app);
  workflows = app.get<WorkflowStorage>(WORKFLOW_STORAGE);
  clock = app.get(Clock);
  // finishAndClaim may write its other outcomes through finish: those calls are part of it.
  let insideFinishAndClaim = false;
  const { outcomes } = storage;
  const finish = outcomes.finish.bind(outcomes);
  outcomes.finish = (workerId, attempts, now, leaseMs) => {
    if (!insideFinishAndClaim) writes.push({ statement: 'finish', outcomes: attempts.length });
    return finish(workerId, attempts, now, leaseMs);
  };
  const finishAndClaim = outcomes.finishAndClaim.bind(outcomes);
  outcomes.finishAndClaim = (workerId, attempts, now, leaseMs, claim) => {
    writes.push({ statement: 'finishAndClaim', outcomes: attempts.length });
    if (failNextClaimingWrite) {
      failNextClaimingWrite = false;
      return Promise.reject(new Error('connection reset'));
    }
    insideFinishAndClaim = true;
    try {
      return finishAndClaim(workerId, attempts, now, leaseMs, claim);
    } finally {
      insideFinishAndClaim = false;
    }
  };
});

beforeEach(() => {
  writes.length = 0;
});

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema);
});

function request(queue: string, limit: number, workerId = WORKER): ClaimRequest {
  return { workerId, queue, names: ['fc-work'], limit, now: new Date(), leaseMs: LEASE };
}

async function enqueue(queue: string, n: number): Promise<void> {
  await app
    .get(JobQueue)
    .enqueueMany(Array.from({ length: n }, () => ({ job: Work, payload: {}, options: { queue } })));
}

/** Enqueues `n` jobs in `queue` and claims them (plainly, or through the controlled claim) for WORKER. */
async function claimed(queue: string, n: number, controlled = false): Promise<ClaimedJob[]> {
  await enqueue(queue, n);
  const { claims } = storage;
  return controlled ? (await claims.claimControlled(request(queue, n))).jobs : claims.claim(request(queue, n));
}

const succeeded = (job: ClaimedJob): FinishedAttempt => ({ job, outcome: { kind: 'succeeded', result: null } });
const cancelled = (job: ClaimedJob): FinishedAttempt => {
  const outcome: AttemptOutcome = { kind: 'cancelled', error: { name: 'JobCancelledError', message: 'cancelled' } };
  return { job, outcome };
};

function batcher(options: { lock?: ReadersWriterLock; claimer?: ClaimOnOutcomeWrite; maxInFlight?: number } = {}) {
  const { lock = new ReadersWriterLock(), claimer = null, maxInFlight = 3 } = options;
  return new CompletionBatcher(storage.outcomes, workflows, WORKER, clock, lock, LEASE, claimer, maxInFlight);
}

async function states(jobs: readonly ClaimedJob[]): Promise<Array<{ state: string; worker_id: string | null }>> {
  const rows = await sql<{ id: string; state: string; worker_id: string | null }>(
    `SELECT id, state, worker_id FROM "${schema}".job WHERE id = ANY($1::uuid[])`,
    [jobs.map((j) => j.id)],
  );
  return jobs.map((j) => {
    const { state, worker_id } = rows.find((r) => r.id === j.id)!;
    return { state, worker_id };
  });
}

/** Lets every callback queued so far run, setImmediate ones included. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A ClaimOnOutcomeWrite that claims `limit` jobs of `queue` with every write it is asked about. */
class ClaimWithEveryWrite implements ClaimOnOutcomeWrite {
  readonly asked: string[][] = [];
  readonly answers: Array<ClaimResult | null> = [];

  constructor(
    private readonly queue: string | null,
    private readonly limit = 2,
  ) {}

  claimFor(attempts: readonly FinishedAttempt[]): ClaimRequest | null {
    this.asked.push(attempts.map((a) => a.job.id));
    return this.queue === null ? null : request(this.queue, this.limit);
  }

  claimAnswered(claim: ClaimRequest, _attempts: readonly FinishedAttempt[], result: ClaimResult | null): void {
    expect(claim.queue).toBe(this.queue);
    this.answers.push(result);
  }
}

describe('CompletionBatcher', () => {
  it('writes the outcomes handed in during one turn of the event loop in one statement', async () => {
    const jobs = await claimed('plain-one-turn', 4);
    const shared = batcher();
    const results = await Promise.all(jobs.map((job) => shared.add(succeeded(job))));
    expect(writes).toEqual([{ statement: 'finish', outcomes: 4 }]);
    expect(results).toEqual([true, true, true, true]);
    expect(await states(jobs)).toEqual(Array(4).fill({ state: 'succeeded', worker_id: WORKER }));
  });

  it('writes at once while a slot is free, and sends what arrives while every slot is busy in the next write', async () => {
    const jobs = await claimed('plain-busy', 4);
    // Lease renewal holds the lock exclusively: the first write waits for it, in flight.
    const lock = new ReadersWriterLock();
    let endRenewal!: () => void;
    const renewal = lock.runExclusive(() => new Promise<void>((resolve) => (endRenewal = resolve)));
    const one = batcher({ lock, maxInFlight: 1 });
    const results = [one.add(succeeded(jobs[0]!))];
    await nextTurn();
    for (const job of jobs.slice(1)) {
      results.push(one.add(succeeded(job)));
      await nextTurn();
    }
    expect(writes).toEqual([]);
    endRenewal();
    await renewal;
    expect(await Promise.all(results)).toEqual([true, true, true, true]);
    expect(writes).toEqual([
      { statement: 'finish', outcomes: 1 },
      { statement: 'finish', outcomes: 3 },
    ]);
  });

  it('resolves false for an outcome the fence refuses: the job is not this worker’s', async () => {
    await enqueue('plain-fenced', 1);
    const [theirs] = await storage.claims.claim(request('plain-fenced', 1, 'another-worker'));
    expect(await batcher().add(succeeded(theirs!))).toBe(false);
    expect(await states([theirs!])).toEqual([{ state: 'active', worker_id: 'another-worker' }]);
  });

  it('resolves a withdrawn outcome false, unwritten, even in one write with the next attempt of its job', async () => {
    const [earlier] = await claimed('plain-again', 1);
    // Its lease ran out and the rescue put it back: this worker claimed it again as attempt 2.
    await takeLeaseAway(schema, earlier!.id);
    const [again] = await storage.claims.claim(request('plain-again', 1));
    expect(again).toMatchObject({ id: earlier!.id, attempt: 2 });
    const shared = batcher();
    const results = Promise.all([shared.add(cancelled(earlier!)), shared.add(succeeded(again!))]);
    shared.withdraw(earlier!);
    expect(await results).toEqual([false, true]);
    expect(writes).toEqual([{ statement: 'finish', outcomes: 1 }]);
    expect(await states([again!])).toEqual([{ state: 'succeeded', worker_id: WORKER }]);
  });

  it('claims for a limited queue in the success write’s own statement, answered before the outcomes resolve', async () => {
    const running = await claimed('limited', 2, true);
    expect(running).toHaveLength(2);
    const next = await claimed('limited', 2, true);
    // The limit of 2 is reached: nothing more until outcomes are written.
    expect(next).toEqual([]);
    const claimer = new ClaimWithEveryWrite('limited');
    const shared = batcher({ claimer });
    const answeredFirst = await Promise.all(
      running.map((job) =>
        shared.add(succeeded(job)).then((applied) => ({ applied, answers: claimer.answers.length })),
      ),
    );
    expect(answeredFirst).toEqual([
      { applied: true, answers: 1 },
      { applied: true, answers: 1 },
    ]);
    expect(writes).toEqual([{ statement: 'finishAndClaim', outcomes: 2 }]);
    expect(claimer.asked).toEqual([running.map((j) => j.id)]);
    const refill = claimer.answers[0]!.jobs;
    expect(refill).toHaveLength(2);
    expect(await states([...running, ...refill])).toEqual([
      { state: 'succeeded', worker_id: WORKER },
      { state: 'succeeded', worker_id: WORKER },
      { state: 'active', worker_id: WORKER },
      { state: 'active', worker_id: WORKER },
    ]);
    // Leave the queue's slots free for the next test.
    await batcher().add(succeeded(refill[0]!));
    await batcher().add(succeeded(refill[1]!));
  });

  it('asks about a claim only for writes with a success in them, and writes plainly when none is wanted', async () => {
    const [a, b] = await claimed('limited', 2, true);
    const claimer = new ClaimWithEveryWrite('limited');
    expect(await batcher({ claimer }).add(cancelled(a!))).toBe(true);
    expect(claimer.asked).toEqual([]);
    const none = new ClaimWithEveryWrite(null);
    expect(await batcher({ claimer: none }).add(succeeded(b!))).toBe(true);
    expect(none.asked).toEqual([[b!.id]]);
    expect(none.answers).toEqual([]);
    expect(writes).toEqual([
      { statement: 'finish', outcomes: 1 },
      { statement: 'finish', outcomes: 1 },
    ]);
  });

  it('writes a success that started in the place of another only after the write that counts it', async () => {
    // W counted, S and R claimed ahead: S started in W's place, then R in S's. Written first, S's
    // success would count R while W still held its slot: one job more counted than the limit of 2.
    await enqueue('limited', 4);
    const { jobs } = await storage.claims.claimControlled({ ...request('limited', 2), ahead: 2 });
    expect(jobs.map((j) => Boolean(j.claimedAhead))).toEqual([false, false, true, true]);
    const [w, other, s, r] = jobs as [ClaimedJob, ClaimedJob, ClaimedJob, ClaimedJob];
    const counted = async () =>
      (
        await sql<{ n: number }>(
          `SELECT count(*)::int AS n FROM "${schema}".job WHERE queue = 'limited' AND state = 'active' AND NOT reserved`,
        )
      )[0]!.n;
    // Another session holds W's row: W's write waits for it in the database, in flight.
    const holder = new pg.Client({ connectionString: databaseUrl() });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM "${schema}".job WHERE id = $1 FOR UPDATE`, [w.id]);
      const [{ pid }] = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows as [
        { pid: number },
      ];
      const shared = batcher();
      const results = [shared.add({ ...succeeded(w), successor: s.id })];
      await waitFor('the write of W to wait for its row', async () => {
        const [row] = await sql<{ n: number }>(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
          [pid],
        );
        return row!.n > 0;
      });
      results.push(shared.add({ ...succeeded(s), successor: r.id }));
      await nextTurn();
      await nextTurn();
      expect(writes).toEqual([{ statement: 'finish', outcomes: 1 }]);
      expect(await counted()).toBe(2);
      await holder.query('COMMIT');
      expect(await Promise.all(results)).toEqual([true, true]);
    } finally {
      await holder.end();
    }
    expect(writes).toEqual([
      { statement: 'finish', outcomes: 1 },
      { statement: 'finish', outcomes: 1 },
    ]);
    expect(await counted()).toBe(2);
    expect(await states([w, other, s, r])).toEqual([
      { state: 'succeeded', worker_id: WORKER },
      { state: 'active', worker_id: WORKER },
      { state: 'succeeded', worker_id: WORKER },
      { state: 'active', worker_id: WORKER },
    ]);
    // Leave the queue's slots free for the next test.
    expect(await batcher().add(succeeded(other))).toBe(true);
    expect(await batcher().add(succeeded(r))).toBe(true);
  });

  it('retries a write that failed, answering its claim with null first: nothing was claimed', async () => {
    const [job] = await claimed('limited', 1, true);
    await enqueue('limited', 1);
    const claimer = new ClaimWithEveryWrite('limited', 1);
    failNextClaimingWrite = true;
    expect(await batcher({ claimer }).add(succeeded(job!))).toBe(true);
    expect(writes).toEqual([
      { statement: 'finishAndClaim', outcomes: 1 },
      { statement: 'finishAndClaim', outcomes: 1 },
    ]);
    expect(claimer.answers.map((a) => a && a.jobs.length)).toEqual([null, 1]);
    expect(await states([job!, claimer.answers[1]!.jobs[0]!])).toEqual([
      { state: 'succeeded', worker_id: WORKER },
      { state: 'active', worker_id: WORKER },
    ]);
  });
});
