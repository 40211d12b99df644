import { Logger, type INestApplication } from '@nestjs/common';
import { JobQueue } from 'nestjs-durable-jobs';
import { JobRegistry } from '../../../lib/discovery/job-registry.js';
import { Clock, type ClaimedJob, type FinishedAttempt } from '../../../lib/model/index.js';
import type { ClaimRequest } from '../../../lib/storage/jobs/claim/claim-storage.interface.js';
import { QUEUE_STORAGE, type QueueStorage } from '../../../lib/storage/queues/queue-storage.interface.js';
import { Claimer } from '../../../lib/worker/claiming/claimer.js';
import { resolveWorkerOptions } from '../../../lib/worker/worker-options.js';
import { dropSchemas, takeLeaseAway, uniqueSchema } from '../../support/database.js';
import { workerStorage, type WorkerStorage } from '../../support/job-storage.js';
import { flowProviders, Work } from '../../support/flow.jobs.js';
import { startJobsApp } from '../../support/jobs-app.js';

/**
 * The Claimer's bookkeeping, on the real storage of a schema of its own (no
 * worker runs there): which queues it asks and when, seen as the claim
 * statements it sends. The attempts it starts are only recorded; the test
 * tells it of their ends and writes as JobWorker would.
 */
const schema = uniqueSchema('claimer');
const WORKER = 'claimer-worker';
const LEASE = 30_000;
let app: INestApplication;
let storage: WorkerStorage;
/** The claim statements sent, in order, each with its queue and its answer. */
const claims: Array<{ statement: 'claim' | 'claimControlled'; queue: string; done: Promise<unknown> }> = [];
/** While set, claimControlled waits for it before it asks the database. */
let holdControlled: Promise<void> | null = null;
const claimers: Claimer[] = [];

beforeAll(async () => {
  const limits = { concurrency: 2 };
  app = await startJobsApp(
    schema,
    {
      worker: { enabled: false },
      queues: { 'cl-drain': limits, 'cl-limited': limits, 'cl-write': limits, 'cl-again': limits },
    },
    { providers: flowProviders(schema) },
  );
  storage = workerStorage(app);
  const { claims: claimStorage } = storage;
  const claim = claimStorage.claim.bind(claimStorage);
  claimStorage.claim = (request) => {
    const done = claim(request);
    claims.push({ statement: 'claim', queue: request.queue, done });
    return done;
  };
  const claimControlled = claimStorage.claimControlled.bind(claimStorage);
  claimStorage.claimControlled = (request) => {
    const held = holdControlled;
    const done = held ? held.then(() => claimControlled(request)) : claimControlled(request);
    claims.push({ statement: 'claimControlled', queue: request.queue, done });
    return done;
  };
});

beforeEach(() => {
  claims.length = 0;
});

afterEach(() => {
  for (const claimer of claimers.splice(0)) claimer.stop();
});

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema);
});

/**
 * A started Claimer serving `queues` in that order, with `concurrency` slots and no prefetch
 * (unless `prefetch`); `claimed` records what it tells JobWorker each claim handed it.
 */
async function startClaimer(
  queues: string[],
  concurrency = 1,
  prefetch = 0,
): Promise<{ claimer: Claimer; started: ClaimedJob[]; claimed: ClaimedJob[][] }> {
  const started: ClaimedJob[] = [];
  const claimed: ClaimedJob[][] = [];
  const claimer = new Claimer({
    workerId: WORKER,
    claims: storage.claims,
    outcomes: storage.outcomes,
    queueStorage: app.get<QueueStorage>(QUEUE_STORAGE),
    registry: app.get(JobRegistry),
    clock: app.get(Clock),
    options: resolveWorkerOptions({ concurrency, prefetch, queues }),
    logger: new Logger('Claimer'),
    runAttempt: (job) => started.push(job),
    claimedAgain: (jobs) => claimed.push([...jobs]),
  });
  claimers.push(claimer);
  claimer.start();
  await claimer.settings.refresh();
  return { claimer, started, claimed };
}

