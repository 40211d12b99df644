import type { Logger } from '@nestjs/common';
import type { AttemptOutcome, ClaimedJob, Clock, Continuation } from '../model/index.js';
import type { OutcomeStorage } from '../storage/jobs/outcomes/outcome-storage.interface.js';
import type { AttemptRunner } from './attempt-runner.service.js';
import type { CompletionBatcher } from './completion-batcher.js';
import type { FailureHooks } from './failure-hooks.service.js';
import { logOutcome } from './outcome-log.js';
import type { RunningJob, RunResult } from './running-job.js';

/**
 * The slots a worker keeps for its attempts (its Claimer). The testing kit's
 * drain runs one job at a time and keeps none.
 */
export interface AttemptSlots {
  /** A job claimed ahead that starts at once in the slot of `job`, which succeeded here. */
  successorFor(job: ClaimedJob): ClaimedJob | undefined;
  /** The attempt no longer runs; `withOutcome`: its outcome is on its way to the database. */
  attemptEnded(job: ClaimedJob, withOutcome: boolean): void;
  /** The outcome is written, or will not be here: the job's slot is free in the database too. */
  jobReleased(job: ClaimedJob): void;
}

export interface AttemptEndingDeps {
  workerId: string;
  attempts: AttemptRunner;
  batcher: CompletionBatcher;
  hooks: FailureHooks;
  outcomes: OutcomeStorage;
  clock: Clock;
  logger: Logger;
  slots: AttemptSlots | null;
}

/** How an ended attempt came out, for the caller's own report. */
export interface EndedAttempt {
  outcome: AttemptOutcome | null;
  /** Written (true), refused by the fence (false), or not written here (null, and when there was none). */
  applied: boolean | null;
}

/** One attempt going through the phases. */
interface Ending {
  readonly job: ClaimedJob;
  readonly run: RunningJob;
  /** What the handler came to, recorded or not. */
  readonly ended: AttemptOutcome | null;
  /** ctx.transaction() wrote the outcome already, with the handler's own writes. */
  readonly recorded: boolean;
  readonly continuations: Continuation[] | undefined;
  readonly durationMs: number | undefined;
  /** Why there is no outcome: the attempt was stopped from outside. */
  readonly reason: 'lost-lease' | 'shutdown' | undefined;
  /** The outcome that is this attempt's to record: there is one, and the job was not claimed again. */
  readonly outcome: AttemptOutcome | null;
  successor: ClaimedJob | undefined;
  applied: boolean | null;
}

type Phase = (this: AttemptEnding, e: Ending) => void | Promise<void>;

/**
 * What happens once an attempt's handler has returned, thrown or been
 * stopped, for the worker and for the testing kit's drain alike: the slot
 * passed on or freed, the outcome written (fenced), listeners told, a lost
 * attempt reported, the failure hook started, and the slot released.
 *
 * The order is the `PHASES` list below, and each phase says why it stands
 * where it does. Outcomes handed to the batcher and not yet written are
 * held here (`finishing`), so the worker keeps their leases alive.
 */
export class AttemptEnding {
  private readonly finishing = new Map<string, ClaimedJob>();

  constructor(private readonly deps: AttemptEndingDeps) {}

  /** Runs the phases in order; resolves once the slot is released. */
  end(run: RunningJob, result: RunResult, current: boolean): Promise<EndedAttempt> {
    const { job } = run;
    const ended = result.outcome;
    const recorded = ended !== null && result.recorded === true;
    const outcome = current || recorded ? ended : null;
    const e: Ending = {
      job,
      run,
      ended,
      recorded,
      continuations: ended ? result.continuations : undefined,
      durationMs: ended ? result.durationMs : undefined,
      reason: ended ? undefined : result.reason,
      outcome,
      successor: undefined,
      applied: outcome ? true : null,
    };
    return this.phasesFrom(e, 0);
  }

