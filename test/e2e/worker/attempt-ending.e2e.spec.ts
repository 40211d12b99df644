import { Injectable, Logger, type INestApplication } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { Job, JobQueue, type JobHandler } from 'nestjs-durable-jobs';
import { JobRegistry } from '../../../lib/discovery/job-registry.js';
import {
  Clock,
  JOB_ROW_BUILDER,
  JOB_WRITE_RULES,
  JobEvents,
  JobTracing,
  type ClaimedJob,
  type FinishedAttempt,
} from '../../../lib/model/index.js';
import { ENQUEUE_STORAGE } from '../../../lib/storage/jobs/enqueue/enqueue-storage.interface.js';
import { SIGNAL_STORAGE } from '../../../lib/storage/jobs/signals/signal-storage.interface.js';
import { STEP_STORAGE } from '../../../lib/storage/jobs/step-storage.interface.js';
import { WORKFLOW_STORAGE } from '../../../lib/storage/workflows/workflow-storage.interface.js';
import { AttemptEnding, type AttemptSlots } from '../../../lib/worker/attempt-ending.js';
import { AttemptRunner } from '../../../lib/worker/attempt-runner.service.js';
import { CompletionBatcher } from '../../../lib/worker/completion-batcher.js';
import { FailureHooks } from '../../../lib/worker/failure-hooks.service.js';
import { ReadersWriterLock } from '../../../lib/worker/readers-writer-lock.js';
import type { RunResult } from '../../../lib/worker/running-job.js';
import { WORKER_OPTIONS } from '../../../lib/worker/worker-options.js';
import { dropSchemas, sql, takeLeaseAway, uniqueSchema } from '../../support/database.js';
import { workerStorage, type WorkerStorage } from '../../support/job-storage.js';
import { startJobsApp } from '../../support/jobs-app.js';

/**
 * AttemptEnding on the smallest real app (its worker disabled): jobs are enqueued and claimed
 * through the real statements, run by a real AttemptRunner, and ended through a real
 * CompletionBatcher. The slots are the test's: they record when the ending asks them, beside the
 * write's start and end and what listeners hear, so each test reads the order the phases kept.
 */
const schema = uniqueSchema('attempt_ending');
const WORKER = 'ending-worker';
const LEASE = 30_000;
let app: INestApplication;
let storage: WorkerStorage;
let log: string[] = [];

@Injectable()
class HookCalls {
  /** The job's state in the database as its onFailure hook saw it. */
  readonly seen: string[] = [];
}

@Job('ae-works')
class Works implements JobHandler {
  run(): { ok: true } {
    return { ok: true };
  }
}

@Job('ae-fails', { maxAttempts: 1 })
class Fails implements JobHandler {
  constructor(private readonly calls: HookCalls) {}
  run(): never {
    throw new Error('broken for good');
  }
  async onFailure(_payload: unknown, _error: Error, ctx: { jobId: string }): Promise<void> {
    const [row] = await sql<{ state: string }>(`SELECT state FROM "${schema}".job WHERE id = $1`, [ctx.jobId]);
    this.calls.seen.push(row!.state);
  }
}

beforeAll(async () => {
  app = await startJobsApp(
    schema,
    { worker: { enabled: false, lease: LEASE } },
    { providers: [HookCalls, Works, Fails] },
  );
  storage = workerStorage(app);
  app.get(FailureHooks).start(WORKER);
});

afterAll(async () => {
  await app.get(FailureHooks).stop(5_000);
  await app?.close();
  await dropSchemas(schema);
});

beforeEach(() => {
  log = [];
});

/** Slots that note each call; `successor` is what successorFor hands back. */
function recordingSlots(successor?: ClaimedJob): AttemptSlots {
  return {
    successorFor: (job) => {
      log.push(`successorFor:${job.name}`);
      return successor;
    },
    attemptEnded: (job, withOutcome) => void log.push(`attemptEnded:${job.name}:${withOutcome}`),
    jobReleased: (job) => void log.push(`jobReleased:${job.name}`),
  };
}