async function enqueue(queue: string, n: number): Promise<void> {
  await app
    .get(JobQueue)
    .enqueueMany(Array.from({ length: n }, () => ({ job: Work, payload: {}, options: { queue } })));
}

/** Lets every callback queued so far run, setImmediate ones included. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Waits until every claim sent has been answered and the claimer sent no new one after. */
async function quiet(): Promise<void> {
  for (let seen = -1; seen !== claims.length;) {
    seen = claims.length;
    await Promise.allSettled(claims.map((c) => c.done));
    await nextTurn();
  }
}

const asked = () => claims.map((c) => c.queue);
const succeeded = (job: ClaimedJob): FinishedAttempt => ({ job, outcome: { kind: 'succeeded', result: null } });

/** What JobWorker tells the claimer of an attempt that ended with no outcome to write. */
function endWithoutOutcome(claimer: Claimer, job: ClaimedJob): void {
  claimer.attemptEnded(job, false);
  claimer.jobReleased(job);
}

describe('Claimer', () => {
  it('asks the configured queues in their order, and skips a plain queue that came back short until told of work', async () => {
    await enqueue('cl-busy', 2);
    const { claimer, started } = await startClaimer(['cl-idle', 'cl-busy']);
    claimer.lookForWork();
    await quiet();
    expect(asked()).toEqual(['cl-idle', 'cl-busy']);
    expect(started.map((j) => j.queue)).toEqual(['cl-busy']);

    // The slot comes free: the idle queue, short last time, is not asked again.
    endWithoutOutcome(claimer, started[0]!);
    await quiet();
    expect(asked()).toEqual(['cl-idle', 'cl-busy', 'cl-busy']);
    expect(started).toHaveLength(2);
    endWithoutOutcome(claimer, started[1]!);
    await quiet();
    expect(asked()).toEqual(['cl-idle', 'cl-busy', 'cl-busy', 'cl-busy']);

    // Both came back short. Told of work in one, the claimer asks that one only.
    claims.length = 0;
    claimer.workMayHaveArrived('cl-idle');
    await quiet();
    expect(asked()).toEqual(['cl-idle']);
    await enqueue('cl-busy', 1);
    claimer.workMayHaveArrived('cl-busy');
    await quiet();
    expect(asked()).toEqual(['cl-idle', 'cl-busy']);
    expect(started.map((j) => j.queue)).toEqual(['cl-busy', 'cl-busy', 'cl-busy']);

    // A look for work anywhere asks every queue again.
    endWithoutOutcome(claimer, started[2]!);
    await quiet();
    claims.length = 0;
    claimer.lookForWork();
    await quiet();
    expect(asked()).toEqual(['cl-idle', 'cl-busy']);
  });

  it('rests after a pass that came back short, unless a signal of work came while it claimed', async () => {
    const { claimer } = await startClaimer(['cl-drain']);
    claimer.lookForWork();
    await quiet();
    // A controlled queue is never dry: only the drained flag keeps a second pass from asking it.
    expect(claims.map((c) => c.statement)).toEqual(['claimControlled']);

    let answer!: () => void;
    holdControlled = new Promise<void>((resolve) => (answer = resolve));
    claimer.workMayHaveArrived('cl-drain');
    expect(claims).toHaveLength(2);
    // Told again while that claim is under way: its "nothing there" may predate the news.
    claimer.workMayHaveArrived('cl-drain');
    expect(claims).toHaveLength(2);
    holdControlled = null;
    answer();
    await quiet();
    expect(claims).toHaveLength(3);
  });

  it('does not claim a limited queue while one of its outcomes is unwritten here, and looks once it is written', async () => {
    await enqueue('cl-limited', 3);
    const { claimer, started } = await startClaimer(['cl-limited'], 2);
    claimer.lookForWork();
    await quiet();
    expect(started).toHaveLength(2);
    expect(claims).toHaveLength(1);

    const [first] = started;
    claimer.attemptEnded(first!, true);
    await quiet();
    // A slot is idle here, but the database still counts the job: no statement.
    expect(claims).toHaveLength(1);

    await storage.outcomes.finish(WORKER, [succeeded(first!)], new Date(), LEASE);
    claimer.jobReleased(first!);
    await quiet();
    expect(claims.map((c) => c.statement)).toEqual(['claimControlled', 'claimControlled']);
    expect(started).toHaveLength(3);
  });

  it('claims on an outcome write only when it carries every unwritten outcome of the queue, one such claim at a time', async () => {
    await enqueue('cl-write', 2);
    const { claimer, started } = await startClaimer(['cl-write'], 2);
    claimer.lookForWork();
    await quiet();
    const [a, b] = started;
    expect(started).toHaveLength(2);
    claimer.attemptEnded(a!, true);
    claimer.attemptEnded(b!, true);
    await quiet();
    expect(claims).toHaveLength(1);

    // A write of one of the two frees a slot that the other's write would find still taken.
    expect(claimer.claimFor([succeeded(a!)])).toBeNull();
    const both = [succeeded(a!), succeeded(b!)];
    const request = claimer.claimFor(both);
    expect(request).toMatchObject({ workerId: WORKER, queue: 'cl-write', limit: 2 });
    expect(claimer.claimFor(both)).toBeNull();

    await enqueue('cl-write', 2);
    const written = await storage.outcomes.finishAndClaim(WORKER, both, new Date(), LEASE, request as ClaimRequest);
    claimer.claimAnswered(request!, both, written.claimed);
    expect(written.claimed.jobs).toHaveLength(2);
    expect(started.slice(2)).toEqual(written.claimed.jobs);
    claimer.jobReleased(a!);
    claimer.jobReleased(b!);
    await quiet();
    expect(claims).toHaveLength(1);

    claimer.stop();
    claimer.attemptEnded(started[2]!, true);
    expect(claimer.claimFor([succeeded(started[2]!)])).toBeNull();
  });

  it('a job claimed again while its earlier attempt runs here: the earlier one ends holding nothing, the new one frees its slot', async () => {
    await enqueue('cl-again', 1);
    const { claimer, started } = await startClaimer(['cl-again'], 2);
    claimer.lookForWork();
    await quiet();
    const [earlier] = started;
    // Its lease ran out and the rescue put it back: this claimer takes it again while attempt 1 still runs.
    await takeLeaseAway(schema, earlier!.id);
    claimer.lookForWork();
    await quiet();
    const again = started[1]!;
    expect(again).toMatchObject({ id: earlier!.id, attempt: 2 });

    // Attempt 1 ends as JobWorker ends an attempt the new claim stopped.
    endWithoutOutcome(claimer, earlier!);
    await quiet();
    await enqueue('cl-again', 1);
    claimer.attemptEnded(again, true);
    await storage.outcomes.finish(WORKER, [succeeded(again)], new Date(), LEASE);
    claimer.jobReleased(again);
    await quiet();
    // Attempt 2's write freed the job's slot: the claimer looks at once, and starts the job enqueued meanwhile.
    expect(started).toHaveLength(3);
    expect(started[2]!.id).not.toBe(earlier!.id);
  });

  it('a job claimed again while its earlier claim waits unstarted here: only the new claim stays, and the worker hears of it first', async () => {
    await enqueue('cl-buffer', 2);
    const { claimer, started, claimed } = await startClaimer(['cl-buffer'], 1, 2);
    claimer.lookForWork();
    await quiet();
    expect(started).toHaveLength(1);
    const [waiting] = claimer.unstarted();
    expect(waiting).toMatchObject({ attempt: 1 });
    await takeLeaseAway(schema, waiting!.id);
    claimer.lookForWork();
    await quiet();
    expect(claimer.unstarted()).toEqual([expect.objectContaining({ id: waiting!.id, attempt: 2 })]);
    expect(claimed.at(-1)).toEqual([claimer.unstarted()[0]]);
  });
});
