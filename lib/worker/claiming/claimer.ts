import type { ClaimedJob, FinishedAttempt } from '../../model/index.js';
import type { ClaimRequest, ClaimResult } from '../../storage/jobs/claim/claim-storage.interface.js';
import type { ClaimOnOutcomeWrite } from '../completion-batcher.js';
import { AdaptivePrefetch } from './adaptive-prefetch.js';
import { AheadJobs } from './ahead-jobs.js';
import type { ClaimerDeps } from './claimer-deps.js';
import { ClaimRequests } from './claim-requests.js';
import { ControlledLedger } from './controlled-ledger.js';
import { HandBacks } from './hand-backs.js';
import { HandlerTimes } from './handler-times.js';
import { QueueSettings } from './queue-settings.js';
import { QueueSlots } from './queue-slots.js';
import { RateWake } from './rate-wake.js';
import { ServedQueues } from './served-queues.js';
import { StartDeadlines } from './start-deadlines.js';
import { UnstartedJobs } from './unstarted-jobs.js';

/**
 * Claims a worker's jobs: which queues to ask and in what order, through
 * which claim (plain, or controlled for limits, groups, serial keys, rates
 * and pauses), how many, and when to look again. It keeps the claimed jobs
 * that have not started and starts them as slots come free; the worker
 * tells it when attempts end and when their outcomes are written.
 */
export class Claimer implements ClaimOnOutcomeWrite {
  /** The worker's copy of the queues' settings. */
  readonly settings: QueueSettings;
  private readonly served: ServedQueues;
  private readonly prefetch: AdaptivePrefetch;
  private readonly controlled: ControlledLedger;
  private readonly deadlines: StartDeadlines;
  /** Whether a limited queue's claims ask for a share of its limit (ClaimRequest.share). */
  private readonly handlerTimes = new HandlerTimes();
  private readonly handBacks: HandBacks;
  private readonly concurrency: number;
  private readonly unstartedJobs = new UnstartedJobs();
  private readonly ahead: AheadJobs;
  /** This instance's own caps on queues (worker.queues.<name>.concurrency). */
  private readonly slots: QueueSlots;
  private readonly requests: ClaimRequests;
  private running = 0;
  private active = false;
  private passUnderWay = false;
  /** Set when a pass came back short: nothing to do until told or polled. */
  private drained = false;
  /** Plain queues whose last claim came back short: skipped until told of new work or polled. */
  private readonly dry = new Set<string>();
  /** Counts the signals that work may have appeared: a claim's "found nothing" older than one is void. */
  private signals = 0;
  private readonly rateWake = new RateWake(() => this.lookForWork());

  constructor(private readonly deps: ClaimerDeps) {
    this.concurrency = deps.options.concurrency;
    this.served = new ServedQueues(deps.options.queues, deps.claims, deps.logger);
    this.settings = new QueueSettings(deps.queueStorage, deps.logger);
    this.prefetch = new AdaptivePrefetch(this.concurrency);
    this.controlled = new ControlledLedger(this.settings, this.prefetch);
    this.deadlines = new StartDeadlines(deps.clock);
    this.handBacks = new HandBacks(deps, (job) => this.jobReleased(job));
    this.ahead = new AheadJobs(this.unstartedJobs, this.settings, this.controlled, this.handBacks);
    this.slots = new QueueSlots(deps.options.queueSlots, (queue) => this.unstartedJobs.countOf(queue));
    const { settings, prefetch, handlerTimes, slots } = this;
    this.requests = new ClaimRequests({ ...deps, settings, prefetch, handlerTimes, slots });
  }

  /** Starts taking work: the queues of the registered handlers are served from now on. */
  start(): void {
    for (const job of this.deps.registry.all()) this.served.add(job.options.queue);
    this.prefetch.begin();
    this.active = true;
  }

  /** Stops taking work; what is claimed and not started stays, for handBackUnstarted. */
  stop(): void {
    this.active = false;
    this.rateWake.cancel();
  }

  /** Learns the queues that hold work now (when no list is configured). */
  refreshServedQueues(): Promise<void> {
    return this.served.refresh();
  }

  /** A queue was told to have new work: serve it, and look. */
  queueNotified(queue: string): void {
    this.served.add(queue);
    this.slots.freed(queue);
    this.workMayHaveArrived(queue);
  }

  /** Something may be claimable anywhere: ask every queue again. */
  lookForWork(): void {
    this.dry.clear();
    this.workMayHaveArrived();
  }

  /** Work may have appeared (in `queue`, when known): look again, if only after the pass under way. */
  workMayHaveArrived(queue?: string): void {
    this.signals++;
    if (queue !== undefined) this.dry.delete(queue);
    this.drained = false;
    this.topUp();
  }

