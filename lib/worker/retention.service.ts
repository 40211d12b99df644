import { Inject, Injectable, Logger } from '@nestjs/common';
import { Clock } from '../model/index.js';
import {
  MAINTENANCE_STORAGE,
  type MaintenanceStorage,
} from '../storage/jobs/maintenance/maintenance-storage.interface.js';
import { RETENTION_OPTIONS, type ResolvedRetentionOptions } from './retention-options.js';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker-options.js';

/**
 * How long the counts of forgotten successes stay: the longest throughput window (a day) and the
 * minute under way.
 */
const FORGOTTEN_COUNTS_KEPT_MS = 1_441 * 60_000;

/**
 * Keeps the job table lean: finished jobs leave once their retention ends,
 * in small chunks so no statement holds locks for long, with a rest between
 * chunks so a pass over millions of expired rows leaves room for the claims,
 * and so do the rows of workers long stopped (every process start adds one)
 * the groups' rate logs whose starts all left their window, and the counts
 * of forgotten successes no throughput window reads.
 * Runs on instances with a worker; several instances prune side by side
 * (SKIP LOCKED).
 */
@Injectable()
export class RetentionService {
  private readonly logger = new Logger('JobRetention');
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopping = false;
  /** Ends the rest between two chunks early: stop() must not wait for it. */
  private wake: (() => void) | null = null;

  constructor(
    @Inject(MAINTENANCE_STORAGE) private readonly storage: MaintenanceStorage,
    private readonly clock: Clock,
    @Inject(RETENTION_OPTIONS) private readonly options: ResolvedRetentionOptions,
    @Inject(WORKER_OPTIONS) private readonly worker: ResolvedWorkerOptions,
  ) {}

  /** Prunes every `interval` from now on (JobsLifecycle starts it with the worker). */
  start(): void {
    if (!this.worker.enabled || this.timer) return;
    this.stopping = false;
    this.timer = setInterval(() => void this.prune(), this.options.interval);
    this.timer.unref();
  }

  /** Stops the timer; a pass under way ends after its current chunk. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.stopping = true;
    this.wake?.();
    await this.running;
  }

  /** One pass (or the one under way): every row past its retention, in chunks. */
  prune(): Promise<void> {
    this.running ??= this.pass().finally(() => (this.running = null));
    return this.running;
  }

  private async pass(): Promise<void> {
    const now = this.clock.now().getTime();
    const { workers } = this.options;
    let deleted = 0;
    try {
      for (const { states, keep } of this.jobRetentions()) {
        if (this.stopping) break;
        deleted += await this.drain(states, new Date(now - keep));
      }
      if (!this.stopping) deleted += await this.drainBatches(now);
      if (deleted) this.logger.log(`Pruned ${deleted} finished job(s) and batch(es) past their retention`);
      if (workers !== false && !this.stopping) await this.storage.pruneWorkers(new Date(now - workers));
      if (!this.stopping) await this.storage.pruneGroupRates(new Date(now));
      if (!this.stopping) await this.storage.pruneForgotten(new Date(now - FORGOTTEN_COUNTS_KEPT_MS));
    } catch (error) {
      this.logger.warn(`Pruning finished jobs failed: ${(error as Error).message}`);
    }
  }

  /**
   * The ended states to prune, grouped by how long they are kept: states kept alike (cancelled
   * jobs follow failed ones by default) go in one walk of the key range, not in one each.
   */
  private jobRetentions(): Array<{ states: string[]; keep: number }> {
    const { succeeded, failed, cancelled } = this.options;
    const groups: Array<{ states: string[]; keep: number }> = [];
    const kept: Array<[string, number | false]> = [
      ['succeeded', succeeded],
      ['failed', failed],
      ['skipped', failed],
      ['cancelled', cancelled],
    ];
    for (const [state, keep] of kept) {
      if (keep === false) continue;
      const same = groups.find((g) => g.keep === keep);
      if (same) same.states.push(state);
      else groups.push({ states: [state], keep });
    }
    return groups;
  }

  private async drain(states: string[], before: Date): Promise<number> {
    const { chunk, pause } = this.options;
    let total = 0;
    let after: string | null = null;
    for (;;) {
      const step = await this.storage.prune(states, before, chunk, after);
      total += step.deleted;
      if (step.deleted < chunk || this.stopping) return total;
      after = step.last;
      if (pause > 0) await this.rest(pause);
      if (this.stopping) return total;
    }
  }

  /**
   * Settled batches go whole with their members, so their rounds are sized by
   * member rows (about a chunk each), with the same rest between rounds. A
   * succeeded or failed batch is kept as long as failed jobs, a cancelled one
   * as long as cancelled jobs.
   */
  private async drainBatches(now: number): Promise<number> {
    const { chunk, pause, failed, cancelled } = this.options;
    const keeps = { succeeded: failed, failed, cancelled } as const;
    let total = 0;
    for (const state of ['succeeded', 'failed', 'cancelled'] as const) {
      const keep = keeps[state];
      if (keep === false) continue;
      const before = new Date(now - keep);
      let after: string | null = null;
      for (;;) {
        const round = await this.storage.pruneBatches(state, before, after, chunk);
        total += round.batches;
        if (round.last === null || this.stopping) break;
        after = round.last;
        if (pause > 0) await this.rest(pause);
        if (this.stopping) break;
      }
      if (this.stopping) break;
    }
    return total;
  }

  private rest(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }
}
