import { Inject, Injectable, Logger, Optional, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { Counter, Gauge, Histogram, register as defaultRegistry, type Registry } from 'prom-client';
import { CODE_QUEUES, JobEvents, type CodeQueues } from '../model/index.js';
import { JobsMonitor } from './jobs-monitor.service.js';

/** Provide a prom-client Registry under this token to use it instead of prom-client's global one. */
export const JOBS_METRICS_REGISTRY = Symbol('JOBS_METRICS_REGISTRY');

const LIVE_STATES = ['waiting', 'queued', 'scheduled', 'active'] as const;

/**
 * Prometheus metrics (import from 'nestjs-durable-jobs/metrics'; prom-client
 * is an optional peer). Attempts and their durations are counted as this
 * instance's worker ends them; the job and worker gauges are read from the
 * database when scraped, so every instance reports the same system-wide
 * figures (aggregate them with max, not sum).
 *
 * - `durable_jobs_attempts_total{queue, job, outcome}`: outcome succeeded, retry, failed or cancelled
 * - `durable_jobs_attempt_duration_seconds{queue, job}`: handler start to outcome
 * - `durable_jobs_jobs{queue, state}`: waiting, queued (due), scheduled, active; every queue this
 *   instance knows (named by the app's code, live at a scrape, or with an attempt ended here) has
 *   all four, 0 when empty
 * - `durable_jobs_workers_alive`
 */
@Injectable()
export class JobsMetrics implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('JobsMetrics');
  private readonly registry: Registry;
  private readonly names: string[] = [];
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly monitor: JobsMonitor,
    private readonly events: JobEvents,
    @Optional() @Inject(JOBS_METRICS_REGISTRY) registry?: Registry,
    @Optional() @Inject(CODE_QUEUES) private readonly codeQueues?: CodeQueues,
  ) {
    this.registry = registry ?? defaultRegistry;
  }

  /**
   * Called by Nest at start: registers the four metrics in the registry (the one provided under
   * `JOBS_METRICS_REGISTRY`, else prom-client's global one) and starts counting this instance's
   * attempts. prom-client throws when the registry already holds a metric of one of these names.
   */
  onModuleInit(): void {
    const registers = [this.registry];
    const attempts = new Counter({
      name: 'durable_jobs_attempts_total',
      help: 'Job attempts ended by this instance, by outcome',
      labelNames: ['queue', 'job', 'outcome'] as const,
      registers,
    });
    const duration = new Histogram({
      name: 'durable_jobs_attempt_duration_seconds',
      help: 'Job attempts on this instance, from handler start to outcome',
      labelNames: ['queue', 'job'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
    });
    const monitor = this.monitor;
    const logger = this.logger;
    // A queue once seen keeps its series at 0 when it empties: a series that vanished reads as "no
    // data" rather than "nothing waiting", so graphs and alerts on it would go blind as a queue drains.
    const known = new Set<string>();
    // Read at each scrape: the registry of jobs fills during the app's init, after this hook.
    const codeQueues = this.codeQueues ?? (() => []);
    new Gauge({
      name: 'durable_jobs_jobs',
      help: 'Jobs in a live state, by queue (system-wide, read when scraped)',
      labelNames: ['queue', 'state'] as const,
      registers,
      async collect() {
        try {
          const { queues } = await monitor.counts({ finished: false });
          for (const queue of [...codeQueues(), ...Object.keys(queues)]) known.add(queue);
          this.reset();
          for (const queue of known) {
            for (const state of LIVE_STATES) this.set({ queue, state }, queues[queue]?.[state] ?? 0);
          }
        } catch (error) {
          // A scrape must not fail with the database: the last values stand, and the log says why.
          logger.warn(`Reading job counts failed: ${(error as Error).message}`);
        }
      },
    });
    new Gauge({
      name: 'durable_jobs_workers_alive',
      help: 'Worker processes running and beating within their lease (system-wide, read when scraped)',
      registers,
      async collect() {
        try {
          this.set((await monitor.workers({ stoppedWithin: 0 })).filter((w) => w.alive).length);
        } catch (error) {
          logger.warn(`Reading workers failed: ${(error as Error).message}`);
        }
      },
    });
    this.names.push(
      'durable_jobs_attempts_total',
      'durable_jobs_attempt_duration_seconds',
      'durable_jobs_jobs',
      'durable_jobs_workers_alive',
    );
    this.unsubscribe = this.events.onAttemptEnded(({ job, outcome, durationMs }) => {
      known.add(job.queue);
      attempts.inc({ queue: job.queue, job: job.name, outcome });
      duration.observe({ queue: job.queue, job: job.name }, durationMs / 1000);
    });
  }

  /** The metrics leave the registry with the app, so a new app in the same process can register them again. */
  onModuleDestroy(): void {
    this.unsubscribe?.();
    for (const name of this.names.splice(0)) this.registry.removeSingleMetric(name);
  }
}
