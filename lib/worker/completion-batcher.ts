import { Logger } from '@nestjs/common';
import type { Clock, FinishedAttempt } from '../model/index.js';
import type { JobStorage } from '../storage/job-storage.interface.js';
import type { WorkflowStorage } from '../storage/workflow-storage.interface.js';
import type { Mutex } from './mutex.js';

interface Pending {
  attempt: FinishedAttempt;
  resolve(applied: boolean): void;
}

/**
 * Writes outcomes in batches without adding latency: the first outcome is
 * written at once, and those that finish while a write is in flight go
 * together in the next one. A failed write is retried, never dropped: the
 * fence makes a late write harmless if the lease was lost meanwhile.
 */
export class CompletionBatcher {
  private readonly logger = new Logger('JobWorker');
  private queue: Pending[] = [];
  private flushing: Promise<void> | null = null;
  private deadline = Infinity;
  private stopped = false;

  constructor(
    private readonly storage: JobStorage,
    private readonly workflows: WorkflowStorage,
    private readonly workerId: string,
    private readonly clock: Clock,
    /**
     * Shared with lease renewal: both update this worker's active rows, and
     * two statements locking the same rows in different orders deadlock.
     */
    private readonly rowLock: Mutex,
    private readonly maxBatch = 1000,
  ) {}

  /** Resolves true when written, false when the fence refused it (the job was no longer ours). */
  add(attempt: FinishedAttempt): Promise<boolean> {
    return new Promise((resolve) => {
      this.queue.push({ attempt, resolve });
      if (!this.flushing) this.flushing = this.flush();
    });
  }

  get size(): number {
    return this.queue.length;
  }

  /**
   * Waits until every outcome handed in so far is written, or until the
   * deadline: a database that is gone must not hold shutdown forever. What
   * is left is not lost; those jobs' leases expire and they run again.
   */
  async drain(timeoutMs: number): Promise<number> {
    this.deadline = Date.now() + timeoutMs;
    while (this.flushing && Date.now() < this.deadline) {
      await Promise.race([this.flushing, new Promise((r) => setTimeout(r, 100).unref())]);
    }
    const left = this.queue.length + (this.flushing ? 1 : 0);
    this.stopped = true;
    for (const p of this.queue.splice(0)) p.resolve(false);
    return left;
  }

  private async flush(): Promise<void> {
    let failures = 0;
    try {
      while (this.queue.length && !this.stopped) {
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          const now = this.clock.now();
          // Outcomes that carry continuations need their own transaction; the rest go together.
          const plain = batch.filter((p) => !p.attempt.continuations?.length);
          const applied = plain.length
            ? await this.rowLock.run(() =>
                this.storage.finish(
                  this.workerId,
                  plain.map((p) => p.attempt),
                  now,
                ),
              )
            : new Set<string>();
          for (const p of batch) {
            if (!p.attempt.continuations?.length) continue;
            const { continuations, ...attempt } = p.attempt;
            const written = await this.rowLock.run(() =>
              this.workflows.finishWithContinuations(this.workerId, attempt, continuations, now),
            );
            if (written) {
              applied.add(attempt.job.id);
            }
          }
          failures = 0;
          for (const p of batch) p.resolve(applied.has(p.attempt.job.id));
        } catch (error) {
          this.queue.unshift(...batch);
          failures++;
          const wait = Math.min(5000, 100 * 2 ** failures, Math.max(0, this.deadline - Date.now()));
          this.logger.error(
            `Recording ${batch.length} job outcome(s) failed (${(error as Error).message}); retrying in ${wait} ms`,
          );
          await new Promise((r) => setTimeout(r, wait));
        }
      }
    } finally {
      this.flushing = null;
    }
  }
}
