import { Inject, Injectable, Logger } from '@nestjs/common';
import { Clock } from '../model/index.js';
import {
  MAINTENANCE_STORAGE,
  type MaintenanceStorage,
} from '../storage/jobs/maintenance/maintenance-storage.interface.js';
import { RETENTION_OPTIONS, type ResolvedRetentionOptions } from './retention-options.js';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker-options.js';

/**
 * Keeps the job table lean: finished jobs leave once their retention ends,
 * in small chunks so no statement holds locks for long, with a rest between
 * chunks so a pass over millions of expired rows leaves room for the claims,
 * and so do the rows of workers long stopped (every process start adds one).
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
    const { succeeded, failed, workers } = this.options;
    let deleted = 0;
    try {
      if (succeeded !== false) deleted += await this.drain(['succeeded'], new Date(now - succeeded));
      if (failed !== false && !this.stopping) {
        deleted += await this.drain(['failed', 'cancelled', 'skipped'], new Date(now - failed));
        if (!this.stopping) deleted += await this.drainBatches(new Date(now - failed));
      }
      if (deleted) this.logger.log(`Pruned ${deleted} finished job(s) and batch(es) past their retention`);
      if (workers !== false && !this.stopping) await this.storage.pruneWorkers(new Date(now - workers));
    } catch (error) {
      this.logger.warn(`Pruning finished jobs failed: ${(error as Error).message}`);
    }
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
   * member rows (about a chunk each), with the same rest between rounds.
   */
  private async drainBatches(before: Date): Promise<number> {
    const { chunk, pause } = this.options;
    let total = 0;
    for (const state of ['succeeded', 'failed', 'cancelled'] as const) {
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
