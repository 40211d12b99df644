import type { INestApplication } from '@nestjs/common';
import { JobQueue } from 'nestjs-durable-jobs';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import type { ClaimedJob } from '../../../lib/model/index.js';
import type { HeldJob } from '../../../lib/storage/jobs/outcomes/outcome-storage.interface.js';
import { AttemptRunner } from '../../../lib/worker/attempt-runner.service.js';
import { LeaseKeeper, type LeaseHolder } from '../../../lib/worker/lease-keeper.service.js';
import type { RunningJob } from '../../../lib/worker/running-job.js';
import { dropSchemas, sql, takeLeaseAway, uniqueSchema } from '../../support/database.js';
import { flowProviders, Work } from '../../support/flow.jobs.js';
import { workerStorage, type WorkerStorage } from '../../support/job-storage.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { sleep, waitFor } from '../../support/wait.js';

/**
 * The app's LeaseKeeper on the real storage of a schema of its own: the renewal statement and the
 * worker's row are the point, so they run on PostgreSQL. The app's own worker is disabled; the
 * test is the keeper's LeaseHolder, holding jobs it claimed through the real claim statement.
 * The clock is a ManualClock, so a renewed lease's end is exact.
 */
const schema = uniqueSchema('lease_keeper');
const LEASE = 300; // the keeper renews every 100 ms, its shortest interval
const clock = new ManualClock(new Date('2026-03-01T10:00:00.000Z'));
let app: INestApplication;
let storage: WorkerStorage;
let keeper: LeaseKeeper;
/** Every renewal statement the keeper sent: which worker, and the ids it renewed. */
const renewals: Array<{ workerId: string; ids: string[] }> = [];
/** While set, renewLeases waits for it before it reaches the database. */
let holdRenewal: Promise<void> | null = null;

beforeAll(async () => {
  app = await startJobsApp(
    schema,
    { worker: { enabled: false, lease: LEASE }, clock },
    { providers: flowProviders(schema) },
  );
  storage = workerStorage(app);
  keeper = app.get(LeaseKeeper);
  const { outcomes } = storage;
  const renewLeases = outcomes.renewLeases.bind(outcomes);
  outcomes.renewLeases = async (workerId, jobs, now, leaseMs) => {
    renewals.push({ workerId, ids: jobs.map((j) => j.id) });
    if (holdRenewal) await holdRenewal;
    return renewLeases(workerId, jobs, now, leaseMs);
  };
});

afterEach(async () => {
  await keeper.stop();
  holdRenewal = null;
  renewals.length = 0;
});

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema);
});

/** A LeaseHolder of the test's: the jobs it was given, and what the keeper told it. */
class TestHolder implements LeaseHolder {
  readonly lost: HeldJob[][] = [];
  readonly cancels: string[][] = [];
  /** Attempts made by the app's AttemptRunner, stopped as JobWorker stops one whose lease was lost. */
  readonly runs = new Map<string, RunningJob>();

  constructor(
    readonly id: string,
    public jobs: HeldJob[] = [],
  ) {}

  /** Holds real attempts of `claimed`, made by the app's AttemptRunner (not started: only their signal is read). */
  static running(id: string, claimed: readonly ClaimedJob[]): TestHolder {
    const holder = new TestHolder(id, heldOf(claimed));
    const runner = app.get(AttemptRunner);
    runner.prepare(id);
    for (const job of claimed) holder.runs.set(job.id, runner.create(job));
    return holder;
  }

  held(): HeldJob[] {
    return this.jobs;
  }

  runningCount(): number {
    return this.jobs.length;
  }

  leasesLost(jobs: readonly HeldJob[]): void {
    this.lost.push([...jobs]);
    // As JobWorker.leasesLost: the attempt of that very number stops, its signal aborted.
    for (const { id, attempt } of jobs) {
      const run = this.runs.get(id);
      if (run?.job.attempt === attempt) run.stop('lost-lease');
    }
  }

  cancelRequested(ids: readonly string[]): void {
    this.cancels.push([...ids]);
  }
}

