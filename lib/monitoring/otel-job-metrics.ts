import { Inject, Injectable, Logger, Optional, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type * as OpenTelemetry from '@opentelemetry/api';
import { Clock, CODE_QUEUES, JobEvents, JobsError, type CodeQueues } from '../model/index.js';
import { JobsMonitor } from './jobs-monitor.service.js';
import { MetricReadings, type QueueValue } from './metric-readings.js';

type Api = typeof OpenTelemetry;

/** Provide an OpenTelemetry Meter under this token to use it instead of the global provider's `nestjs-durable-jobs` meter. */
export const JOBS_METER = Symbol('JOBS_METER');

/** The same buckets as the Prometheus metrics', in seconds. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const WAIT_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

/** What the last successful reads gave: a failed read reports them again rather than nothing. */
interface LastReadings {
  jobs: Array<QueueValue & { state: string }>;
  lag: QueueValue[];
  alive: number | null;
}

/**
 * The metrics of `JobsMetrics` as OpenTelemetry instruments (import from
 * 'nestjs-durable-jobs/metrics'; @opentelemetry/api is an optional peer,
 * loaded when the app starts), on the meter `nestjs-durable-jobs` of the
 * app's global MeterProvider, or on the Meter provided under `JOBS_METER`.
 * The app's SDK exports them; through its Prometheus exporter they keep the
 * Prometheus names (`durable_jobs.queue.lag` in seconds is
 * `durable_jobs_queue_lag_seconds`).
 *
 * - `durable_jobs.enqueued` (counter, `{queue, job}`)
 * - `durable_jobs.attempts` (counter, `{queue, job, outcome}`)
 * - `durable_jobs.attempt.duration` (histogram, s, `{queue, job}`)
 * - `durable_jobs.queue.wait` (histogram, s, `{queue}`): due time to handler start
 * - `durable_jobs.jobs` (observable gauge, `{queue, state}`), `durable_jobs.queue.lag` (observable
 *   gauge, s, `{queue}`) and `durable_jobs.workers.alive` (observable gauge): read from the database
 *   at each collection, system-wide
 */
@Injectable()
export class JobsOtelMetrics implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('JobsOtelMetrics');
  private readonly unsubscribe: Array<() => void> = [];

  constructor(
    private readonly monitor: JobsMonitor,
    private readonly events: JobEvents,
    private readonly clock: Clock,
    @Optional() @Inject(JOBS_METER) private readonly given?: OpenTelemetry.Meter,
    @Optional() @Inject(CODE_QUEUES) private readonly codeQueues?: CodeQueues,
  ) {}

  /** Called by Nest at start: creates the instruments and starts counting this instance's enqueues and attempts. */
  async onModuleInit(): Promise<void> {
    const meter = this.given ?? (await loadOtelApi()).metrics.getMeter('nestjs-durable-jobs');
    const readings = new MetricReadings(this.monitor, this.clock, this.logger, this.codeQueues);
    const enqueued = meter.createCounter('durable_jobs.enqueued', {
      description: 'Jobs written by enqueues on this instance',
      unit: '{job}',
    });
    const attempts = meter.createCounter('durable_jobs.attempts', {
      description: 'Job attempts ended by this instance, by outcome',
      unit: '{attempt}',
    });
    const duration = meter.createHistogram('durable_jobs.attempt.duration', {
      description: 'Job attempts on this instance, from handler start to outcome',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
    const wait = meter.createHistogram('durable_jobs.queue.wait', {
      description: 'Attempts started on this instance, from when each became due (run_at) to its handler start',
      unit: 's',
      advice: { explicitBucketBoundaries: WAIT_BUCKETS },
    });
    const jobs = meter.createObservableGauge('durable_jobs.jobs', {
      description: 'Jobs in a live state, by queue (system-wide, read when collected)',
      unit: '{job}',
    });
    const lag = meter.createObservableGauge('durable_jobs.queue.lag', {
      description: "Seconds the queue's oldest due job has been due, 0 when none is (system-wide, read when collected)",
      unit: 's',
    });
    const alive = meter.createObservableGauge('durable_jobs.workers.alive', {
      description: 'Worker processes running and beating within their lease (system-wide, read when collected)',
      unit: '{worker}',
    });
    const last: LastReadings = { jobs: [], lag: [], alive: null };
    // One callback for the three gauges: their reads go out together, once per collection.
    const observe: OpenTelemetry.BatchObservableCallback = async (result) => {
      const [j, l, a] = await Promise.all([readings.jobs(), readings.lag(), readings.workersAlive()]);
      last.jobs = j ?? last.jobs;
      last.lag = l ?? last.lag;
      last.alive = a ?? last.alive;
      for (const { queue, state, value } of last.jobs) result.observe(jobs, value, { queue, state });
      for (const { queue, value } of last.lag) result.observe(lag, value, { queue });
      if (last.alive !== null) result.observe(alive, last.alive);
    };
    const observables = [jobs, lag, alive];
    meter.addBatchObservableCallback(observe, observables);
    this.unsubscribe.push(
      () => meter.removeBatchObservableCallback(observe, observables),
      this.events.onEnqueued((event) => {
        for (const { queue, job, n } of readings.tally(event).values()) enqueued.add(n, { queue, job });
      }),
      this.events.onAttemptStarted(({ job, waitMs }) => {
        readings.note(job.queue);
        if (waitMs !== null) wait.record(waitMs / 1000, { queue: job.queue });
      }),
      this.events.onAttemptEnded(({ job, outcome, durationMs }) => {
        readings.note(job.queue);
        attempts.add(1, { queue: job.queue, job: job.name, outcome });
        duration.record(durationMs / 1000, { queue: job.queue, job: job.name });
      }),
    );
  }

  /**
   * Stops counting and observing with the app. OpenTelemetry has no way to remove an instrument:
   * the counters stay on the meter, and a new app in the same process adds to them.
   */
  onModuleDestroy(): void {
    for (const off of this.unsubscribe.splice(0)) off();
  }
}

/** `load` is the import, replaceable so the missing-package error can be tested. */
export async function loadOtelApi(load: () => Promise<Api> = () => import('@opentelemetry/api')): Promise<Api> {
  try {
    return await load();
  } catch (error) {
    throw new JobsError(
      `JobsOtelMetrics needs the package @opentelemetry/api, which could not be loaded (${(error as Error).message}). Potential fix: npm install @opentelemetry/api and register an OpenTelemetry SDK with a MeterProvider, or provide a Meter under JOBS_METER.`,
    );
  }
}
