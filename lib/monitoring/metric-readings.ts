import type { Clock, CodeQueues, JobsEnqueued } from '../model/index.js';
import type { JobsMonitor } from './jobs-monitor.service.js';

/** The live states `durable_jobs_jobs` reports, each queue with all four. */
export const LIVE_STATES = ['waiting', 'queued', 'scheduled', 'active'] as const;

/** Where a failed read is told; the metrics pass a Nest Logger. */
interface ReadingsLogger {
  warn(message: string): void;
}

/** One value of a queue's series, as both metrics front ends set it. */
export interface QueueValue {
  queue: string;
  value: number;
}

/**
 * The figures the metrics read from the database when scraped (system-wide:
 * every instance reports the same), shared by the Prometheus and the
 * OpenTelemetry metrics. A queue once seen keeps its series at 0 when it
 * empties: a series that vanished reads as "no data" rather than "nothing
 * waiting", so graphs and alerts on it would go blind as a queue drains. A
 * read that fails resolves to null and logs why: a scrape must not fail with
 * the database.
 */
export class MetricReadings {
  private readonly known = new Set<string>();

  constructor(
    private readonly monitor: JobsMonitor,
    private readonly clock: Clock,
    private readonly logger: ReadingsLogger,
    /** Read at each scrape: the registry of jobs fills during the app's init, after the metrics start. */
    private readonly codeQueues: CodeQueues = () => [],
  ) {}

  /** A queue this instance met (an attempt ended or a job enqueued here): its series appear from now on. */
  note(queue: string): void {
    this.known.add(queue);
  }

  /** The queues of jobs an enqueue wrote, and how many of each job name: counted per pair, not per job. */
  tally(event: JobsEnqueued): Map<string, { queue: string; job: string; n: number }> {
    const counts = new Map<string, { queue: string; job: string; n: number }>();
    for (const { queue, name } of event.jobs) {
      const key = `${queue}\u0000${name}`;
      const entry = counts.get(key);
      if (entry) entry.n++;
      else {
        counts.set(key, { queue, job: name, n: 1 });
        this.known.add(queue);
      }
    }
    return counts;
  }

  /** Each known queue's live jobs by state, 0 for an empty state; null when the read failed. */
  async jobs(): Promise<Array<QueueValue & { state: (typeof LIVE_STATES)[number] }> | null> {
    try {
      const { queues } = await this.monitor.counts({ finished: false });
      this.learn(Object.keys(queues));
      const values: Array<QueueValue & { state: (typeof LIVE_STATES)[number] }> = [];
      for (const queue of this.known) {
        for (const state of LIVE_STATES) values.push({ queue, state, value: queues[queue]?.[state] ?? 0 });
      }
      return values;
    } catch (error) {
      this.logger.warn(`Reading job counts failed: ${(error as Error).message}`);
      return null;
    }
  }

  /**
   * Each known queue's lag in seconds: how long its oldest due job has been due, by the app's clock;
   * 0 when nothing is due. Null when the read failed.
   */
  async lag(): Promise<QueueValue[] | null> {
    try {
      const lags = await this.monitor.queueLag();
      const now = this.clock.now().getTime();
      const oldest = new Map<string, Date | null>(lags.map((l) => [l.queue, l.oldestDueAt]));
      this.learn(oldest.keys());
      return [...this.known].map((queue) => {
        const due = oldest.get(queue);
        return { queue, value: due ? Math.max(0, now - due.getTime()) / 1000 : 0 };
      });
    } catch (error) {
      this.logger.warn(`Reading queue lag failed: ${(error as Error).message}`);
      return null;
    }
  }

  /** Worker processes alive (running and beating within their lease); null when the read failed. */
  async workersAlive(): Promise<number | null> {
    try {
      return (await this.monitor.workers({ stoppedWithin: 0 })).filter((w) => w.alive).length;
    } catch (error) {
      this.logger.warn(`Reading workers failed: ${(error as Error).message}`);
      return null;
    }
  }

  private learn(queues: Iterable<string>): void {
    for (const queue of this.codeQueues()) this.known.add(queue);
    for (const queue of queues) this.known.add(queue);
  }
}