interface Parts {
  ending: AttemptEnding;
  runner: AttemptRunner;
  batcher: CompletionBatcher;
  written: FinishedAttempt[];
}

/** The parts a worker binds, with listeners and the batcher's writes noted in the log. */
function parts(slots: AttemptSlots | null): Parts {
  const events = new JobEvents();
  events.on(['succeeded', 'failed', 'stalled', 'retrying'], (e) => void log.push(`heard:${e.event}`));
  const runner = new AttemptRunner(
    app.get(JobRegistry),
    app.get(ModuleRef),
    app.get(Clock),
    app.get(JOB_ROW_BUILDER),
    storage.outcomes,
    app.get(WORKFLOW_STORAGE),
    app.get(STEP_STORAGE),
    app.get(SIGNAL_STORAGE),
    app.get(ENQUEUE_STORAGE),
    app.get(JOB_WRITE_RULES),
    app.get(WORKER_OPTIONS),
    events,
    app.get(JobTracing),
  );
  runner.prepare(WORKER);
  const batcher = new CompletionBatcher(
    storage.outcomes,
    app.get(WORKFLOW_STORAGE),
    WORKER,
    app.get(Clock),
    new ReadersWriterLock(),
    LEASE,
  );
  const written: FinishedAttempt[] = [];
  const add = batcher.add.bind(batcher);
  batcher.add = async (attempt) => {
    log.push(`write>${attempt.job.name}`);
    written.push(attempt);
    const applied = await add(attempt);
    log.push(`write<${String(applied)}`);
    return applied;
  };
  const ending = new AttemptEnding({
    workerId: WORKER,
    attempts: runner,
    batcher,
    hooks: app.get(FailureHooks),
    outcomes: storage.outcomes,
    clock: app.get(Clock),
    logger: new Logger('AttemptEndingSpec'),
    slots,
  });
  return { ending, runner, batcher, written };
}

let queues = 0;
/** Enqueues `count` jobs of `name` in a queue of their own, and claims them for WORKER. */
async function claimed(name: string, count = 1): Promise<ClaimedJob[]> {
  const queue = `ae-${++queues}`;
  for (let i = 0; i < count; i++) await app.get(JobQueue).enqueue(name, { i }, { queue });
  return storage.claims.claim({
    workerId: WORKER,
    queue,
    names: [name],
    limit: count,
    now: app.get(Clock).now(),
    leaseMs: LEASE,
  });
}

async function stateOf(id: string): Promise<string> {
  const [row] = await sql<{ state: string }>(`SELECT state FROM "${schema}".job WHERE id = $1`, [id]);
  return row!.state;
}

/** Runs the claimed job's attempt with the runner of `p`. */
async function ran(
  p: Parts,
  job: ClaimedJob,
): Promise<{ run: ReturnType<AttemptRunner['create']>; result: RunResult }> {
  const run = p.runner.create(job);
  return { run, result: await p.runner.run(run) };
}