let workers = 0;
/** Enqueues `n` jobs in a queue of their own and claims them for a fresh worker id. */
async function claimedFor(n: number): Promise<{ workerId: string; jobs: ClaimedJob[] }> {
  const workerId = `keeper-worker-${++workers}`;
  const queue = `lk-${workers}`;
  await app
    .get(JobQueue)
    .enqueueMany(Array.from({ length: n }, () => ({ job: Work, payload: {}, options: { queue } })));
  const jobs = await storage.claims.claim({
    workerId,
    queue,
    names: ['fc-work'],
    limit: n,
    now: clock.now(),
    leaseMs: LEASE,
  });
  expect(jobs).toHaveLength(n);
  return { workerId, jobs };
}

const heldOf = (jobs: readonly ClaimedJob[]): HeldJob[] => jobs.map((j) => ({ id: j.id, attempt: j.attempt }));

async function leaseEnds(jobs: readonly { id: string }[]): Promise<number[]> {
  const rows = await sql<{ id: string; lease_expires_at: Date | null }>(
    `SELECT id, lease_expires_at FROM "${schema}".job WHERE id = ANY($1::uuid[])`,
    [jobs.map((j) => j.id)],
  );
  return jobs.map((j) => rows.find((r) => r.id === j.id)!.lease_expires_at?.getTime() ?? NaN);
}

async function workerRow(id: string) {
  const [row] = await sql<{ stopped_at: Date | null; last_heartbeat: Date; active: number }>(
    `SELECT stopped_at, last_heartbeat, active FROM "${schema}".worker WHERE id = $1`,
    [id],
  );
  return row;
}