  /**
   * A job of a limited queue succeeded here: starts one of the queue's jobs
   * claimed ahead in its slot, at once, and returns it, for the success's
   * write to count it (FinishedAttempt.successor). The limit's count stays
   * what it was: the ended job leaves it as the successor enters, in one
   * write. Call before attemptEnded, so the slot is not given to another job
   * first.
   */
  successorFor(job: ClaimedJob): ClaimedJob | undefined {
    if (!this.active) return undefined;
    const next = this.ahead.successorOf(job);
    if (!next) return undefined;
    this.running++;
    this.slots.started(next);
    this.handlerTimes.started(next);
    this.deps.runAttempt(next);
    return next;
  }

  /** An attempt ended; `withOutcome`: its outcome is on its way to the database. */
  attemptEnded(job: ClaimedJob, withOutcome: boolean): void {
    this.running--;
    this.slots.ended(job);
    this.slots.freed(job.queue);
    this.prefetch.recordCompletion();
    this.handlerTimes.ended(job);
    if (!withOutcome) return;
    this.controlled.ended(job);
    this.topUp();
  }

  /**
   * A job handed to runAttempt that cannot start here after all (sealed with a key this instance
   * lacks): its slot is free at once, and it goes back unspent, claimable again from `runAt`, with
   * the hand-backs a stopping worker waits for.
   */
  handBackStarted(job: ClaimedJob, runAt: Date, which: string): void {
    this.attemptEnded(job, false);
    this.handBacks.unspent([job], which, runAt);
  }

  /**
   * The job's outcome is written, or will not be here: a controlled job's
   * slot is free in the database, so look again now, not at the poll.
   */
  jobReleased(job: ClaimedJob): void {
    // A capped queue whose claim found no room in a limit while this outcome was unwritten: ask again.
    this.slots.freed(job.queue);
    if (this.controlled.released(job)) this.workMayHaveArrived(job.queue);
    else this.topUp();
  }

  /**
   * Takes a job that has not started out of this claimer's hands (cancelled,
   * or its lease lost: then `attempt` is the claim's whose lease it was).
   * `freesSlot`: its queue is worth a look once the job's outcome is written.
   */
  withdraw(id: string, attempt?: number): { job: ClaimedJob; freesSlot: boolean } | undefined {
    const job = this.unstartedJobs.take((j) => j.id === id && (attempt === undefined || j.attempt === attempt));
    if (!job) return undefined;
    this.deadlines.forget(id);
    this.slots.freed(job.queue);
    return { job, freesSlot: this.controlled.released(job) };
  }

  /** Claimed jobs that have not started, those claimed ahead included. */
  unstarted(): readonly ClaimedJob[] {
    return this.unstartedJobs.all();
  }

  /** Gives back every claimed job that has not started, for another worker to take at once. */
  async handBackUnstarted(): Promise<void> {
    const unstarted = this.unstartedJobs.clear();
    this.deadlines.clear();
    await this.handBacks.atShutdown(unstarted);
  }

  /**
   * One claim of `request`, through the claim its queue's settings call
   * for: the controlled one (it re-reads the settings under its lock) or
   * the plain one. JobWorker's passes and the testing kit's drainer both
   * claim through it.
   */
  async claim(request: ClaimRequest): Promise<ClaimedJob[]> {
    if (this.settings.controlled(request.queue)) return this.claimControlled(request);
    const signals = this.signals;
    const jobs = await this.deps.claims.claim(request);
    // Short, and nothing said meanwhile that work arrived: this queue is empty for now.
    if (jobs.length < request.limit && signals === this.signals) this.dry.add(request.queue);
    return jobs;
  }

  /** As a write of these outcomes starts: the claim for a limited queue that goes with it, if any. */
  claimFor(attempts: readonly FinishedAttempt[]): ClaimRequest | null {
    if (!this.active) return null;
    const idle = Math.max(0, this.concurrency - this.local());
    const queue = this.controlled.queueToClaimOnWrite(attempts, idle, (q) => this.slots.room(q));
    if (queue === null) return null;
    const request = this.requests.of(queue, idle);
    this.slots.asking(request);
    return request;
  }

  /** The answer of a claim on an outcome write; once stop() began its jobs stay unstarted, to be handed back. */
  claimAnswered(request: ClaimRequest, attempts: readonly FinishedAttempt[], result: ClaimResult | null): void {
    // Its jobs join the unstarted ones below, in this same turn: the queue's room stays counted.
    this.slots.answered(request);
    this.controlled.writeAnswered(request.queue, attempts, result?.jobs ?? null);
    if (!result) return;
    if (result.waitMs !== null) this.rateWake.in(result.waitMs);
    this.supersede(result.jobs);
    if (this.settings.rated(request.queue)) this.deadlines.claimed(result.jobs, request.now);
    if (result.counted) this.unstartedJobs.counted(result.counted);
    this.unstartedJobs.add(result.jobs);
    this.startUnstarted();
  }

