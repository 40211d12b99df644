import { Inject, Injectable, Logger } from '@nestjs/common';
import { Clock } from '../model/index.js';
import {
  MAINTENANCE_STORAGE,
  type MaintenanceStorage,
} from '../storage/jobs/maintenance/maintenance-storage.interface.js';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker-options.js';

/** How long ended jobs, settled batches and stopped workers' rows are kept before they are pruned. */
export interface RetentionOptions {
  /** How long succeeded jobs stay queryable, in ms; default 7 days; false keeps them. */
  succeeded?: number | false;
  /** How long failed, cancelled and skipped jobs (and settled batches) stay, in ms; default 30 days. */
  failed?: number | false;
  /** How long the rows of stopped (or crashed) workers stay, in ms; default 7 days; false keeps them. */
  workers?: number | false;
  /** How often to prune, in ms; default 60 000. */
  interval?: number;
}

export const RETENTION_OPTIONS = Symbol('RETENTION_OPTIONS');
const DAY = 86_400_000;
const CHUNK = 2_000;

/**
 * Keeps the job table lean: finished jobs leave once their retention ends,
 * in small chunks so no statement holds locks for long, and so do the rows
 * of workers long stopped (every process start adds one). Runs on instances
 * with a worker; several instances prune side by side (SKIP LOCKED).
 */
@Injectable()
export class RetentionService {
  private readonly logger = new Logger('JobRetention');
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    @Inject(MAINTENANCE_STORAGE) private readonly storage: MaintenanceStorage,
    private readonly clock: Clock,
    @Inject(RETENTION_OPTIONS) private readonly options: RetentionOptions,
    @Inject(WORKER_OPTIONS) private readonly worker: ResolvedWorkerOptions,
  ) {}

  /** Prunes every `interval` from now on (JobsLifecycle starts it with the worker). */
  start(): void {
    if (!this.worker.enabled || this.timer) return;
    this.timer = setInterval(() => void this.prune(), this.options.interval ?? 60_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One pass; returns how many jobs and batches it deleted. */
  prune(): Promise<void> {
    this.running ??= this.pass().finally(() => (this.running = null));
    return this.running;
  }

  private async pass(): Promise<void> {
    const now = this.clock.now().getTime();
    const succeeded = this.options.succeeded ?? 7 * DAY;
    const failed = this.options.failed ?? 30 * DAY;
    let deleted = 0;
    try {
      if (succeeded !== false) deleted += await this.drain(['succeeded'], new Date(now - succeeded));
      if (failed !== false) {
        deleted += await this.drain(['failed', 'cancelled', 'skipped'], new Date(now - failed));
        deleted += await this.storage.pruneBatches(new Date(now - failed), CHUNK);
      }
      if (deleted) this.logger.log(`Pruned ${deleted} finished job(s) and batch(es) past their retention`);
      const workers = this.options.workers ?? 7 * DAY;
      if (workers !== false) await this.storage.pruneWorkers(new Date(now - workers));
    } catch (error) {
      this.logger.warn(`Pruning finished jobs failed: ${(error as Error).message}`);
    }
  }

  private async drain(states: string[], before: Date): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.storage.prune(states, before, CHUNK);
      total += n;
      if (n < CHUNK) return total;
    }
  }
}
