import type { ClaimedJob, FinishedAttempt } from '../../model/index.js';
import type { AdaptivePrefetch } from './adaptive-prefetch.js';
import type { QueueSettings } from './queue-settings.js';

/** How much local work a grouped (or serial, or rate-limited) queue may hold beyond its running jobs. */
const GROUPED_HORIZON_MS = 10;

/**
 * The worker's counts for the controlled claim (limits, groups, serial
 * keys, rate limits): which claimed jobs belong to controlled queues, which
 * of their outcomes are not written yet, and which outcome writes claim for
 * their queue. From them it says how many of a queue's jobs to ask for, and
 * whether a job's end calls for another look.
 */
export class ControlledLedger {
  /**
   * Claimed jobs of controlled queues, by id: their end frees what a limit counted. A job this
   * worker claims again (its earlier claim's lease ran out) is held by the latest claim only:
   * the job holds one slot, and the earlier attempt's end frees nothing.
   */
  private readonly held = new Map<string, ClaimedJob>();
  /**
   * Per queue: jobs that ended here and whose outcome is not written yet.
   * Kept for every controlled queue, read for limited ones only: a queue's
   * settings may change between a job's end and its write.
   */
  private readonly unwritten = new Map<string, number>();
  /** Per limited queue, the jobs a claim on an outcome write asked for: one such claim at a time per queue. */
  private readonly claimsOnOutcomeWrites = new Map<string, number>();
  /** The jobs counted in `unwritten`, until their release. */
  private readonly ending = new Set<ClaimedJob>();
  /** Jobs whose outcome write claimed for their queue: that claim was the look their end calls for. */
  private readonly endsAnsweredByWrite = new Set<ClaimedJob>();

  constructor(
    private readonly settings: QueueSettings,
    private readonly prefetch: AdaptivePrefetch,
  ) {}

  /**
   * How many of the queue's jobs a claim may ask for now (none when 0 or
   * less), with `local` jobs here or on their way and `concurrency` slots.
   *
   * A limited queue's jobs count against its limits from their claim on,
   * so this worker claims no more of them than it can start now: a
   * prefetched job would hold a slot another instance could use. (Jobs
   * claimed ahead are not counted, hence not asked for here: see the
   * routine's claimAhead.) Other
   * controlled queues (groups, serial keys, a rate) may have more waiting
   * here: what the slots run in GROUPED_HORIZON_MS at the current rate, at
   * least as many as the slots. Enough to claim in batches (a grouped claim
   * of 80 costs ~1.8 ms in pgbench, twice a plain one), few enough that
   * a group arriving late waits behind no more than that horizon of local
   * work. A deeper one drains a grouped queue faster (30 ms: about +20% on
   * 100 groups; 40 ms: +50% on a slower machine) but lets a tenant arriving
   * behind another's backlog of fast jobs wait behind that much (in
   * flow-groups-fast.e2e on a slower machine, 216-244 of the other's jobs at
   * 30 ms against 54-116 at 10 ms; that test's bound catches a plain queue's
   * depth, not 30 ms, see there). An extra claim on
   * the newcomer's NOTIFY did not rescue 40 ms: a burst of fast jobs runs
   * before the notification is even read.
   *
   * A rate-limited queue's jobs must start within RATE_START_LAG_MS of
   * their claim (StartDeadlines), so it gets no depth either: a job waiting
   * here for a slot would be handed back.
   *
   * While a job of a limited queue has ended here but its outcome is not
   * written, its slot is still taken in the database: a claim now would
   * hold the queue's lock only to find no room. The write claims for the
   * queue itself (queueToClaimOnWrite), or its end asks again.
   */
  room(queue: string, concurrency: number, local: number): number {
    const limited = this.settings.limited(queue);
    if (limited && (this.unwritten.get(queue) ?? 0) > 0) return 0;
    const shallow = limited || this.settings.rated(queue);
    const depth = shallow ? 0 : Math.max(concurrency, this.prefetch.jobsWithin(GROUPED_HORIZON_MS));
    return concurrency + depth - local;
  }

  /** Whether `job` is held here under this claim of it (not one claimed again since). */
  holds(job: ClaimedJob): boolean {
    return this.held.get(job.id) === job;
  }

  /** Jobs a controlled claim got: their ends free what their queue's limits counted. */
  claimed(jobs: readonly ClaimedJob[]): void {
    for (const job of jobs) this.held.set(job.id, job);
  }

  /**
   * A limited queue's slots come free as its outcomes are written, so the
   * claim that refills them goes in the same statement: one round trip per
   * turn of a slot instead of a write and then a claim. Only when this write
   * carries every unwritten outcome of the queue here (otherwise a later
   * write frees more and claims then), and for no more than the `idle` slots
   * here now, nor the queue's `room` under this instance's cap; with no idle
   * slot, where a job claimed ahead started in the place of one of these
   * successes, for the next ones ahead only. Returns the queue to claim for,
   * counted as asked for until writeAnswered.
   */
  queueToClaimOnWrite(
    attempts: readonly FinishedAttempt[],
    idle: number,
    room: (queue: string) => number = () => Infinity,
  ): string | null {
    const inWrite = new Map<string, number>();
    let followed: Set<string> | undefined;
    for (const { job, successor } of attempts) {
      if (this.ending.has(job)) inWrite.set(job.queue, (inWrite.get(job.queue) ?? 0) + 1);
      if (successor) (followed ??= new Set()).add(job.queue);
    }
    for (const [queue, n] of inWrite) {
      const free = room(queue);
      if (free <= 0 || (idle <= 0 && !followed?.has(queue))) continue;
      const asked = this.claimsOnOutcomeWrites.has(queue);
      if (asked || !this.settings.limited(queue) || this.settings.paused(queue)) continue;
      if (n !== this.unwritten.get(queue)) continue;
      this.claimsOnOutcomeWrites.set(queue, Math.min(idle, free));
      return queue;
    }
    return null;
  }

  /** Jobs asked for by claims on outcome writes, not answered yet: the worker counts them as held. */
  get incoming(): number {
    let n = 0;
    for (const asked of this.claimsOnOutcomeWrites.values()) n += asked;
    return n;
  }

  /** A claim on an outcome write answered with `claimed` (null: the write failed, nothing was claimed). */
  writeAnswered(queue: string, attempts: readonly FinishedAttempt[], claimed: readonly ClaimedJob[] | null): void {
    this.claimsOnOutcomeWrites.delete(queue);
    if (!claimed) return;
    for (const { job } of attempts) {
      if (job.queue === queue && this.held.get(job.id) === job) this.endsAnsweredByWrite.add(job);
    }
    this.claimed(claimed);
  }

  /** A controlled job ended here; its outcome is on its way to the database. */
  ended(job: ClaimedJob): void {
    if (this.held.get(job.id) !== job) return;
    this.ending.add(job);
    this.unwritten.set(job.queue, (this.unwritten.get(job.queue) ?? 0) + 1);
  }

  /**
   * The job's outcome is written (or will not be, here): what it held is
   * free in the database. Returns whether its queue is worth another look:
   * it was a controlled job, held by this claim of it (not one claimed
   * again since), and its write did not claim for the queue.
   */
  released(job: ClaimedJob): boolean {
    if (this.ending.delete(job)) {
      const left = (this.unwritten.get(job.queue) ?? 1) - 1;
      if (left > 0) this.unwritten.set(job.queue, left);
      else this.unwritten.delete(job.queue);
    }
    if (this.held.get(job.id) !== job) return false;
    this.held.delete(job.id);
    return !this.endsAnsweredByWrite.delete(job);
  }
}
