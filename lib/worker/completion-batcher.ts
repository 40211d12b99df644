import { Logger } from '@nestjs/common';
import type { ClaimedJob, Clock, FinishedAttempt } from '../model/index.js';
import type { ClaimRequest, ClaimResult } from '../storage/jobs/claim/claim-storage.interface.js';
import type { OutcomeStorage } from '../storage/jobs/outcomes/outcome-storage.interface.js';
import type { WorkflowStorage } from '../storage/workflows/workflow-storage.interface.js';
import type { ReadersWriterLock } from './readers-writer-lock.js';

/**
 * Lets an outcome write claim more jobs of a limited queue in its own
 * statement (OutcomeStorage.finishAndClaim): the slots it frees are refilled
 * without waiting for the write to come back first.
 */
export interface ClaimOnOutcomeWrite {
  /** As a write of these outcomes starts: what to claim with it, if anything. */
  claimFor(attempts: readonly FinishedAttempt[]): ClaimRequest | null;
  /**
   * The claim's answer, before the outcomes' promises resolve; null when
   * the write failed (it is retried, and nothing was claimed).
   */
  claimAnswered(request: ClaimRequest, attempts: readonly FinishedAttempt[], result: ClaimResult | null): void;
}

interface Pending {
  attempt: FinishedAttempt;
  resolve(applied: boolean | null): void;
}

/**
 * Writes outcomes in batches without adding latency: an outcome is written
 * at once if a write slot is free, and those that finish while all slots are
 * busy go together in the next write. Several writes run at once (they touch
 * disjoint rows), so PostgreSQL works on them in parallel. A failed write is
 * retried, never dropped: the fence makes a late write harmless if the lease
 * was lost meanwhile.
 */
export class CompletionBatcher {
  private readonly logger = new Logger('CompletionBatcher');
  private queue: Pending[] = [];
  private inFlight = 0;
  private pumpScheduled = false;
  private failures = 0;
  private pausedUntil = 0;
  private resumeTimer: NodeJS.Timeout | null = null;
  private deadline = Infinity;
  private stopped = false;
  private readonly idleWaiters: Array<() => void> = [];
  /** Attempts whose job this worker claimed again before their outcome was written (see withdraw). */
  private readonly withdrawn = new Set<ClaimedJob>();
  /**
   * The jobs claimed ahead whose counting (FinishedAttempt.successor) is in a write under way. Their
   * own outcome waits for that write: written first, a success of one would count its successor
   * while the job it replaced still held the slot, one job more than the limit.
   */
  private readonly counting = new Set<string>();

  constructor(
    private readonly storage: OutcomeStorage,
    private readonly workflows: WorkflowStorage,
    private readonly workerId: string,
    private readonly clock: Clock,
    /** Shared with lease renewal, which must not overlap a write of the same rows. */
    private readonly rowLock: ReadersWriterLock,
    /** The worker's lease: a failure's onFailure hook is held that long (see OutcomeStorage.finish). */
    private readonly leaseMs: number,
    private readonly claimer: ClaimOnOutcomeWrite | null = null,
    private readonly maxInFlight = 3,
    private readonly maxBatch = 1000,
  ) {}

  /**
   * Resolves true when written, false when the fence refused it (the job was
   * no longer ours), null when shutdown came before it could be written.
   */
  add(attempt: FinishedAttempt): Promise<boolean | null> {
    return new Promise((resolve) => {
      this.queue.push({ attempt, resolve });
      // Outcomes that arrive in the same turn of the event loop share one statement.
      if (!this.pumpScheduled) {
        this.pumpScheduled = true;
        setImmediate(() => {
          this.pumpScheduled = false;
          this.pump();
        });
      }
    });
  }

  /**
   * The worker claimed `job` again while this attempt's outcome waited: the
   * attempt's lease is gone, and its outcome must not share a statement with
   * the next attempt's (the writes key their rows by job id). It resolves
   * false, unwritten; a write of it under way is refused by the fence.
   */
  withdraw(job: ClaimedJob): void {
    this.withdrawn.add(job);
  }

  private pump(): void {
    if (this.stopped || Date.now() < this.pausedUntil) return;
    while (this.queue.length && this.inFlight < this.maxInFlight) {
      const batch = this.nextBatch();
      if (batch.length === 0) break;
      const successors = batch.flatMap((p) => (p.attempt.successor ? [p.attempt.successor] : []));
      for (const id of successors) this.counting.add(id);
      this.inFlight++;
      void this.write(batch).finally(() => {
        for (const id of successors) this.counting.delete(id);
        this.inFlight--;
        this.pump();
        if (this.inFlight === 0 && this.queue.length === 0) {
          // Withdrawn attempts whose outcome had been written before they were withdrawn.
          this.withdrawn.clear();
          for (const w of this.idleWaiters.splice(0)) w();
        }
      });
    }
  }

