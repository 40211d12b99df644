import {
  checkId,
  checkOptions,
  describeValue,
  isTerminal,
  JobsError,
  optionShape,
  type BatchInfo,
  type Clock,
  type JobInfo,
} from '../model/index.js';
import type { JobQueue } from '../queue/job-queue.service.js';
import type { JobsTestingMode } from './jobs-testing-options.interface.js';
import { JobsAssertionError } from './jobs-assertion.error.js';

/** How long `waitFor()` waits, and how often it looks. */
export interface WaitForOptions {
  /** How long to wait before failing, in ms of real time; default 5000 (keep it under the test's own timeout). */
  timeout?: number;
}

type Found = { kind: 'job'; info: JobInfo } | { kind: 'batch'; info: BatchInfo; open: JobInfo[] };

const WAIT_FOR_SHAPE = optionShape<WaitForOptions>({ timeout: true });

const DEFAULT_TIMEOUT = 5_000;
/** First look again after this, doubling up to MAX_INTERVAL: quick jobs end in a few ms. */
const FIRST_INTERVAL = 5;
const MAX_INTERVAL = 100;

/** Waits for jobs and batches to end, reading them through the public API. */
export class JobWaiter {
  constructor(
    private readonly jobs: JobQueue,
    private readonly mode: JobsTestingMode,
    private readonly clock: Clock,
  ) {}

  async waitFor(id: string, options: WaitForOptions): Promise<JobInfo | BatchInfo> {
    return (await this.wait('waitFor', id, options, null)).info;
  }

  async waitForJob(id: string, options: WaitForOptions): Promise<JobInfo> {
    return (await this.wait('waitForJob', id, options, 'job')).info as JobInfo;
  }

  async waitForBatch(id: string, options: WaitForOptions): Promise<BatchInfo> {
    return (await this.wait('waitForBatch', id, options, 'batch')).info as BatchInfo;
  }

  private async wait(call: string, id: string, options: WaitForOptions, kind: Found['kind'] | null): Promise<Found> {
    const where = `JobsTester.${call}(${typeof id === 'string' ? id : describeValue(id)})`;
    checkId(where, id, kind ?? 'job');
    const timeout =
      (checkOptions(where, options, '{ timeout: 5000 }', WAIT_FOR_SHAPE) ?? {}).timeout ?? DEFAULT_TIMEOUT;
    if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0) {
      throw new JobsError(
        `${where}: "timeout" must be a positive number of ms, got ${describeValue(timeout)}. Potential fix: { timeout: 5000 }.`,
      );
    }
    const deadline = Date.now() + timeout;
    let interval = FIRST_INTERVAL;
    for (;;) {
      const found = await this.find(where, id, kind);
      if (ended(found)) return found;
      if (this.mode !== 'worker') {
        throw new JobsAssertionError(
          `${where}: ${this.state(found)}, and in mode '${this.mode}' nothing runs jobs but the JobsTester. ` +
            `Potential fix: await tester.drain() (after advance() for a job due later) before looking, or mode: 'worker' to run a real worker.`,
        );
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new JobsAssertionError(
          `${where}: after ${timeout} ms, ${this.state(found)}. Potential fix: ${this.hint(found)}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(interval, left)));
      interval = Math.min(interval * 2, MAX_INTERVAL);
    }
  }

  private async find(where: string, id: string, kind: Found['kind'] | null): Promise<Found> {
    if (kind !== 'batch') {
      const info = await this.jobs.get(id);
      if (info) return { kind: 'job', info };
    }
    if (kind !== 'job') {
      const info = await this.jobs.batchStatus(id);
      if (info) {
        const graph = await this.jobs.batchGraph(id);
        const openIds = (graph?.nodes ?? []).filter((n) => !isTerminal(n.state)).map((n) => n.id);
        const open: JobInfo[] = [];
        for (const nodeId of openIds) {
          const job = await this.jobs.get(nodeId);
          if (job) open.push(job);
        }
        return { kind: 'batch', info, open };
      }
    }
    const what = kind ?? 'job or batch';
    throw new JobsError(
      `${where}: no ${what} has this id. Potential fix: pass the id that enqueue() or dispatch() returned, in this app (its schema is its own); ` +
        `a job whose type has keep: { succeeded: false } (or retention.succeeded: 0) is deleted as it succeeds, so assert on what it did instead.`,
    );
  }

  private state(found: Found): string {
    if (found.kind === 'job') return `job "${found.info.name}" is ${this.jobState(found.info)}`;
    const { info, open } = found;
    const jobs = open.map((j) => `"${j.name}" ${j.id} ${this.jobState(j)}`).join('; ');
    return `batch${info.name ? ` "${info.name}"` : ''} is ${info.state} with ${open.length} job(s) not ended: ${jobs}`;
  }

  private jobState(job: JobInfo): string {
    const attempt = `attempt ${job.attempt} of ${job.maxAttempts}`;
    if (job.state === 'queued' && job.runAt.getTime() > this.clock.now().getTime()) {
      return `queued for ${job.runAt.toISOString()}, later than the app's clock (${this.clock.now().toISOString()}); ${attempt}`;
    }
    return `${job.state} (${attempt})`;
  }

  private hint(found: Found): string {
    const jobs = found.kind === 'job' ? [found.info] : found.open;
    const now = this.clock.now().getTime();
    if (jobs.some((j) => j.state === 'queued' && j.runAt.getTime() > now)) {
      return 'advance() the ManualClock past the run time (delays and retry backoffs follow it), or wait longer with { timeout }.';
    }
    if (jobs.some((j) => j.state === 'waiting')) {
      return 'it waits on a parent job or batch that has not ended; wait for that first.';
    }
    return "wait longer with { timeout }, or check that a worker serves the job's queue (worker.queues).";
  }
}

function ended(found: Found): boolean {
  return found.kind === 'job' ? isTerminal(found.info.state) : found.info.state !== 'executing' && !found.open.length;
}
