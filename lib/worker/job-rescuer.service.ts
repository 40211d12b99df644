import { Inject, Injectable, Logger } from '@nestjs/common';
import { Clock, type ClaimedJob, type SerializedError } from '../model/index.js';
import { JOB_STORAGE, type JobStorage } from '../storage/jobs/job-storage.interface.js';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker-options.js';

/** Runs the onFailure hook of a job the rescue failed for good (its attempts were used up by crashes). */
export type CrashFailureHook = (job: ClaimedJob, error: SerializedError) => Promise<void>;

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
  private hook: CrashFailureHook | null = null;
  private running: Promise<void> | null = null;

  constructor(
    @Inject(JOB_STORAGE) private readonly storage: JobStorage,
    private readonly clock: Clock,
    @Inject(WORKER_OPTIONS) private readonly options: ResolvedWorkerOptions,
  ) {}

  /** Rescues once now (a restart after a crash finds its own jobs), then every half lease, at most every 15 s. */
  async start(hook: CrashFailureHook): Promise<void> {
    this.hook = hook;
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
    const hook = this.hook;
    if (!hook) return;
    try {
      const { rescued, exhausted } = await this.storage.rescueExpired(this.clock.now(), RESCUE_BATCH);
      if (rescued > 0) this.logger.warn(`Recovered ${rescued} job(s) whose worker stopped renewing its lease`);
      // The rescue that failed a job for good runs its onFailure: one instance, once.
      for (const { job, error } of exhausted) {
        this.logger.error(
          `Job ${job.name} ${job.id} attempt ${job.attempt}/${job.maxAttempts} failed for good: ${error.message}`,
        );
        await hook(job, error);
      }
    } catch (error) {
      this.logger.warn(`Recovering expired leases failed: ${(error as Error).message}`);
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.hook = null;
    await this.running;
  }
}