describe('AttemptEnding', () => {
  it('passes the slot on before freeing it, frees it before the write, tells listeners after the write, and releases last', async () => {
    const [job, ahead] = await claimed('ae-works', 2);
    const p = parts(recordingSlots(ahead));
    const { run, result } = await ran(p, job!);
    const ended = await p.ending.end(run, result, true);
    expect(ended).toEqual({ outcome: { kind: 'succeeded', result: { ok: true } }, applied: true });
    expect(log).toEqual([
      'successorFor:ae-works',
      'attemptEnded:ae-works:true',
      'write>ae-works',
      'write<true',
      'heard:succeeded',
      'jobReleased:ae-works',
    ]);
    // The success's write carries the job that started in its slot.
    expect(p.written).toEqual([expect.objectContaining({ successor: ahead!.id })]);
    expect(await stateOf(job!.id)).toBe('succeeded');
  });

  it('holds the job’s lease while its outcome is unwritten, and a withdrawal drops it from the held jobs', async () => {
    const [job] = await claimed('ae-works');
    const p = parts(recordingSlots());
    let heldDuringWrite: string[] = [];
    const add = p.batcher.add.bind(p.batcher);
    p.batcher.add = (attempt) => {
      heldDuringWrite = [...p.ending.unwritten()].map((j) => j.id);
      p.ending.withdraw(attempt.job.id);
      return add(attempt);
    };
    const { run, result } = await ran(p, job!);
    await p.ending.end(run, result, true);
    expect(heldDuringWrite).toEqual([job!.id]);
    expect([...p.ending.unwritten()]).toEqual([]);
    expect(p.ending.pending).toBe(0);
  });

  it('runs the failure hook only after the failure is written, so the hook reads the job failed', async () => {
    const [job] = await claimed('ae-fails');
    const p = parts(recordingSlots());
    const { run, result } = await ran(p, job!);
    const ended = await p.ending.end(run, result, true);
    expect(ended.outcome).toMatchObject({ kind: 'failed', hook: true });
    expect(log.indexOf('write<true')).toBeLessThan(log.indexOf('heard:failed'));
    await app.get(FailureHooks).idle();
    expect(app.get(HookCalls).seen).toEqual(['failed']);
  });

  it('with the lease taken, the write is refused: listeners hear a stall, no hook runs, and the slot is still released', async () => {
    const [job] = await claimed('ae-fails');
    const p = parts(recordingSlots());
    const { run, result } = await ran(p, job!);
    await takeLeaseAway(schema, job!.id);
    const before = app.get(HookCalls).seen.length;
    const ended = await p.ending.end(run, result, true);
    expect(ended.applied).toBe(false);
    expect(log).toEqual([
      // A failure passes no slot on: only a plain success does.
      'attemptEnded:ae-fails:true',
      'write>ae-fails',
      'write<false',
      'heard:stalled',
      'jobReleased:ae-fails',
    ]);
    await app.get(FailureHooks).idle();
    expect(app.get(HookCalls).seen.length).toBe(before);
    expect(await stateOf(job!.id)).toBe('queued');
  });

  it('an attempt superseded by a new claim of its job writes nothing and frees its slot without an outcome', async () => {
    const [job] = await claimed('ae-works');
    const p = parts(recordingSlots());
    const { run, result } = await ran(p, job!);
    const ended = await p.ending.end(run, result, false);
    expect(ended).toEqual({ outcome: { kind: 'succeeded', result: { ok: true } }, applied: null });
    expect(log).toEqual(['attemptEnded:ae-works:false', 'heard:stalled', 'jobReleased:ae-works']);
    expect(p.written).toEqual([]);
    expect(await stateOf(job!.id)).toBe('active');
  });

  it('an attempt stopped without an outcome frees its slot and writes nothing', async () => {
    const [job] = await claimed('ae-works');
    const p = parts(recordingSlots());
    const run = p.runner.create(job!);
    const result: RunResult = {
      outcome: null,
      reason: 'shutdown',
      error: { name: 'WorkerShutdownError', message: 'x' },
    };
    const ended = await p.ending.end(run, result, true);
    expect(ended).toEqual({ outcome: null, applied: null });
    expect(log).toEqual(['attemptEnded:ae-works:false', 'jobReleased:ae-works']);
  });

  it('without slots (the testing kit’s drain) writes and tells the same, in the same order', async () => {
    const [job] = await claimed('ae-works');
    const p = parts(null);
    const { run, result } = await ran(p, job!);
    const ended = await p.ending.end(run, result, true);
    expect(ended.applied).toBe(true);
    expect(log).toEqual(['write>ae-works', 'write<true', 'heard:succeeded']);
    expect(await stateOf(job!.id)).toBe('succeeded');
  });
});
