import { hostname } from 'node:os';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { JobRegistry } from '../discovery/job-registry.js';
import { JOBS_SERVICE } from '../discovery/service-name.js';
import { Clock, type LocalWorkerStatusRead } from '../model/index.js';
import {
  MAINTENANCE_STORAGE,
  type MaintenanceStorage,
} from '../storage/jobs/maintenance/maintenance-storage.interface.js';
import {
  OUTCOME_STORAGE,
  type HeldJob,
  type OutcomeStorage,
} from '../storage/jobs/outcomes/outcome-storage.interface.js';
import { FailureHooks } from './failure-hooks.service.js';
import { ReadersWriterLock } from './readers-writer-lock.js';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker-options.js';

/** What the keeper needs of the worker whose jobs it keeps. */
export interface LeaseHolder {
  readonly id: string;
  /** Every job this worker holds a lease on: buffered, running, or with its outcome not yet written. */
  held(): HeldJob[];
  /** How many jobs run now (reported with the heartbeat). */
  runningCount(): number;
  /** Held jobs (as held() gave them) whose lease was taken: stop them and never write their outcome. */
  leasesLost(jobs: readonly HeldJob[]): void;
  /** Jobs someone asked to cancel (a fallback for a missed notification). */
  cancelRequested(ids: readonly string[]): void;
}

/**
 * Keeps a worker's claims alive: every third of the lease it renews the
 * leases of every job the worker holds (one fenced statement), reports the
 * ones it lost, and beats the worker's heartbeat row, registering it again
 * when retention removed it.
 */
@Injectable()
export class LeaseKeeper {
  private readonly logger = new Logger('JobWorker');
  /**
   * Renewal touches all of the worker's rows at once and would deadlock with
   * an outcome write that locks some of them in another order; outcome
   * writes hold this shared, renewal holds it exclusively.
   */
  readonly rowLock = new ReadersWriterLock();
  private holder: LeaseHolder | null = null;
  private timer: NodeJS.Timeout | null = null;
  private renewing: Promise<void> | null = null;
  private lastHeartbeat: Date | null = null;

  constructor(
    @Inject(OUTCOME_STORAGE) private readonly storage: OutcomeStorage,
    @Inject(MAINTENANCE_STORAGE) private readonly registry: MaintenanceStorage,
    private readonly clock: Clock,
    @Inject(WORKER_OPTIONS) private readonly options: ResolvedWorkerOptions,
    private readonly hooks: FailureHooks,
    private readonly jobs: JobRegistry,
    @Inject(JOBS_SERVICE) private readonly service: string,
  ) {}

  /** Registers the worker's row and starts renewing. */
  async start(holder: LeaseHolder): Promise<void> {
    this.holder = holder;
    await this.register();
    this.timer = setInterval(() => void this.renew(), this.interval());
    this.timer.unref();
  }

  /** Every third of the lease: two renewals may fail (a slow database) before a lease runs out. */
  interval(): number {
    return Math.max(100, Math.floor(this.options.lease / 3));
  }

  /** One renewal and heartbeat now; overlapping calls share the one under way. */
  renew(): Promise<void> {
    this.renewing ??= this.renewOnce().finally(() => (this.renewing = null));
    return this.renewing;
  }

  private async renewOnce(): Promise<void> {
    const holder = this.holder;
    if (!holder) return;
    try {
      const now = this.clock.now();
      const { lost, cancelRequested } = await this.rowLock.runExclusive(() =>
        this.storage.renewLeases(holder.id, holder.held(), now, this.options.lease),
      );
      if (lost.length) holder.leasesLost(lost);
      if (cancelRequested.length) holder.cancelRequested(cancelRequested);
      const hooks = this.hooks.held();
      if (hooks.length) {
        const kept = await this.storage.renewFailureHooks(holder.id, hooks, now, this.options.lease);
        this.hooks.lost(hooks.filter((id) => !kept.has(id)));
      }
      if (await this.registry.heartbeatWorker(holder.id, now, holder.runningCount())) this.lastHeartbeat = now;
      else await this.register();
    } catch (error) {
      this.logger.error(`Renewing leases failed: ${(error as Error).message}`);
    }
  }

  /** This instance's worker for its readiness check: whether it should run, runs, and last reached its row. */
  status(): ReturnType<LocalWorkerStatusRead> {
    return {
      expected: this.options.enabled && this.jobs.names().length > 0,
      running: this.holder !== null,
      id: this.holder?.id ?? null,
      lastHeartbeat: this.holder ? this.lastHeartbeat : null,
    };
  }

  private async register(): Promise<void> {
    const holder = this.holder!;
    const now = this.clock.now();
    await this.registry.registerWorker({
      id: holder.id,
      host: hostname(),
      pid: process.pid,
      queues: this.options.queues ?? [],
      concurrency: this.options.concurrency,
      now,
      service: this.service,
      // What its claims take: monitoring reports due jobs of other names that no live worker handles.
      jobNames: this.jobs.names(),
    });
    this.lastHeartbeat = now;
  }

  /**
   * Stops renewing (the worker has handed back or finished what it held)
   * and marks the worker's row stopped.
   */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.renewing;
    const holder = this.holder;
    this.holder = null;
    if (holder) await this.registry.unregisterWorker(holder.id, this.clock.now()).catch(() => undefined);
  }
}