describe('LeaseKeeper', () => {
  it('registers the worker’s row at start and reports itself running under that id', async () => {
    const holder = new TestHolder('keeper-registers');
    expect(keeper.status()).toMatchObject({ running: false, id: null });
    await keeper.start(holder);
    expect(await workerRow(holder.id)).toMatchObject({ stopped_at: null, last_heartbeat: clock.now() });
    expect(keeper.status()).toMatchObject({ running: true, id: holder.id, lastHeartbeat: clock.now() });
  });

  it('renews every held job’s lease to a lease from now, and beats the heartbeat with the running count', async () => {
    const { workerId, jobs } = await claimedFor(3);
    const holder = new TestHolder(workerId, heldOf(jobs));
    await keeper.start(holder);
    clock.advance(10_000);
    await keeper.renew();
    expect(await leaseEnds(jobs)).toEqual(Array(3).fill(clock.now().getTime() + LEASE));
    expect(await workerRow(workerId)).toMatchObject({ last_heartbeat: clock.now(), active: 3 });
    expect(holder.lost).toEqual([]);
  });

  it('renews on its own every third of the lease, and no more once stopped', async () => {
    const { workerId, jobs } = await claimedFor(1);
    await keeper.start(new TestHolder(workerId, heldOf(jobs)));
    expect(keeper.interval()).toBe(100);
    clock.advance(60_000);
    const renewedAt = clock.now().getTime() + LEASE;
    await waitFor('a scheduled renewal', async () => (await leaseEnds(jobs))[0] === renewedAt, 2_000, 20);
    await waitFor('three scheduled renewals', () => renewals.length >= 3, 2_000, 20);
    await keeper.stop();
    const sent = renewals.length;
    await sleep(350);
    expect(renewals.length).toBe(sent);
  });

  it('tells the holder of exactly the jobs whose lease was taken, whose attempts’ signals then abort, and still renews the others', async () => {
    const { workerId, jobs } = await claimedFor(3);
    const holder = TestHolder.running(workerId, jobs);
    await keeper.start(holder);
    await takeLeaseAway(schema, jobs[1]!.id);
    clock.advance(1_000);
    await keeper.renew();
    expect(holder.lost).toEqual([[{ id: jobs[1]!.id, attempt: jobs[1]!.attempt }]]);
    const signals = jobs.map((j) => holder.runs.get(j.id)!.signal());
    expect(signals.map((s) => s.aborted)).toEqual([false, true, false]);
    expect((signals[1]!.reason as Error).name).toBe('LeaseLostError');
    const [first, , third] = await leaseEnds(jobs);
    expect([first, third]).toEqual([clock.now().getTime() + LEASE, clock.now().getTime() + LEASE]);
  });

  it('reports as lost a job held under another attempt than the row’s: the attempt is part of the fence', async () => {
    const { workerId, jobs } = await claimedFor(1);
    const holder = new TestHolder(workerId, [{ id: jobs[0]!.id, attempt: jobs[0]!.attempt + 1 }]);
    await keeper.start(holder);
    await keeper.renew();
    expect(holder.lost.flat().map((j) => j.id)).toEqual([jobs[0]!.id]);
  });

  it('passes on the held jobs someone asked to cancel', async () => {
    const { workerId, jobs } = await claimedFor(2);
    const holder = new TestHolder(workerId, heldOf(jobs));
    await keeper.start(holder);
    await sql(`UPDATE "${schema}".job SET cancel_requested = true WHERE id = $1`, [jobs[0]!.id]);
    await keeper.renew();
    expect(holder.cancels).toEqual([[jobs[0]!.id]]);
    expect(holder.lost).toEqual([]);
  });

  it('waits for the outcome writes holding the row lock before it renews, and holds them off while it does', async () => {
    const { workerId, jobs } = await claimedFor(1);
    await keeper.start(new TestHolder(workerId, heldOf(jobs)));
    let endWrite!: () => void;
    const write = keeper.rowLock.runShared(() => new Promise<void>((resolve) => (endWrite = resolve)));
    const renewal = keeper.renew();
    await sleep(50);
    expect(renewals).toEqual([]);
    endWrite();
    await write;
    await waitFor('the renewal, once the write let go', () => renewals.length === 1, 2_000, 5);
    // While it renews, an outcome write waits.
    let releaseRenewal!: () => void;
    holdRenewal = new Promise<void>((resolve) => (releaseRenewal = resolve));
    await renewal;
    const second = keeper.renew();
    await waitFor('the second renewal under way', () => renewals.length === 2, 2_000, 5);
    let wrote = false;
    const later = keeper.rowLock.runShared(async () => void (wrote = true));
    await sleep(50);
    expect(wrote).toBe(false);
    releaseRenewal();
    await second;
    await later;
    expect(wrote).toBe(true);
  });

  it('shares one renewal among calls made while it is under way', async () => {
    const { workerId, jobs } = await claimedFor(1);
    await keeper.start(new TestHolder(workerId, heldOf(jobs)));
    const [a, b] = [keeper.renew(), keeper.renew()];
    expect(a).toBe(b);
    await a;
    expect(renewals).toHaveLength(1);
  });

  it('registers the worker again when its row was removed (by retention)', async () => {
    const holder = new TestHolder('keeper-reregisters');
    await keeper.start(holder);
    await sql(`DELETE FROM "${schema}".worker WHERE id = $1`, [holder.id]);
    clock.advance(5_000);
    await keeper.renew();
    expect(await workerRow(holder.id)).toMatchObject({ stopped_at: null, last_heartbeat: clock.now() });
  });

  it('at stop, waits for a renewal under way, then marks the row stopped and no longer reports running', async () => {
    const { workerId, jobs } = await claimedFor(1);
    await keeper.start(new TestHolder(workerId, heldOf(jobs)));
    let releaseRenewal!: () => void;
    holdRenewal = new Promise<void>((resolve) => (releaseRenewal = resolve));
    clock.advance(2_000);
    void keeper.renew();
    await waitFor('the renewal under way', () => renewals.length === 1, 2_000, 5);
    let stopped = false;
    const stopping = keeper.stop().then(() => (stopped = true));
    await sleep(50);
    expect(stopped).toBe(false);
    releaseRenewal();
    await stopping;
    expect((await leaseEnds(jobs))[0]).toBe(clock.now().getTime() + LEASE);
    expect(await workerRow(workerId)).toMatchObject({ stopped_at: clock.now() });
    expect(keeper.status()).toMatchObject({ running: false, id: null, lastHeartbeat: null });
  });
});
