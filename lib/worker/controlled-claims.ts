import type { ClaimedJob, FinishedAttempt } from '../model/index.js';
import type { ClaimRequest, ClaimResult, ClaimStorage } from '../storage/jobs/claim/claim-storage.interface.js';
import type { AdaptivePrefetch } from './adaptive-prefetch.js';
import type { ClaimOnFinish } from './completion-batcher.js';
import type { QueueControls } from './queue-controls.js';

/** How much local work a grouped (or serial, or rate-limited) queue may hold beyond its running jobs. */
const GROUPED_HORIZON_MS = 10;

/** What ControlledClaims needs of the worker. */
export interface ControlledClaimsHost {
  /** Look for work again. */
  poke(): void;
  /** Slots with nothing running or waiting to run in them. */
  idleSlots(): number;
  /** A claim of `queue` for this worker, or null when it is not taking work. */
  request(queue: string, limit: number): ClaimRequest | null;
  /** Jobs a claim riding on an outcome write got, to run (or hand back). */
  deliver(jobs: ClaimedJob[]): void;
}

/**
 * The worker's side of the controlled claim (limits, groups, serial keys,
 * rate limits): how many of a queue's jobs to ask for, when asking is
 * pointless, and when to look again.
 */
export class ControlledClaims implements ClaimOnFinish {
  /** Claimed jobs of controlled queues, by id, with their queue: their end frees what a limit counted. */
  private readonly held = new Map<string, string>();
  /**
   * Per queue: jobs that ended here and whose outcome is not written yet.
   * Kept for every controlled queue, read for limited ones only: a queue's
   * settings may change between a job's end and its write.
   */
  private readonly unwritten = new Map<string, number>();
  /** Per limited queue, the jobs a claim riding on an outcome write asked for: one ride at a time per queue. */
  private readonly riding = new Map<string, number>();
  /** Jobs whose outcome write claimed for their queue: that claim was the look their end calls for. */
  private readonly answered = new Set<string>();
  private wakeTimer: NodeJS.Timeout | null = null;
  private wakeAt = 0;

  constructor(
    private readonly storage: ClaimStorage,
    private readonly controls: QueueControls,
    private readonly prefetch: AdaptivePrefetch,
    private readonly host: ControlledClaimsHost,
  ) {}

  /**
   * A limited queue's jobs count against its limits from their claim on,
   * so this worker claims no more of them than it can start now: a
   * prefetched job would hold a slot another instance could use. Other
   * controlled queues (groups, serial keys, a rate) may have more waiting
   * here: what the slots run in GROUPED_HORIZON_MS at the current rate, at
   * least as many as the slots. Enough to claim in batches (a grouped claim
   * of 80 costs ~1.8 ms in pgbench, twice a plain one), few enough that
   * a group arriving late waits behind no more than that horizon of local
   * work. A deeper one drains a grouped queue faster (30 ms: about +20% on
   * 100 groups; 40 ms: +50% on a slower machine) but lets a tenant arriving
   * behind another's backlog of fast jobs wait behind that much:
   * flow-groups-fast.e2e fails at 30 ms. An extra claim on the newcomer's
   * NOTIFY did not rescue 40 ms: a burst of fast jobs runs before the
   * notification is even read, and the chain (enqueue, NOTIFY, claim) still
   * let 80-200 of the other tenant's jobs through.
   *
   * While a job of a limited queue has ended here but its outcome is not
   * written, its slot is still taken in the database: a claim now would
   * hold the queue's lock only to find no room. The write claims for the
   * queue itself (request below), or its end asks again.
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

  /**
   * A limited queue's slots come free as its outcomes are written, so the
   * claim that refills them rides in the same statement: one round trip per
   * turn of a slot instead of a write and then a claim. Only when this write
   * carries every unwritten outcome of the queue here (otherwise a later
   * write frees more and claims then), and for no more than the slots idle
   * here now.
   */
  request(attempts: readonly FinishedAttempt[]): ClaimRequest | null {
    const free = this.host.idleSlots();
    if (free <= 0) return null;
    const inWrite = new Map<string, number>();
    for (const { job } of attempts) {
      const queue = this.held.get(job.id);
      if (queue !== undefined) inWrite.set(queue, (inWrite.get(queue) ?? 0) + 1);
    }
    for (const [queue, n] of inWrite) {
      if (this.riding.has(queue) || !this.controls.limited(queue) || this.controls.paused(queue)) continue;
      if (n !== this.unwritten.get(queue)) continue;
      const request = this.host.request(queue, free);
      if (!request) return null;
      this.riding.set(queue, free);
      return request;
    }
    return null;
  }

  /** Jobs asked for by claims riding on outcome writes, not answered yet: the worker counts them as held. */
  get incoming(): number {
    let n = 0;
    for (const asked of this.riding.values()) n += asked;
    return n;
  }

  /** A ride's answer (null: the write failed): the jobs are held, and handed to the worker. */
  answer(request: ClaimRequest, attempts: readonly FinishedAttempt[], result: ClaimResult | null): void {
    this.riding.delete(request.queue);
    if (!result) return;
    for (const { job } of attempts) if (this.held.get(job.id) === request.queue) this.answered.add(job.id);
    if (result.waitMs !== null) this.wakeIn(result.waitMs);
    for (const job of result.jobs) this.held.set(job.id, job.queue);
    this.host.deliver(result.jobs);
  }

  /** A controlled job ended here; its outcome is on its way to the database. */
  ended(id: string): void {
    const queue = this.held.get(id);
    if (queue !== undefined) this.unwritten.set(queue, (this.unwritten.get(queue) ?? 0) + 1);
  }

  /**
   * The job's outcome is written (or will not be, here): what it held is
   * free in the database. Returns whether its queue is worth another look:
   * it was a controlled job, and its write did not claim for the queue.
   */
  released(id: string, outcomeHandedIn: boolean): boolean {
    const queue = this.held.get(id);
    if (queue === undefined) return false;
    this.held.delete(id);
    const answered = this.answered.delete(id);
    if (outcomeHandedIn) {
      const left = (this.unwritten.get(queue) ?? 1) - 1;
      if (left > 0) this.unwritten.set(queue, left);
      else this.unwritten.delete(queue);
    }
    return !answered;
  }

  /** A rate limit said when the next job may start: look again then. */
  private wakeIn(ms: number): void {
    const at = Date.now() + ms;
    if (this.wakeTimer && this.wakeAt <= at) return;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeAt = at;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = null;
      this.host.poke();
    }, ms);
    this.wakeTimer.unref();
  }

  stop(): void {
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
  }
}
