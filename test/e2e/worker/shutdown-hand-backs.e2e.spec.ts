import { randomBytes } from 'node:crypto';
import { Injectable, type INestApplication, type Type } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { Job, JobQueue, type JobContext, type JobHandler, type JobsModuleOptions } from 'nestjs-durable-jobs';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import { RATE_START_LAG_MS } from '../../../lib/model/index.js';
import type { OutcomeStorage } from '../../../lib/storage/jobs/outcomes/outcome-storage.interface.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { workerStorage } from '../../support/job-storage.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { sleep, waitFor } from '../../support/wait.js';

// A worker gives some claimed jobs back without starting them, their attempt unspent: a
// rate-limited one that missed its start, one sealed with a key this instance lacks. Such a
// hand-back may still be on its way to the database when close() is called: the worker must wait
// for it before it closes its connections, or the job stays leased to a stopped worker until the
// rescue takes it back with an attempt spent.

/** The jobs that started here: none of these tests' jobs may. */
@Injectable()
class Started {
  readonly ids = new Set<string>();
}

@Job('hb-rated')
class Rated implements JobHandler<Record<string, never>> {
  constructor(private readonly started: Started) {}
  run(_: Record<string, never>, ctx: JobContext): void {
    this.started.ids.add(ctx.jobId);
  }
}

@Job('hb-sealed', { encrypted: true })
class Sealed implements JobHandler<Record<string, never>> {
  constructor(private readonly started: Started) {}
  run(_: Record<string, never>, ctx: JobContext): void {
    this.started.ids.add(ctx.jobId);
  }
}

const key = () => randomBytes(32).toString('base64');
const schemas: string[] = [];
const apps: INestApplication[] = [];

afterAll(async () => {
  for (const app of apps) await app.close().catch(() => undefined);
  await dropSchemas(...schemas);
});

function newSchema(prefix: string): string {
  const schema = uniqueSchema(prefix);
  schemas.push(schema);
  return schema;
}

/**
 * A worker on `schema` whose hand-backs of jobs wait for the test before they write (fault
 * injection on the real storage, wrapped before the worker starts), and what happened, in order.
 * `release` lets the held hand-back write.
 */
async function startHoldingHandBacks(
  schema: string,
  options: Partial<JobsModuleOptions>,
  handler: Type,
  wrap: (ref: TestingModule) => void = () => undefined,
) {
  const events: string[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let connectionsClosing!: () => void;
  const closingConnections = new Promise<void>((resolve) => (connectionsClosing = resolve));
  const app = await startJobsApp(
    schema,
    { ...options, worker: { pollInterval: 100 } },
    { providers: [Started, handler] },
    (ref) => {
      wrap(ref);
      const storage = workerStorage(ref);
      const handBack = storage.outcomes.handBack.bind(storage.outcomes);
      // Shutdown also hands back what it holds unstarted, an empty list here: that one goes through.
      storage.outcomes.handBack = async (...args: Parameters<OutcomeStorage['handBack']>) => {
        if (args[1].length === 0) return handBack(...args);
        events.push('hand-back sent');
        await released;
        await handBack(...args);
        events.push('hand-back written');
      };
      const closeConnections = storage.claims.closeWorkerConnections.bind(storage.claims);
      storage.claims.closeWorkerConnections = () => {
        events.push('connections closed');
        connectionsClosing();
        return closeConnections();
      };
    },
  );
  apps.push(app);
  return { app, events, release, closingConnections };
}

/** close() while the hand-back is held; resolves once the app has closed. */
async function closeDuringHandBack(held: Awaited<ReturnType<typeof startHoldingHandBacks>>): Promise<void> {
  await waitFor('a job to be handed back', () => held.events.includes('hand-back sent'));
  const closing = held.app.close();
  apps.splice(apps.indexOf(held.app), 1);
  // A worker that waits for the hand-back cannot close its connections until the hand-back has
  // written: the timer lets it write after a while, so such a worker passes however slow the
  // machine. One that does not wait closes them first (within that while, as it takes a few round
  // trips), and the hand-back is let go then, too late: the order of the events tells the two apart.
  void Promise.race([held.closingConnections, sleep(1_000)]).then(held.release);
  await closing;
}

/** The job's row, and how many execution rows it has. */
async function rowOf(schema: string, id: string) {
  const [row] = await sql(
    `SELECT j.state, j.attempt, j.worker_id, j.lease_expires_at,
            (SELECT count(*)::int FROM "${schema}".job_execution e WHERE e.job_id = j.id) AS executions
       FROM "${schema}".job j WHERE j.id = $1`,
    [id],
  );
  return row!;
}

const unspent = { state: 'queued', attempt: 0, worker_id: null, lease_expires_at: null, executions: 0 };

describe('close() during a hand-back', () => {
  it('of a rate-limited job that missed its start: written before the worker closes its connections, the job queued, its attempt unspent', async () => {
    const schema = newSchema('hb_rated');
    const clock = new ManualClock(new Date('2026-06-01T08:00:00Z'));
    // The claim of the job answers once its start deadline has passed (the clock moves past the
    // start lag meanwhile): the worker hands the job back instead of starting it.
    const held = await startHoldingHandBacks(
      schema,
      { clock, queues: { rated: { rateLimit: { max: 100, per: 60_000 } } } },
      Rated,
      (ref) => {
        const { claims } = workerStorage(ref);
        const claimControlled = claims.claimControlled.bind(claims);
        claims.claimControlled = async (request) => {
          const result = await claimControlled(request);
          if (result.jobs.length) clock.advance(RATE_START_LAG_MS + 1);
          return result;
        };
      },
    );
    const { id } = await held.app.get(JobQueue).enqueue(Rated, {}, { queue: 'rated' });
    await closeDuringHandBack(held);
    expect(held.events).toEqual(['hand-back sent', 'hand-back written', 'connections closed']);
    expect(held.app.get(Started).ids.has(id)).toBe(false);
    expect(await rowOf(schema, id)).toEqual(unspent);
  });

  it('of a job sealed with a key the instance lacks: written before the worker closes its connections, the job queued, its attempt unspent', async () => {
    const schema = newSchema('hb_sealed');
    const k1 = key();
    // Sealed with k1 by an instance that only enqueues; the worker has k2 only.
    const producer = await startJobsApp(
      schema,
      { encryption: { keys: { k1 }, current: 'k1' }, worker: { enabled: false } },
      { providers: [Started, Sealed] },
    );
    apps.push(producer);
    const held = await startHoldingHandBacks(schema, { encryption: { keys: { k2: key() }, current: 'k2' } }, Sealed);
    const { id } = await producer.get(JobQueue).enqueue(Sealed, {});
    await closeDuringHandBack(held);
    expect(held.events).toEqual(['hand-back sent', 'hand-back written', 'connections closed']);
    expect(held.app.get(Started).ids.has(id)).toBe(false);
    expect(await rowOf(schema, id)).toEqual(unspent);
  });
});
