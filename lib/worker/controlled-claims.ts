import type { ClaimedJob } from '../model/index.js';
import type { ClaimRequest, JobStorage } from '../storage/jobs/job-storage.interface.js';
import type { AdaptivePrefetch } from './adaptive-prefetch.js';
import type { QueueControls } from './queue-controls.js';

/** How much local work a grouped (or serial, or rate-limited) queue may hold beyond its running jobs. */
const GROUPED_HORIZON_MS = 10;

/**
 * The worker's side of the controlled claim (limits, groups, serial keys,
 * rate limits): how many of a queue's jobs to ask for, when asking is
 * pointless, and when to look again.
 */
export class ControlledClaims {
  /** Claimed jobs of controlled queues, by id, with their queue: their end frees what a limit counted. */
  private readonly held = new Map<string, string>();
  /**
   * Per queue: jobs that ended here and whose outcome is not written yet.
   * Kept for every controlled queue, read for limited ones only: a queue's
   * settings may change between a job's end and its write.
   */
  private readonly unwritten = new Map<string, number>();
  private wakeTimer: NodeJS.Timeout | null = null;
  private wakeAt = 0;

  constructor(
    private readonly storage: JobStorage,
    private readonly controls: QueueControls,
    private readonly prefetch: AdaptivePrefetch,
    /** Asks the worker to look for work again. */
    private readonly poke: () => void,
  ) {}

  /**
   * A limited queue's jobs count against its limits from their claim on,
   * so this worker claims no more of them than it can start now: a
   * prefetched job would hold a slot another instance could use. Other
   * controlled queues (groups, serial keys, a rate) may have more waiting
   * here: what the slots run in GROUPED_HORIZON_MS at the current rate, at
   * least as many as the slots. Enough to claim in batches (a claim costs
   * ~1.5 ms plus ~0.06 ms a job: at 20 jobs a claim, groups drained at 35%
   * of a plain drain, at 60 near 60%), few enough that a group arriving
   * late waits behind no more than that horizon of local work.
   *
   * While a job of a limited queue has ended here but its outcome is not
   * written, its slot is still taken in the database: a claim now would
   * hold the queue's lock only to find no room. The write's end asks again.
   */
  async claim(request: ClaimRequest, concurrency: number, held: number): Promise<ClaimedJob[]> {
    const limited = this.controls.limited(request.queue);
    if (limited && (this.unwritten.get(request.queue) ?? 0) > 0) return [];
    const depth = limited ? 0 : Math.max(concurrency, this.prefetch.jobsWithin(GROUPED_HORIZON_MS));
    const room = concurrency + depth - held;
    if (room <= 0) return [];
    const { jobs, waitMs } = await this.storage.claimControlled({ ...request, limit: Math.min(request.limit, room) });
    if (waitMs !== null) this.wakeIn(waitMs);
    for (const job of jobs) this.held.set(job.id, job.queue);
    return jobs;
  }

  /** A controlled job ended here; its outcome is on its way to the database. */
  ended(id: string): void {
    const queue = this.held.get(id);
    if (queue !== undefined) this.unwritten.set(queue, (this.unwritten.get(queue) ?? 0) + 1);
  }

  /**
   * The job's outcome is written (or will not be, here): what it held is
   * free in the database. Returns whether it was a controlled job, whose
   * queue is then worth another look.
   */
  released(id: string, outcomeHandedIn: boolean): boolean {
    const queue = this.held.get(id);
    if (queue === undefined) return false;
    this.held.delete(id);
    if (outcomeHandedIn) {
      const left = (this.unwritten.get(queue) ?? 1) - 1;
      if (left > 0) this.unwritten.set(queue, left);
      else this.unwritten.delete(queue);
    }
    return true;
  }

  /** A rate limit said when the next job may start: look again then. */
  private wakeIn(ms: number): void {
    const at = Date.now() + ms;
    if (this.wakeTimer && this.wakeAt <= at) return;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeAt = at;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = null;
      this.poke();
    }, ms);
    this.wakeTimer.unref();
  }

  stop(): void {
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
  }
}