  /**
   * Starts what slots allow, then claims when enough of the buffer is free, unless a pass is under
   * way. Below a worthwhile batch, capped queues whose slot came free are still asked, alone: a
   * capped queue is never claimed ahead beyond its cap, so its freed slot would idle until then.
   */
  private topUp(): void {
    if (!this.active) return;
    this.startUnstarted();
    if (this.passUnderWay) return;
    const free = this.requests.capacity() - this.local();
    if (free <= 0) return;
    // A worthwhile batch, or every slot idle.
    const batch =
      !this.drained && (free >= this.requests.minClaim() || (this.running === 0 && this.unstartedJobs.length === 0));
    if (!batch && !this.slots.anyFreed) return;
    this.passUnderWay = true;
    void this.pass(free, !batch).finally(() => {
      this.passUnderWay = false;
      this.topUp();
    });
  }

  private startUnstarted(): void {
    this.ahead.handBackStranded();
    let late: ClaimedJob[] | null = null;
    while (this.active && this.running < this.concurrency && this.unstartedJobs.length) {
      const job = this.unstartedJobs.shift()!;
      if (!this.deadlines.mayStart(job.id)) {
        (late ??= []).push(job);
        continue;
      }
      this.running++;
      this.slots.started(job);
      if (this.settings.limited(job.queue)) this.handlerTimes.started(job);
      this.deps.runAttempt(job);
    }
    if (late) this.handBacks.unspent(late, 'that missed their start');
  }

  /**
   * A claim may hand this worker a job it still holds under an earlier claim:
   * that claim's lease ran out (an event-loop stall, a slow database) and the
   * rescue put the job back. The earlier attempt has lost its lease for sure.
   * It goes before the new one joins, unstarted here or running and recording
   * in the worker, so that only the new one is held, renewed and recorded.
   */
  private supersede(jobs: readonly ClaimedJob[]): void {
    if (jobs.length === 0) return;
    if (this.unstartedJobs.length || this.unstartedJobs.aheadCount) {
      const ids = new Set(jobs.map((j) => j.id));
      for (const earlier of this.unstartedJobs.takeAll((j) => ids.has(j.id))) {
        this.deadlines.forget(earlier.id);
        this.controlled.released(earlier);
      }
    }
    this.deps.claimedAgain?.(jobs);
  }

  /** Jobs here or on their way: unstarted, running, or asked for by a claim on an outcome write. */
  private local(): number {
    return this.unstartedJobs.length + this.running + this.controlled.incoming;
  }

  /**
   * One claim per queue until `limit` jobs are held. A queue whose claim
   * fails is skipped for this pass, so one bad queue (or row) never stops
   * the others; the failures are logged once per pass. A plain queue that
   * came back short is not asked again until its next notification or the
   * poll: with one busy queue and an idle one, every pass would otherwise
   * pay a round trip for the idle one. A capped queue is asked for no more
   * than its room here, and skipped without one. `freedOnly`: only capped
   * queues whose slot came free are asked (and the pass proves no queue dry).
   */
  private async pass(limit: number, freedOnly: boolean): Promise<void> {
    const signals = this.signals;
    let got = 0;
    const failed: string[] = [];
    let reason = '';
    for (const queue of this.served.order()) {
      if (!this.active) break;
      if (!this.slots.asks(queue) && freedOnly) continue;
      if (this.settings.paused(queue) || this.dry.has(queue)) continue;
      if (this.slots.room(queue) <= 0) continue;
      let jobs: ClaimedJob[];
      const request = this.requests.of(queue, limit - got);
      this.slots.asking(request);
      try {
        jobs = await this.claim(request);
      } catch (error) {
        failed.push(queue);
        reason = (error as Error).message;
        continue;
      } finally {
        // Its jobs join the unstarted ones below, in this same turn: the queue's room stays counted.
        this.slots.answered(request);
      }
      if (!this.active) {
        await this.deps.outcomes.handBack(this.deps.workerId, jobs, this.deps.clock.now(), null).catch(() => undefined);
        return;
      }
      for (const job of jobs) if (!job.claimedAhead) got++;
      this.supersede(jobs);
      if (this.settings.rated(queue)) this.deadlines.claimed(jobs, request.now);
      this.unstartedJobs.add(jobs);
      this.startUnstarted();
      if (got >= limit) break;
    }
    if (failed.length) this.deps.logger.error(`Claiming jobs from queue(s) ${failed.join(', ')} failed: ${reason}`);
    if (!freedOnly && got < limit && signals === this.signals) this.drained = true;
  }

  private async claimControlled(request: ClaimRequest): Promise<ClaimedJob[]> {
    const room = this.controlled.room(request.queue, this.concurrency, this.local());
    if (room <= 0) return [];
    const { claims } = this.deps;
    const { jobs, waitMs, counted } = await claims.claimControlled({
      ...request,
      limit: Math.min(request.limit, room),
    });
    if (waitMs !== null) this.rateWake.in(waitMs);
    this.controlled.claimed(jobs);
    if (counted) this.unstartedJobs.counted(counted);
    return jobs;
  }
}
