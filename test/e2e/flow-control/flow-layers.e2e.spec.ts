import { Injectable, type INestApplication } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import pg from 'pg';
import {
  Job,
  JobQueue,
  JobQueues,
  type JobContext,
  type JobHandler,
  type JobsModuleOptions,
} from 'nestjs-durable-jobs';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import type { ClaimedJob, FinishedAttempt } from '../../../lib/model/index.js';
import type { ClaimRequest, ClaimResult } from '../../../lib/storage/jobs/claim/claim-storage.interface.js';
import {
  QUEUE_STORAGE,
  type QueueConfig,
  type QueueStorage,
} from '../../../lib/storage/queues/queue-storage.interface.js';
import { JobWorker } from '../../../lib/worker/job-worker.service.js';
import { type WorkerStorage, workerStorage } from '../../support/job-storage.js';
import { databaseUrl, dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

/**
 * Flow control is enforced twice in several places: by the controlled claim
 * in the database and by the worker around it. A test of the pair passes
 * with either layer broken, as the other one hides it; these take each layer
 * on its own. The claim's tests call the storage directly with no worker
 * running. The worker's watch what it asks of its storage and what it holds,
 * through its own app's providers, and every wait is for something they can
 * see happen.
 */
const schemas: string[] = [];

/** Per app instance: what the runs of `fl-work` did, and the gates the test opens. */
@Injectable()
class Runs {
  /** Job ids, in the order their handlers started. */
  readonly started: string[] = [];
  /** Handlers running now: job id to queue. */
  readonly running = new Map<string, string>();
  /** Per queue, the most handlers that ran at once. */
  readonly peak = new Map<string, number>();
  /** Jobs whose signal aborted while they were held. */
  readonly aborted = new Set<string>();
  private readonly gates = new Map<string, () => void>();
  private open = false;

  begin(ctx: JobContext): void {
    this.started.push(ctx.jobId);
    this.running.set(ctx.jobId, ctx.queue);
    let inQueue = 0;
    for (const queue of this.running.values()) if (queue === ctx.queue) inQueue++;
    this.peak.set(ctx.queue, Math.max(this.peak.get(ctx.queue) ?? 0, inQueue));
  }

  end(ctx: JobContext): void {
    this.running.delete(ctx.jobId);
  }

  /** Resolves when the test lets the run go; rejects with the signal's reason when it aborts. */
  hold(ctx: JobContext): Promise<void> {
    if (this.open) return Promise.resolve();
    return new Promise((resolve, reject) => {
      ctx.signal.addEventListener(
        'abort',
        () => {
          this.aborted.add(ctx.jobId);
          reject(ctx.signal.reason as Error);
        },
        { once: true },
      );
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
    for (const go of this.gates.values()) go();
    this.gates.clear();
  }
}

interface WorkPayload {
  /** Wait for the test to release the run. */
  hold?: boolean;
}

/** Records its run; with `hold`, returns only when the test lets it. The queue comes from the enqueue. */
@Job('fl-work', { maxAttempts: 1 })
class Work implements JobHandler<WorkPayload> {
  constructor(private readonly runs: Runs) {}
  async run(payload: WorkPayload, ctx: JobContext): Promise<void> {
    this.runs.begin(ctx);
    try {
      if (payload.hold) await this.runs.hold(ctx);
    } finally {
      this.runs.end(ctx);
    }
  }
}

const providers = [Runs, Work];

afterAll(async () => {
  await dropSchemas(...schemas);
});

const ids = (jobs: readonly ClaimedJob[]) => jobs.map((j) => j.id);
const NOTHING: ClaimResult = { jobs: [], waitMs: null };

describe('the controlled claim on its own: called directly, no worker running', () => {
  const schema = uniqueSchema('flclaim');
  let app: INestApplication | undefined;
  let storage: WorkerStorage;
  let jobs: JobQueue;
  let queues: JobQueues;

  beforeAll(async () => {
    schemas.push(schema);
    app = await startJobsApp(
      schema,
      {
        worker: { enabled: false },
        queues: {
          'fl-pause-plain': {},
          'fl-pause-limited': { concurrency: 2 },
          'fl-pause-race': { concurrency: 5 },
          'fl-dl-limited': { concurrency: 5 },
          'fl-dl-counted': { concurrency: 5 },
          'fl-gc-concurrency': { concurrency: 100 },
          'fl-gc-rate': { rateLimit: { max: 1_000, per: 60_000 } },
        },
      },
      { providers },
    );
    storage = workerStorage(app);
    jobs = app.get(JobQueue);
    queues = app.get(JobQueues);
  });

  afterAll(async () => {
    await app?.close();
  });

  const request = (queue: string, limit: number, now = new Date()): ClaimRequest => ({
    workerId: 'w:1',
    queue,
    names: ['fl-work'],
    limit,
    now,
    leaseMs: 60_000,
  });
  const succeeded = (...claimed: ClaimedJob[]): FinishedAttempt[] =>
    claimed.map((job) => ({ job, outcome: { kind: 'succeeded', result: null } }));
  const stateOf = async (id: string) =>
    (await sql<{ state: string }>(`SELECT state FROM "${schema}".job WHERE id = $1`, [id]))[0]?.state;

  it('serves the next job of each serial key with none active, none of a busy key, and does not throw', async () => {
    const refs = await jobs.enqueueMany(
      ['k1', 'k1', 'k2', 'k2', 'k3', 'k3'].map((serialKey) => ({
        job: Work,
        payload: {},
        options: { queue: 'fl-serial', serialKey },
      })),
    );
    const [k1a, k1b, k2a, , k3a] = refs.map((r) => r.id);
    const first = await storage.claims.claimControlled(request('fl-serial', 1));
    expect(ids(first.jobs)).toEqual([k1a]);
    // k1 is busy: the claim must not even choose its second job. Claimed, that job would break the
    // index that allows one active job per key (job_serial_active_idx): the claim would throw
    // instead of returning the other keys' jobs.
    expect(ids((await storage.claims.claimControlled(request('fl-serial', 10))).jobs)).toEqual([k2a, k3a]);
    expect(await storage.claims.claimControlled(request('fl-serial', 10))).toEqual(NOTHING);
    // Once k1's job is done, its next one is served.
    await storage.outcomes.finish('w:1', succeeded(first.jobs[0]!), new Date(), 60_000);
    expect(ids((await storage.claims.claimControlled(request('fl-serial', 10))).jobs)).toEqual([k1b]);
  });

  it('claims nothing of a paused queue, neither in a claim nor in the claim of an outcome write', async () => {
    const plain = await jobs.enqueueMany(
      Array.from({ length: 2 }, () => ({ job: Work, payload: {}, options: { queue: 'fl-pause-plain' } })),
    );
    await jobs.enqueueMany(
      Array.from({ length: 4 }, () => ({ job: Work, payload: {}, options: { queue: 'fl-pause-limited' } })),
    );
    const running = (await storage.claims.claimControlled(request('fl-pause-limited', 2))).jobs;
    expect(running).toHaveLength(2);
    await queues.pause('fl-pause-plain');
    await queues.pause('fl-pause-limited');
    // A queue that nothing but the pause sends through this claim, and one with a limit.
    expect(await storage.claims.claimControlled(request('fl-pause-plain', 10))).toEqual(NOTHING);
    expect(await storage.claims.claimControlled(request('fl-pause-limited', 10))).toEqual(NOTHING);
    // The outcome is written; the claim riding on it gets nothing, though the write freed a slot.
    const ride = await storage.outcomes.finishAndClaim(
      'w:1',
      succeeded(running[0]!),
      new Date(),
      60_000,
      request('fl-pause-limited', 10),
    );
    expect([...ride.applied]).toEqual([running[0]!.id]);
    expect(ride.claimed).toEqual(NOTHING);

    // Resumed, the same calls are served: the pause was what held them back.
    await queues.resume('fl-pause-plain');
    await queues.resume('fl-pause-limited');
    expect(ids((await storage.claims.claimControlled(request('fl-pause-plain', 10))).jobs)).toEqual(
      plain.map((r) => r.id),
    );
    const resumed = await storage.outcomes.finishAndClaim(
      'w:1',
      succeeded(running[1]!),
      new Date(),
      60_000,
      request('fl-pause-limited', 10),
    );
    expect(resumed.claimed.jobs).toHaveLength(2);
  });

  it('claims nothing of a queue paused while the claim waited for its lock', async () => {
    const refs = await jobs.enqueueMany(
      Array.from({ length: 3 }, () => ({ job: Work, payload: {}, options: { queue: 'fl-pause-race' } })),
    );
    // Another session holds the queue's row, as another instance's claim of it would, and pauses
    // the queue once this claim has read it unpaused and waits for the row.
    const holder = new pg.Client({ connectionString: databaseUrl() });
    await holder.connect();
    let open = false;
    try {
      await holder.query('BEGIN');
      open = true;
      await holder.query(`SELECT 1 FROM "${schema}".job_queue WHERE name = 'fl-pause-race' FOR UPDATE`);
      const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const claim = storage.claims.claimControlled(request('fl-pause-race', 10));
      claim.catch(() => undefined);
      await waitFor(
        'the claim to wait for the queue row',
        async () => (await sql(`SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [pid])).length,
      );
      await holder.query(`UPDATE "${schema}".job_queue SET paused = true WHERE name = 'fl-pause-race'`);
      await holder.query('COMMIT');
      open = false;
      expect(await claim).toEqual(NOTHING);
    } finally {
      if (open) await holder.query('ROLLBACK');
      await holder.end();
    }
    await queues.resume('fl-pause-race');
    expect(ids((await storage.claims.claimControlled(request('fl-pause-race', 10))).jobs)).toEqual(
      refs.map((r) => r.id),
    );
  });

  it('claims no queued job past its deadline: not the plain claim, and no path of the controlled one', async () => {
    const hour = 3_600_000;
    const now = Date.now();
    // Claimed two hours on: every job is due, past a deadline of one hour and within one of three.
    const at = new Date(now + 2 * hour);
    const cases: Array<{ queue: string; kinds: Array<(tag: string) => { group?: string; serialKey?: string }> }> = [
      // The plain claim.
      { queue: 'fl-dl-plain', kinds: [() => ({})] },
      // Limited and nothing else: the controlled claim's plain path.
      { queue: 'fl-dl-limited', kinds: [() => ({})] },
      // Groups and nothing to count: jobs of no group, and each group's.
      { queue: 'fl-dl-groups', kinds: [() => ({}), (tag) => ({ group: `g-${tag}` })] },
      // Groups, serial keys and a limit, counted under the lock: all three sources of jobs.
      {
        queue: 'fl-dl-counted',
        kinds: [() => ({}), (tag) => ({ group: `g-${tag}` }), (tag) => ({ serialKey: `s-${tag}` })],
      },
    ];
    for (const { queue, kinds } of cases) {
      const enqueue = (tag: string, deadline: Date) =>
        jobs.enqueueMany(kinds.map((kind) => ({ job: Work, payload: {}, options: { queue, deadline, ...kind(tag) } })));
      const late = await enqueue('late', new Date(now + hour));
      const due = await enqueue('due', new Date(now + 3 * hour));
      const claimed =
        queue === 'fl-dl-plain'
          ? await storage.claims.claim(request(queue, 10, at))
          : (await storage.claims.claimControlled(request(queue, 10, at))).jobs;
      expect({ queue, claimed: ids(claimed).sort() }).toEqual({ queue, claimed: due.map((r) => r.id).sort() });
      for (const { id } of late) expect({ queue, state: await stateOf(id) }).toEqual({ queue, state: 'queued' });
    }
  });

  it.each<[string, string, () => Promise<unknown>]>([
    ['a concurrency limit', 'fl-gc-concurrency', async () => undefined],
    ['a rate limit', 'fl-gc-rate', async () => undefined],
    [
      'serial keys',
      'fl-gc-serial',
      // Flags the queue; not due within the test, so never in a claim.
      () => jobs.enqueue(Work, {}, { queue: 'fl-gc-serial', serialKey: 's', delay: 3_600_000 }),
    ],
    [
      'a job name limit',
      'fl-gc-named',
      () => queues.setLimits('fl-gc-named', { concurrency: 100 }, { job: 'fl-work' }),
    ],
  ])(
    'on a grouped queue with %s, counted under its lock: the rotation moves on and a noisy group comes last',
    async (_what, queue, counted) => {
      const groups = ['g0', 'g1', 'g2', 'g3', 'g4', 'g5'];
      await jobs.enqueueMany(
        groups.flatMap((group) =>
          Array.from({ length: 5 }, () => ({ job: Work, payload: {}, options: { queue, group } })),
        ),
      );
      await counted();
      const groupOf = new Map(
        (
          await sql<{ id: string; g: string }>(`SELECT id, group_key AS g FROM "${schema}".job WHERE queue = $1`, [
            queue,
          ])
        ).map((r) => [r.id, r.g]),
      );
      const claim = async (limit: number) =>
        (await storage.claims.claimControlled(request(queue, limit))).jobs.map((j) => groupOf.get(j.id));
      // A claim of three walks three groups, one job of each, from where the last claim stopped, and
      // wraps around at the end.
      expect(await claim(3)).toEqual(['g0', 'g1', 'g2']);
      expect(await claim(3)).toEqual(['g3', 'g4', 'g5']);
      expect(await claim(3)).toEqual(['g0', 'g1', 'g2']);
      // g3, next in the rotation, now holds the queue's only two running jobs: at least two and more
      // than half of them makes it noisy, served after the others.
      await sql(
        `UPDATE "${schema}".job SET state = 'succeeded', lease_expires_at = NULL WHERE queue = $1 AND state = 'active'`,
        [queue],
      );
      await sql(
        `UPDATE "${schema}".job SET state = 'active', worker_id = 'w:1', lease_expires_at = now() + interval '1 hour'
          WHERE id IN (SELECT id FROM "${schema}".job WHERE queue = $1 AND group_key = 'g3' AND state = 'queued'
                        ORDER BY id LIMIT 2)`,
        [queue],
      );
      expect(await claim(6)).toEqual(['g4', 'g5', 'g0', 'g1', 'g2', 'g3']);
    },
  );
});

describe('the worker on its own', () => {
  const apps: INestApplication[] = [];

  async function boot(
    schema: string,
    options: Partial<JobsModuleOptions>,
    beforeInit?: (ref: TestingModule) => void,
  ): Promise<INestApplication> {
    const app = await startJobsApp(
      schema,
      { ...options, worker: { pollInterval: 100, ...options.worker } },
      { providers },
      beforeInit,
    );
    apps.push(app);
    return app;
  }

  /** Closes an app the test itself stops. */
  function closing(app: INestApplication): Promise<void> {
    apps.splice(apps.indexOf(app), 1);
    return app.close();
  }

  function fresh(prefix: string): string {
    const schema = uniqueSchema(prefix);
    schemas.push(schema);
    return schema;
  }

  // Each test's instances close with it, their held runs let go.
  afterEach(async () => {
    for (const app of apps.splice(0)) {
      app.get(Runs).openAll();
      await app.close().catch(() => undefined);
    }
  });

  const row = async (schema: string, id: string) =>
    (
      await sql<{ state: string; worker_id: string | null; attempt: number }>(
        `SELECT state, worker_id, attempt FROM "${schema}".job WHERE id = $1`,
        [id],
      )
    )[0];
  const until = (schema: string, id: string, state: string) =>
    waitFor(`job ${id} to be ${state}`, async () => (await row(schema, id))?.state === state);

  /** Records what the worker's storage is asked: `claim:<queue>` (a controlled claim), `ride:<queue>` (one riding on an outcome write). */
  function recordClaims(ref: TestingModule, asked: string[]): void {
    const storage = workerStorage(ref);
    const claimControlled = storage.claims.claimControlled.bind(storage.claims);
    const finishAndClaim = storage.outcomes.finishAndClaim.bind(storage.outcomes);
    storage.claims.claimControlled = (r) => {
      asked.push(`claim:${r.queue}`);
      return claimControlled(r);
    };
    storage.outcomes.finishAndClaim = (workerId, attempts, now, leaseMs, claim) => {
      asked.push(`ride:${claim.queue}`);
      return finishAndClaim(workerId, attempts, now, leaseMs, claim);
    };
  }

  /** The queues' settings as the worker last read them (its copy is made from that read), and reads under way. */
  function watchSettings(ref: TestingModule): { latest: QueueConfig[]; reading: number } {
    const storage = ref.get<QueueStorage>(QUEUE_STORAGE);
    const configs = storage.configs.bind(storage);
    const seen = { latest: [] as QueueConfig[], reading: 0 };
    storage.configs = async () => {
      seen.reading++;
      try {
        return (seen.latest = await configs());
      } finally {
        seen.reading--;
      }
    };
    return seen;
  }
  const settingOf = (settings: { latest: QueueConfig[] }, queue: string) =>
    settings.latest.find((c) => c.queue === queue);

  /**
   * Counts the worker's polls. Besides the 'queues' notification, the poll
   * is the one way a change of settings reaches a worker, so a test of the
   * notification must know the poll did not bring the change: with a poll
   * every 10 s and a test whose waits end well before, none should have run.
   * Counting it says so exactly, where the elapsed time would only bound it.
   */
  function countPolls(app: INestApplication): { count: number } {
    const worker = app.get(JobWorker) as unknown as { poll(): Promise<void> };
    expect(typeof worker.poll).toBe('function');
    const poll = worker.poll.bind(worker);
    const seen = { count: 0 };
    worker.poll = () => {
      seen.count++;
      return poll();
    };
    return seen;
  }

  it('asks the database nothing of a paused queue: no claim, and no claim riding on an outcome write', async () => {
    // Each layer holds a pause on its own; this pins the worker's. The claim refuses a paused queue
    // (above) because a worker's copy of the settings may be stale; the worker skips it because
    // asking would cost a round trip for nothing on every pass, and a claim riding on every one of
    // the queue's outcome writes.
    const schema = fresh('flpause');
    const queues = { 'fl-paused': { concurrency: 1 } };
    const api = await boot(schema, { worker: { enabled: false }, queues });
    await api.get(JobQueues).pause('fl-paused');
    const [held, waiting] = await api.get(JobQueue).enqueueMany([
      { job: Work, payload: { hold: true }, options: { queue: 'fl-paused' } },
      { job: Work, payload: {}, options: { queue: 'fl-paused' } },
    ]);
    const marker = await api.get(JobQueue).enqueue(Work, {}, { queue: 'fl-marker' });
    const asked: string[] = [];
    let settings!: ReturnType<typeof watchSettings>;
    const app = await boot(
      schema,
      { worker: { concurrency: 4, queues: ['fl-paused', 'fl-marker'] }, queues },
      (ref) => {
        recordClaims(ref, asked);
        settings = watchSettings(ref);
      },
    );
    const runs = app.get(Runs);
    // The worker reads the settings before its first claim and asks its queues in the order given,
    // so the pass that claimed the marker came to fl-paused first, knowing it paused.
    await until(schema, marker.id, 'succeeded');
    expect(asked).toEqual([]);

    // Resumed, the held job runs. Paused again while it runs, its outcome write claims nothing with it,
    // and no pass after asks for the queue.
    await api.get(JobQueues).resume('fl-paused');
    await waitFor('the held job to start', () => runs.running.has(held!.id));
    expect(asked).toContain('claim:fl-paused');
    await api.get(JobQueues).pause('fl-paused');
    await waitFor("the worker's copy of the settings to say paused", () => settingOf(settings, 'fl-paused')?.paused);
    const mark = asked.length;
    runs.release(held!.id);
    await until(schema, held!.id, 'succeeded');
    const next = await api.get(JobQueue).enqueue(Work, {}, { queue: 'fl-marker' });
    await until(schema, next.id, 'succeeded');
    expect(asked.slice(mark)).toEqual([]);
    expect((await row(schema, waiting!.id))?.state).toBe('queued');
  });

  it('fails a job claimed before its deadline but about to start after it, without running it', async () => {
    const schema = fresh('fldead');
    const clock = new ManualClock(new Date('2026-12-01T10:00:00Z'));
    // One slot and five prefetched: the held job keeps the other one in the buffer. Hour-long leases
    // on the manual clock: moving it two minutes takes no lease away.
    const app = await boot(schema, { clock, worker: { concurrency: 1, prefetch: 5, lease: 3_600_000 } });
    const runs = app.get(Runs);
    const workerId = app.get(JobWorker).id;
    const [first, late] = await app.get(JobQueue).enqueueMany([
      { job: Work, payload: { hold: true }, options: { queue: 'fl-deadline', priority: 10 } },
      {
        job: Work,
        payload: {},
        options: { queue: 'fl-deadline', deadline: new Date(clock.now().getTime() + 60_000) },
      },
    ]);
    await waitFor('the first job to run and the other to wait in the buffer, claimed', async () => {
      const buffered = await row(schema, late!.id);
      return runs.running.has(first!.id) && buffered?.state === 'active' && buffered.worker_id === workerId;
    });
    clock.advance(120_000);
    runs.release(first!.id);
    const ended = await waitFor('the late job to end', async () => {
      const job = await app.get(JobQueue).get(late!.id);
      return job && job.state !== 'active' && job.state !== 'queued' ? job : null;
    });
    expect(ended).toMatchObject({
      state: 'failed',
      lastError: {
        name: 'DeadlineExceededError',
        message: expect.stringMatching(/its deadline 2026-12-01T10:01:00\.000Z passed before it could start/),
      },
    });
    expect(runs.started).toEqual([first!.id]);
  });

  it("gives a limited queue's slots to the instances with free slots: none counts a job it cannot start, and the limit is used in full", async () => {
    const schema = fresh('flshare');
    // A limit of four over two instances of two slots: each must count only what it can start.
    // What either claims ahead beside (uncounted) takes no slot from the other.
    const options = { worker: { concurrency: 2 }, queues: { 'fl-shared': { concurrency: 4 } } };
    const pair = [await boot(schema, options), await boot(schema, options)];
    const instances = pair.map((app) => ({ id: app.get(JobWorker).id, runs: app.get(Runs) }));
    const total = 8;
    await pair[0]!
      .get(JobQueue)
      .enqueueMany(
        Array.from({ length: total }, () => ({ job: Work, payload: { hold: true }, options: { queue: 'fl-shared' } })),
      );
    /** Once both instances started all they can of what they hold: per instance, its counted jobs and its running ones. */
    const settled = () =>
      waitFor('both instances to start what they can of the jobs they hold', async () => {
        const rows = await sql<{ worker_id: string | null; state: string; n: number }>(
          `SELECT worker_id, CASE WHEN reserved AND state = 'active' THEN 'ahead' ELSE state END AS state, count(*)::int AS n
             FROM "${schema}".job WHERE queue = 'fl-shared' GROUP BY 1, 2`,
        );
        const done = rows.filter((r) => r.state === 'succeeded').reduce((n, r) => n + r.n, 0);
        const each = instances.map(({ id, runs }) => ({
          active: rows.find((r) => r.state === 'active' && r.worker_id === id)?.n ?? 0,
          running: runs.running.size,
        }));
        const claimed = each.reduce((n, e) => n + e.active, 0);
        return claimed === Math.min(4, total - done) && each.every((e) => e.running === Math.min(e.active, 2))
          ? each
          : null;
      });
    const full = [
      { active: 2, running: 2 },
      { active: 2, running: 2 },
    ];
    // Slots come free one at a time on either instance; the one with the free slot refills it.
    for (const turn of [0, 1, 0, 1]) {
      expect(await settled()).toEqual(full);
      const { runs } = instances[turn]!;
      runs.release([...runs.running.keys()][0]!);
    }
    expect(await settled()).toEqual(full);
    for (const { runs } of instances) runs.openAll();
    await waitFor(
      'every job to succeed',
      async () =>
        (
          await sql<{ n: number }>(
            `SELECT count(*)::int AS n FROM "${schema}".job WHERE queue = 'fl-shared' AND state = 'succeeded'`,
          )
        )[0]!.n === total,
    );
  });

  it('obeys a pause and a resume made on another instance once their notification arrives, before any poll', async () => {
    const schema = fresh('flnotify');
    const queues = { 'fl-notified': {} };
    const api = await boot(schema, { worker: { enabled: false }, queues });
    let settings!: ReturnType<typeof watchSettings>;
    const app = await boot(
      schema,
      { worker: { concurrency: 4, pollInterval: 10_000, queues: ['fl-notified', 'fl-marker'] }, queues },
      (ref) => (settings = watchSettings(ref)),
    );
    const polls = countPolls(app);
    // A read under way when the change lands would be shared by the refresh the notification asks for.
    await waitFor('the worker to read no settings', () => settings.reading === 0);
    await api.get(JobQueues).pause('fl-notified');
    await waitFor(
      'the worker to read the pause, or to poll',
      () => settingOf(settings, 'fl-notified')?.paused || polls.count > 0,
      20_000,
    );
    expect(polls.count).toBe(0);
    const [paused, marker] = await api.get(JobQueue).enqueueMany([
      { job: Work, payload: {}, options: { queue: 'fl-notified' } },
      { job: Work, payload: {}, options: { queue: 'fl-marker' } },
    ]);
    // The pass that claimed the marker came to fl-notified first. With nothing else to control,
    // the queue goes through the plain claim, which knows nothing of pauses: only the worker's copy
    // of the settings keeps its job queued.
    await until(schema, marker!.id, 'succeeded');
    expect((await row(schema, paused!.id))?.state).toBe('queued');

    await api.get(JobQueues).resume('fl-notified');
    await waitFor(
      'the resumed job to run, or the worker to poll',
      async () => polls.count > 0 || (await row(schema, paused!.id))?.state === 'succeeded',
      20_000,
    );
    expect(polls.count).toBe(0);
    expect((await row(schema, paused!.id))?.state).toBe('succeeded');
  });

  it('reads the settings again for a notification that arrives while a read is under way', async () => {
    const schema = fresh('flraced');
    const queues = { 'fl-raced': {}, 'fl-other': {} };
    const api = await boot(schema, { worker: { enabled: false }, queues });
    let storage!: QueueStorage;
    const app = await boot(
      schema,
      { worker: { concurrency: 4, pollInterval: 10_000, queues: ['fl-raced'] }, queues },
      (ref) => (storage = ref.get<QueueStorage>(QUEUE_STORAGE)),
    );
    const polls = countPolls(app);
    // The next read is held once its query has answered: it then carries the settings from before
    // the pause below, as a read that was under way when the pause's notification came would.
    const configs = storage.configs.bind(storage);
    let reads = 0;
    let latest: QueueConfig[] = [];
    let answered!: () => void;
    const stale = new Promise<void>((resolve) => (answered = resolve));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    storage.configs = async () => {
      const read = ++reads;
      const result = await configs();
      if (read === 1) {
        answered();
        await held;
      }
      return (latest = result);
    };
    // Any change of settings notifies every instance, and each one reads them again.
    await api.get(JobQueues).setLimits('fl-other', { concurrency: 3 });
    await stale;
    // The worker's copy of the settings is told to refresh when the pause's notification comes.
    const worker = app.get(JobWorker) as unknown as { claimer: { settings: { refresh(): Promise<void> } } };
    const controls = worker.claimer.settings;
    expect(typeof controls.refresh).toBe('function');
    const refresh = controls.refresh.bind(controls);
    let refreshes = 0;
    controls.refresh = () => {
      refreshes++;
      return refresh();
    };
    await api.get(JobQueues).pause('fl-raced');
    await waitFor('the pause to reach the worker, or the worker to poll', () => refreshes > 0 || polls.count > 0);
    release();
    await waitFor(
      'the worker to read the pause, or to poll',
      () => latest.find((c) => c.queue === 'fl-raced')?.paused === true || polls.count > 0,
      20_000,
    );
    expect(polls.count).toBe(0);
  });

  it('enforces a limit set at run time on another instance, from its notification on, before any poll', async () => {
    const schema = fresh('fllimit');
    const queues = { 'fl-relimited': {} };
    const api = await boot(schema, { worker: { enabled: false }, queues });
    let settings!: ReturnType<typeof watchSettings>;
    const app = await boot(
      schema,
      { worker: { concurrency: 4, pollInterval: 10_000, queues: ['fl-relimited', 'fl-marker'] }, queues },
      (ref) => (settings = watchSettings(ref)),
    );
    const runs = app.get(Runs);
    const polls = countPolls(app);
    await waitFor('the worker to read no settings', () => settings.reading === 0);
    await api.get(JobQueues).setLimits('fl-relimited', { concurrency: 2 });
    await waitFor(
      'the worker to read the limit, or to poll',
      () => settingOf(settings, 'fl-relimited')?.concurrency === 2 || polls.count > 0,
      20_000,
    );
    expect(polls.count).toBe(0);
    const refs = await api.get(JobQueue).enqueueMany([
      ...Array.from({ length: 5 }, () => ({
        job: Work,
        payload: { hold: true },
        options: { queue: 'fl-relimited' },
      })),
      { job: Work, payload: {}, options: { queue: 'fl-marker' } },
    ]);
    const limited = refs.slice(0, 5).map((r) => r.id);
    // Without a limit the queue went through the plain claim, which counts nothing; the worker's
    // copy of the settings now sends it through the controlled one, which counts the limit.
    await until(schema, refs[5]!.id, 'succeeded');
    await waitFor(
      'two of the limited jobs to start',
      () => runs.started.filter((id) => limited.includes(id)).length === 2,
    );
    // Two counted and running, and two claimed ahead beside them (no more than the counted ones).
    const states = await sql<{ state: string; n: number }>(
      `SELECT CASE WHEN reserved AND state = 'active' THEN 'ahead' ELSE state END AS state, count(*)::int AS n
         FROM "${schema}".job WHERE queue = 'fl-relimited' GROUP BY 1 ORDER BY 1`,
    );
    expect(states).toEqual([
      { state: 'active', n: 2 },
      { state: 'ahead', n: 2 },
      { state: 'queued', n: 1 },
    ]);
    runs.openAll();
    for (const id of limited) await until(schema, id, 'succeeded');
    expect(runs.peak.get('fl-relimited')).toBe(2);
  });

  it('hands back its buffered jobs as it starts to stop, within the grace period, and another instance runs them', async () => {
    const schema = fresh('flgrace');
    // One slot and five prefetched: the held job keeps five in the buffer. A minute's grace and a
    // minute's lease: while the held job runs, the instance is inside its grace period, and a job
    // that moves was handed back, not rescued.
    const first = await boot(schema, {
      worker: { concurrency: 1, prefetch: 5, lease: 60_000, shutdownGrace: 60_000 },
    });
    const firstRuns = first.get(Runs);
    const firstWorker = first.get(JobWorker).id;
    const [held, ...rest] = await first
      .get(JobQueue)
      .enqueueMany([
        { job: Work, payload: { hold: true }, options: { queue: 'fl-grace', priority: 10 } },
        ...Array.from({ length: 5 }, () => ({ job: Work, payload: {}, options: { queue: 'fl-grace' } })),
      ]);
    const buffered = rest.map((r) => r.id);
    await waitFor('one job running and five in the buffer, all six claimed', async () => {
      const claimed = await sql(`SELECT 1 FROM "${schema}".job WHERE state = 'active' AND worker_id = $1`, [
        firstWorker,
      ]);
      return firstRuns.running.has(held!.id) && claimed.length === 6;
    });
    const second = await boot(schema, { worker: { concurrency: 5 } });
    const secondWorker = second.get(JobWorker).id;
    let closed = false;
    const stopped = closing(first).then(() => (closed = true));
    try {
      await waitFor('the second instance to run the five, or the first to have stopped', async () => {
        if (closed) return true;
        const done = await sql(`SELECT 1 FROM "${schema}".job WHERE id = ANY($1::uuid[]) AND state = 'succeeded'`, [
          buffered,
        ]);
        return done.length === 5;
      });
      // Still inside its grace period: the held job runs on, its signal untouched.
      expect(closed).toBe(false);
      expect(firstRuns.running.has(held!.id)).toBe(true);
      expect(firstRuns.aborted.size).toBe(0);
      expect(await row(schema, held!.id)).toMatchObject({ state: 'active', worker_id: firstWorker });
      // Handed back unspent: one attempt each, on the second instance.
      for (const id of buffered) {
        expect((await second.get(JobQueue).get(id))!.executions.map((e) => [e.attempt, e.state, e.workerId])).toEqual([
          [1, 'succeeded', secondWorker],
        ]);
      }
    } finally {
      firstRuns.release(held!.id);
      await stopped;
    }
    expect(firstRuns.started.filter((id) => buffered.includes(id))).toEqual([]);
    expect(await row(schema, held!.id)).toMatchObject({ state: 'succeeded', worker_id: firstWorker });
  });
});
