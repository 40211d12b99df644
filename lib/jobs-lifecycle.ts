import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { Inject } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker/worker-options.js';
import { settlesWithin } from './model/index.js';
import { DeclarationsKeeper } from './declarations-keeper.js';
import { ScheduleRunner } from './scheduler/schedule-runner.service.js';
import { JobWorker } from './worker/job-worker.service.js';
import { RetentionService } from './worker/retention.service.js';

/**
 * Starts the worker, the scheduler and retention once the whole app has
 * bootstrapped, and stops them first at shutdown.
 *
 * Nest runs onApplicationBootstrap module by module, farthest from the root
 * first; a hook that throws ends the boot with the app never returned to
 * its caller, so anything an earlier hook started (a worker claiming jobs,
 * its connections keeping the process alive) would go on with nobody to
 * stop it. This module's hooks are therefore moved after every other
 * module's (its distance below the root's 0): when they run, every other
 * hook has succeeded. A start that fails half-way stops what it started.
 */
/** Beyond the grace period: what handing back, recording outcomes and closing may take. */
const SHUTDOWN_MARGIN_MS = 10_000;

@Injectable()
export class JobsLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('JobsModule');
  private readonly started: Array<() => Promise<void>> = [];

  constructor(
    discovery: DiscoveryService,
    private readonly worker: JobWorker,
    private readonly scheduler: ScheduleRunner,
    private readonly retention: RetentionService,
    private readonly declarations: DeclarationsKeeper,
    @Inject(WORKER_OPTIONS) private readonly workerOptions: ResolvedWorkerOptions,
  ) {
    // Constructors run before Nest orders the modules for the hooks.
    for (const wrapper of discovery.getProviders()) {
      if (wrapper.token === JobsLifecycle && wrapper.host) wrapper.host.distance = -1;
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    try {
      // The service's declarations (limits, schedules) are in force before the first claim and tick.
      await this.declarations.start();
      this.started.push(() => this.declarations.stop());
      await this.scheduler.start();
      this.started.push(() => this.scheduler.stop());
      await this.worker.start();
      this.started.push(() => this.worker.stop());
      this.retention.start();
      this.started.push(() => this.retention.stop());
    } catch (error) {
      await this.stopAll();
      throw error;
    }
  }

  /**
   * No new ticks first, then the worker hands back or finishes its jobs,
   * then retention. Bounded whatever the database does: past the grace
   * period and a margin, shutdown goes on and what is left (outcomes not
   * written, leases not given back) is settled by lease expiry elsewhere.
   */
  async beforeApplicationShutdown(): Promise<void> {
    const bound = this.workerOptions.shutdownGrace + SHUTDOWN_MARGIN_MS;
    const timedOut = !(await settlesWithin(this.stopAll(), bound));
    if (timedOut) {
      this.logger.error(
        `Stopping the jobs worker took longer than ${bound} ms (is the database answering?); shutting down anyway. ` +
          `Jobs it still held run again elsewhere once their lease expires.`,
      );
    }
  }

  private async stopAll(): Promise<void> {
    for (const stop of this.started.splice(0).reverse()) {
      await stop().catch((error: Error) => this.logger.error(`Stopping failed: ${error.message}`));
    }
  }
}
