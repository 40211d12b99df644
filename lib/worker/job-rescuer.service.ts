import { Inject, Injectable, Logger } from '@nestjs/common';
import { UNHANDLED_JOBS_OPTIONS, type ResolvedUnhandledJobsOptions } from '../discovery/service-name.js';
import { Clock } from '../model/index.js';
import {
  MAINTENANCE_STORAGE,
  type MaintenanceStorage,
} from '../storage/jobs/maintenance/maintenance-storage.interface.js';
import { FailureHooks } from './failure-hooks.service.js';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker-options.js';

/** Jobs one rescue pass takes at most; the next pass takes the rest. */
const RESCUE_BATCH = 500;

/**
 * Takes back jobs whose worker stopped renewing their lease (it crashed,
 * stalled or lost the database): each becomes claimable again with its
 * attempt recorded `interrupted`, or fails for good when no attempt is left.
 * Every instance with a worker runs it; SKIP LOCKED lets them share the work.
 */
@Injectable()
export class JobRescuer {
  private readonly logger = new Logger('JobRescuer');
  private timer: NodeJS.Timeout | null = null;
  private started = false;
  private running: Promise<void> | null = null;

  constructor(
    @Inject(MAINTENANCE_STORAGE) private readonly storage: MaintenanceStorage,
    private readonly clock: Clock,
    @Inject(WORKER_OPTIONS) private readonly options: ResolvedWorkerOptions,
    private readonly hooks: FailureHooks,
    @Inject(UNHANDLED_JOBS_OPTIONS) private readonly unhandled: ResolvedUnhandledJobsOptions,
  ) {}

  /**
   * Rescues once now (a restart after a crash finds its own jobs), then
   * every half lease, at most every 15 s. Each pass also fails the jobs whose
   * deadline passed before they started, with `unhandledJobs.failAfter` the
   * jobs due that long that no live worker handles, and sweeps the onFailure hooks
   * waiting for an instance: the rescue's and the deadlines' own, and those
   * abandoned.
   */
  async start(): Promise<void> {
    this.started = true;
    const every = Math.max(250, Math.min(15_000, Math.floor(this.options.lease / 2)));
    this.timer = setInterval(() => void this.rescue(), every);
    this.timer.unref();
    await this.rescue();
  }

  /** One pass; overlapping calls share the one under way. */
  rescue(): Promise<void> {
    this.running ??= this.pass().finally(() => (this.running = null));
    return this.running;
  }

  private async pass(): Promise<void> {
    if (!this.started) return;
    try {
      const { rescued, failed, cancelled } = await this.storage.rescueExpired(this.clock.now(), RESCUE_BATCH);
      if (rescued > 0) {
        this.logger.warn(
          `Recovered ${rescued} job(s) whose worker stopped renewing its lease` +
            (failed ? `; ${failed} of them had no attempt left and failed for good` : '') +
            (cancelled ? `; ${cancelled} of them had been cancelled and ended cancelled` : ''),
        );
      }
    } catch (error) {
      this.logger.warn(`Recovering expired leases failed: ${(error as Error).message}`);
    }
    try {
      const expired = await this.storage.expireDeadlines(this.clock.now(), RESCUE_BATCH);
      if (expired > 0)
        this.logger.warn(`${expired} job(s) failed for good: their deadline passed before they could start`);
    } catch (error) {
      this.logger.warn(`Failing jobs past their deadline failed: ${(error as Error).message}`);
    }
    await this.failUnhandled();
    await this.hooks.sweep();
  }

  /** Live as JobsMonitor judges it: not stopped, and a heartbeat within this worker's lease. */
  private async failUnhandled(): Promise<void> {
    const failAfter = this.unhandled.failAfter;
    if (failAfter === null) return;
    try {
      const now = this.clock.now();
      const liveSince = new Date(now.getTime() - this.options.lease);
      const failed = await this.storage.failUnhandled(now, liveSince, failAfter, RESCUE_BATCH);
      if (failed > 0) {
        this.logger.warn(
          `${failed} job(s) failed for good: no live worker handles their job name, and they were due for longer than unhandledJobs.failAfter (${failAfter} ms)`,
        );
      }
    } catch (error) {
      this.logger.warn(`Failing jobs no live worker handles failed: ${(error as Error).message}`);
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.started = false;
    await this.running;
  }
}