  /**
   * The phases from `first` on. Not an async function: every outcome waits here for its write,
   * and an async frame (with its promise and closures) per waiting job was a large share of what
   * a drain promoted to V8's old generation (see bench/RESULTS.md, "Memory").
   */
  private phasesFrom(e: Ending, first: number): Promise<EndedAttempt> {
    try {
      for (let i = first; i < PHASES.length; i++) {
        const pending = PHASES[i].call(this, e);
        if (pending) return pending.then(() => this.phasesFrom(e, i + 1));
      }
      return Promise.resolve({ outcome: e.ended, applied: e.outcome ? e.applied : null });
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  /** Jobs whose outcome is handed to the batcher and not yet written, for lease renewal. */
  unwritten(): IterableIterator<ClaimedJob> {
    return this.finishing.values();
  }

  /** True while an attempt's outcome is unwritten. */
  get pending(): number {
    return this.finishing.size;
  }

  /**
   * The job was claimed again before this attempt's outcome was written: the
   * write is dropped (it would be fenced anyway) and its lease is no longer held.
   */
  withdraw(jobId: string): void {
    const job = this.finishing.get(jobId);
    if (!job) return;
    this.finishing.delete(jobId);
    this.deps.batcher.withdraw(job);
  }

  /**
   * Before the slot is freed: a plain success written as a statement of its
   * own may hand its slot to a job claimed ahead, and freeing it first would
   * let another claim take it.
   */
  static passSlot(this: AttemptEnding, e: Ending): void {
    const { slots } = this.deps;
    if (!slots || !e.outcome || e.recorded) return;
    const plain = e.outcome.kind === 'succeeded' && !e.continuations?.length;
    if (plain) e.successor = slots.successorFor(e.job);
  }

  /**
   * Before the write: the slot is this worker's to give again as soon as the
   * handler is done, and the claims the freed slot starts overlap the write.
   */
  static freeSlot(this: AttemptEnding, e: Ending): void {
    if (e.outcome) logOutcome(this.deps.logger, e.job, e.outcome, this.deps.clock);
    this.deps.slots?.attemptEnded(e.job, e.outcome !== null);
  }

  /**
   * ctx.transaction() wrote the outcome with the handler's own writes;
   * every other outcome goes through the batcher, fenced on the lease.
   */
  static writeOutcome(this: AttemptEnding, e: Ending): Promise<void> | void {
    const { job, outcome, successor } = e;
    if (!outcome || e.recorded) return;
    this.finishing.set(job.id, job);
    const { continuations } = e;
    return this.deps.batcher
      .add(successor ? { job, outcome, successor: successor.id } : { job, outcome, continuations })
      .then((applied) => {
        e.applied = applied;
        if (this.finishing.get(job.id) === job) this.finishing.delete(job.id);
      });
  }

  /** After the write: a listener that reads the job back finds what it was told. */
  static tellListeners(this: AttemptEnding, e: Ending): void {
    const { attempts } = this.deps;
    const { job, durationMs } = e;
    if (e.outcome) attempts.recorded(job, e.outcome, durationMs, e.applied);
    // It ended before the stop sent by the claim of its next attempt could cut it short.
    else if (e.ended) attempts.recorded(job, e.ended, durationMs, false);
  }

  /**
   * After the write: the hook is held by this worker only once the failure
   * is recorded; a lost attempt's span goes to the row the rescue wrote.
   */
  static followUp(this: AttemptEnding, e: Ending): void {
    const { job, ended } = e;
    const { logger } = this.deps;
    if (e.outcome && e.applied === false) {
      this.recordLostSpan(job);
      logger.warn(
        `Job ${job.name} ${job.id} attempt ${job.attempt}: its ${e.outcome.kind} outcome was not recorded, the job is no longer this worker's (its lease was taken)`,
      );
    } else if (e.outcome?.kind === 'failed' && e.outcome.hook && e.applied) {
      this.deps.hooks.runLocal(e.run);
    } else if (!e.outcome && ended) {
      this.recordLostSpan(job);
      logger.warn(
        `Job ${job.name} ${job.id} attempt ${job.attempt}: its ${ended.kind} outcome was not recorded, this worker claimed the job again after its lease ran out`,
      );
    } else if (e.reason === 'lost-lease') {
      this.recordLostSpan(job);
      logger.warn(`Job ${job.name} ${job.id} lost its lease; its outcome was discarded`);
    }
  }

  /** Last: a controlled job's slot is free in the database only once its outcome is written. */
  static release(this: AttemptEnding, e: Ending): void {
    this.deps.slots?.jobReleased(e.job);
  }

  /** The rescue that took the job wrote its interrupted row without the span only this worker knows. */
  private recordLostSpan(job: ClaimedJob): void {
    if (!job.started?.traceId) return;
    void this.deps.outcomes
      .recordLostSpan(this.deps.workerId, job)
      .catch((e: Error) =>
        this.deps.logger.error(`Recording the span of job ${job.id}'s lost attempt failed: ${e.message}`),
      );
  }
}

/** The order every ended attempt goes through. */
const PHASES: readonly Phase[] = [
  AttemptEnding.passSlot,
  AttemptEnding.freeSlot,
  AttemptEnding.writeOutcome,
  AttemptEnding.tellListeners,
  AttemptEnding.followUp,
  AttemptEnding.release,
];
