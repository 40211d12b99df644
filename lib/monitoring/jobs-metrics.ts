import { Inject, Injectable, Logger, Optional, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type * as PromClient from 'prom-client';
import { Clock, CODE_QUEUES, JobEvents, JobsError, type CodeQueues } from '../model/index.js';
import { JobsMonitor } from './jobs-monitor.service.js';
import { MetricReadings } from './metric-readings.js';

export { JOBS_METER, JobsOtelMetrics } from './otel-job-metrics.js';

/** Provide a prom-client Registry under this token to use it instead of prom-client's global one. */
export const JOBS_METRICS_REGISTRY = Symbol('JOBS_METRICS_REGISTRY');

type Prom = typeof PromClient;

/** The buckets of the attempt durations, in seconds: 5 ms to 5 min. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** The buckets of the waits to start, in seconds: 10 ms to an hour. */
const WAIT_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

/**
 * Prometheus metrics (import from 'nestjs-durable-jobs/metrics'; prom-client
 * is an optional peer, loaded when the app starts). Enqueues, attempts and
 * their waits and durations are counted as this instance does them; the
 * job, lag and worker gauges are read from the database when scraped, so
 * every instance reports the same system-wide figures (aggregate them with
 * max, not sum).
 *
 * - `durable_jobs_enqueued_total{queue, job}`: jobs this instance's enqueues wrote
 * - `durable_jobs_attempts_total{queue, job, outcome}`: outcome succeeded, retry, failed or cancelled
 * - `durable_jobs_attempt_duration_seconds{queue, job}`: handler start to outcome
 * - `durable_jobs_queue_wait_seconds{queue}`: each attempt started here, from when it became due
 *   (its run_at: the enqueue, or its delay, retry backoff or snooze) to its handler's start
 * - `durable_jobs_jobs{queue, state}`: waiting, queued (due), scheduled, active
 * - `durable_jobs_queue_lag_seconds{queue}`: how long the queue's oldest due job has been due, 0 when
 *   none is
 * - `durable_jobs_workers_alive`
 *
 * Every queue this instance knows (named by the app's code, live at a scrape, or met here) has its
 * job and lag series, 0 when empty.
 */
@Injectable()
export class JobsMetrics implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('JobsMetrics');
  private readonly names: string[] = [];
  private readonly unsubscribe: Array<() => void> = [];
  private registry: PromClient.Registry | undefined;

  constructor(
    private readonly monitor: JobsMonitor,
    private readonly events: JobEvents,
    private readonly clock: Clock,
    @Optional() @Inject(JOBS_METRICS_REGISTRY) private readonly given?: PromClient.Registry,
    @Optional() @Inject(CODE_QUEUES) private readonly codeQueues?: CodeQueues,
  ) {}

  /**
   * Called by Nest at start: loads prom-client, registers the metrics in the registry (the one
   * provided under `JOBS_METRICS_REGISTRY`, else prom-client's global one) and starts counting this
   * instance's enqueues and attempts. prom-client throws when the registry already holds a metric
   * of one of these names.
   */
  async onModuleInit(): Promise<void> {
    const prom = await loadPromClient();
    const registry = (this.registry = this.given ?? prom.register);
    const registers = [registry];
    const readings = new MetricReadings(this.monitor, this.clock, this.logger, this.codeQueues);
    const enqueued = new prom.Counter({
      name: 'durable_jobs_enqueued_total',
      help: 'Jobs written by enqueues on this instance',
      labelNames: ['queue', 'job'] as const,
      registers,
    });
    const attempts = new prom.Counter({
      name: 'durable_jobs_attempts_total',
      help: 'Job attempts ended by this instance, by outcome',
      labelNames: ['queue', 'job', 'outcome'] as const,
      registers,
    });
    const duration = new prom.Histogram({
      name: 'durable_jobs_attempt_duration_seconds',
      help: 'Job attempts on this instance, from handler start to outcome',
      labelNames: ['queue', 'job'] as const,
      buckets: DURATION_BUCKETS,
      registers,
    });
    const wait = new prom.Histogram({
      name: 'durable_jobs_queue_wait_seconds',
      help: 'Attempts started on this instance, from when each became due (run_at) to its handler start',
      labelNames: ['queue'] as const,
      buckets: WAIT_BUCKETS,
      registers,
    });
    new prom.Gauge({
      name: 'durable_jobs_jobs',
      help: 'Jobs in a live state, by queue (system-wide, read when scraped)',
      labelNames: ['queue', 'state'] as const,
      registers,
      async collect() {
        const values = await readings.jobs();
        // A failed read leaves the last values standing (the readings logged why).
        if (!values) return;
        this.reset();
        for (const { queue, state, value } of values) this.set({ queue, state }, value);
      },
    });
    new prom.Gauge({
      name: 'durable_jobs_queue_lag_seconds',
      help: "Seconds the queue's oldest due job has been due, 0 when none is (system-wide, read when scraped)",
      labelNames: ['queue'] as const,
      registers,
      async collect() {
        const values = await readings.lag();
        if (!values) return;
        this.reset();
        for (const { queue, value } of values) this.set({ queue }, value);
      },
    });
    new prom.Gauge({
      name: 'durable_jobs_workers_alive',
      help: 'Worker processes running and beating within their lease (system-wide, read when scraped)',
      registers,
      async collect() {
        const alive = await readings.workersAlive();
        if (alive !== null) this.set(alive);
      },
    });
    this.names.push(
      'durable_jobs_enqueued_total',
      'durable_jobs_attempts_total',
      'durable_jobs_attempt_duration_seconds',
      'durable_jobs_queue_wait_seconds',
      'durable_jobs_jobs',
      'durable_jobs_queue_lag_seconds',
      'durable_jobs_workers_alive',
    );
    this.unsubscribe.push(
      this.events.onEnqueued((event) => {
        for (const { queue, job, n } of readings.tally(event).values()) enqueued.inc({ queue, job }, n);
      }),
      this.events.onAttemptStarted(({ job, waitMs }) => {
        readings.note(job.queue);
        if (waitMs !== null) wait.observe({ queue: job.queue }, waitMs / 1000);
      }),
      this.events.onAttemptEnded(({ job, outcome, durationMs }) => {
        readings.note(job.queue);
        attempts.inc({ queue: job.queue, job: job.name, outcome });
        duration.observe({ queue: job.queue, job: job.name }, durationMs / 1000);
      }),
    );
  }

  /** The metrics leave the registry with the app, so a new app in the same process can register them again. */
  onModuleDestroy(): void {
    for (const off of this.unsubscribe.splice(0)) off();
    for (const name of this.names.splice(0)) this.registry?.removeSingleMetric(name);
  }
}

/** prom-client, or a JobsError that says how to get it. */
async function loadPromClient(): Promise<Prom> {
  try {
    const loaded = (await import('prom-client')) as Prom & { default?: Prom };
    // Its CommonJS build reaches an ES module as the default export on some loaders.
    return loaded.Counter ? loaded : loaded.default!;
  } catch (error) {
    throw new JobsError(
      `JobsMetrics needs the package prom-client, which could not be loaded (${(error as Error).message}). Potential fix: npm install prom-client, or use JobsOtelMetrics for OpenTelemetry instead.`,
    );
  }
}