  /**
   * The next write's outcomes, in the order they came, but those of jobs still to be counted by a
   * write under way. In one statement with the success that counts it, a job's own success is
   * fine: the write counts its successor in the place of the job that ended first.
   */
  private nextBatch(): Pending[] {
    if (this.counting.size === 0) return this.queue.splice(0, this.maxBatch);
    const batch: Pending[] = [];
    const held: Pending[] = [];
    for (const p of this.queue) {
      if (batch.length < this.maxBatch && !this.counting.has(p.attempt.job.id)) batch.push(p);
      else held.push(p);
    }
    this.queue = held;
    return batch;
  }

  private async write(pending: Pending[]): Promise<void> {
    const batch = this.withdrawn.size ? this.withoutWithdrawn(pending) : pending;
    if (batch.length === 0) return;
    try {
      const now = this.clock.now();
      // Outcomes that carry continuations need their own transaction; the rest go together.
      const plain = batch.filter((p) => !p.attempt.continuations?.length).map((p) => p.attempt);
      const applied = plain.length ? await this.writePlain(plain, now) : new Set<string>();
      for (const p of batch) {
        if (!p.attempt.continuations?.length) continue;
        const { continuations, ...attempt } = p.attempt;
        const written = await this.rowLock.runShared(() =>
          this.workflows.finishWithContinuations(this.workerId, attempt, continuations, now, this.leaseMs),
        );
        if (written) applied.add(attempt.job.id);
      }
      this.failures = 0;
      for (const p of batch) p.resolve(applied.has(p.attempt.job.id));
      if (this.withdrawn.size) for (const p of batch) this.withdrawn.delete(p.attempt.job);
    } catch (error) {
      this.queue.unshift(...batch);
      this.failures++;
      const wait = Math.min(5000, 100 * 2 ** this.failures, Math.max(0, this.deadline - Date.now()));
      this.logger.error(
        `Recording ${batch.length} job outcome(s) failed (${(error as Error).message}); retrying in ${wait} ms`,
      );
      this.pausedUntil = Math.max(this.pausedUntil, Date.now() + wait);
      this.scheduleResume();
    }
  }

  private withoutWithdrawn(batch: Pending[]): Pending[] {
    return batch.filter((p) => {
      if (!this.withdrawn.delete(p.attempt.job)) return true;
      p.resolve(false);
      return false;
    });
  }

  private async writePlain(attempts: FinishedAttempt[], now: Date): Promise<Set<string>> {
    const claim = attempts.some((a) => a.outcome.kind === 'succeeded') ? this.claimer?.claimFor(attempts) : null;
    if (!claim) {
      return this.rowLock.runShared(() => this.storage.finish(this.workerId, attempts, now, this.leaseMs));
    }
    let answer: ClaimResult | null = null;
    try {
      const written = await this.rowLock.runShared(() =>
        this.storage.finishAndClaim(this.workerId, attempts, now, this.leaseMs, claim),
      );
      answer = written.claimed;
      return written.applied;
    } finally {
      this.claimer!.claimAnswered(claim, attempts, answer);
    }
  }

  /** Wakes the pump once the pause is over; re-arms if a later failure extended it. */
  private scheduleResume(): void {
    if (this.resumeTimer || this.stopped) return;
    this.resumeTimer = setTimeout(
      () => {
        this.resumeTimer = null;
        if (Date.now() < this.pausedUntil) this.scheduleResume();
        else this.pump();
      },
      Math.max(1, this.pausedUntil - Date.now()),
    );
    this.resumeTimer.unref();
  }

  /**
   * Waits until every outcome handed in so far is written, or until the
   * deadline: a database that is gone must not hold shutdown forever. What
   * is left is not lost; those jobs' leases expire and they run again.
   */
  async drain(timeoutMs: number): Promise<number> {
    this.deadline = Date.now() + timeoutMs;
    if (this.inFlight || this.queue.length) {
      await Promise.race([
        new Promise<void>((r) => this.idleWaiters.push(r)),
        new Promise((r) => setTimeout(r, timeoutMs).unref()),
      ]);
    }
    const left = this.queue.length + this.inFlight;
    this.stopped = true;
    if (this.resumeTimer) clearTimeout(this.resumeTimer);
    for (const p of this.queue.splice(0)) p.resolve(null);
    return left;
  }
}
