import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import {
  answerWithin,
  checkOptions,
  describeValue,
  JobsDatabaseError,
  JobsError,
  optionShape,
} from '../model/index.js';
import { JobsMonitor } from './jobs-monitor.service.js';

/** What `isHealthy()` checks: how many due jobs count as degraded, and how long the database may take to answer. */
export interface JobsHealthOptions {
  /**
   * Report `degraded` (HTTP 200, status "degraded") when more jobs than this
   * are due and unclaimed, across queues. Default: no limit.
   */
  maxQueued?: number;
  /** How long the database may take to answer before the check is `down`, in ms; default 3000. */
  timeout?: number;
  /**
   * Report `degraded` when the monitoring replica (`monitoring.replica`) is
   * further behind the primary than this, in ms, or does not answer.
   * Default: the replica is not looked at.
   */
  maxReplicaLag?: number;
}

const HEALTH_SHAPE = optionShape<JobsHealthOptions>({ maxQueued: true, timeout: true, maxReplicaLag: true });

/**
 * A @nestjs/terminus indicator (import it from 'nestjs-durable-jobs/health',
 * and TerminusModule in the health module). It is meant for readiness and
 * alerting, not liveness: a dead worker elsewhere makes it `down` here too.
 *
 * - `down`: the database did not answer in time, or jobs are due in a queue
 *   that no alive worker serves (they would wait forever).
 * - `degraded`: more jobs are due than `maxQueued`, or this instance's
 *   worker met jobs sealed with an encryption key its keyring lacks
 *   (`missingKeys`: it hands them back for an instance that has the key),
 *   or the monitoring replica is behind by more than `maxReplicaLag` (or
 *   does not answer): dashboards show old data, jobs still run.
 * - `up` otherwise. Each result carries the live counts and the number of
 *   alive workers, read on the primary (a replica's view could strand a
 *   queue that is already drained), and `replicaLagMs` when it was measured.
 */
@Injectable()
export class JobsHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly monitor: JobsMonitor,
  ) {}

  /**
   * Checks the jobs system and reports it under `key` (default `jobs`): `down`, `degraded` or `up` as
   * described above, with the live counts (`queued`, `scheduled`, `active`, `waiting`) and
   * `aliveWorkers`. A database that fails or does not answer within `timeout` is `down`, not an
   * error. Bad options (an unknown key, a `maxReplicaLag` that is not a whole number >= 0, or
   * `maxReplicaLag` without a `monitoring.replica`) throw a JobsError.
   */
  async isHealthy<const Key extends string = 'jobs'>(
    key: Key = 'jobs' as Key,
    options: JobsHealthOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    options = checkOptions('JobsHealthIndicator.isHealthy()', options, '{ maxQueued: 1000 }', HEALTH_SHAPE) ?? {};
    const indicator = this.health.check(key);
    const timeout = options.timeout ?? 3000;
    const maxLag = checkMaxLag(options.maxReplicaLag);
    const lag = maxLag === undefined ? null : this.lagWithin(timeout);
    // Read alongside the counts; a down database returns first and leaves it unread.
    lag?.catch(() => undefined);
    let state;
    try {
      state = await answerWithin(
        Promise.all([
          this.monitor.counts({ finished: false, fromPrimary: true }),
          this.monitor.workers({ stoppedWithin: 0, fromPrimary: true }),
        ]),
        timeout,
      );
    } catch (error) {
      return indicator.down({ message: `The jobs database is unreachable: ${(error as Error).message}` });
    }
    const [counts, workers] = state;
    const alive = workers.filter((w) => w.alive);
    const { queued, scheduled, active, waiting } = counts.total;
    const replica = lag && (await lag);
    const data = {
      queued,
      scheduled,
      active,
      waiting,
      aliveWorkers: alive.length,
      ...(replica && 'ms' in replica ? { replicaLagMs: replica.ms } : {}),
    };
    const served = (queue: string) => alive.some((w) => w.queues.length === 0 || w.queues.includes(queue));
    const stranded = Object.entries(counts.queues)
      .filter(([queue, c]) => c.queued > 0 && !served(queue))
      .map(([queue]) => queue)
      .sort();
    if (stranded.length) {
      return indicator.down({
        ...data,
        stranded,
        message: `Jobs are due in ${stranded.map((q) => `"${q}"`).join(', ')} and no alive worker serves ${stranded.length > 1 ? 'them' : 'it'}`,
      });
    }
    const { missingKeys } = this.monitor.encryption();
    if (missingKeys.length) {
      return indicator.degraded({
        ...data,
        missingKeys,
        message: `This instance lacks encryption key(s) ${missingKeys.map((k) => `'${k}'`).join(', ')} that jobs are encrypted with; it hands those jobs back for an instance that has them`,
      });
    }
    if (options.maxQueued !== undefined && queued > options.maxQueued) {
      return indicator.degraded({ ...data, message: `${queued} jobs are due, over maxQueued ${options.maxQueued}` });
    }
    if (replica && 'error' in replica) {
      return indicator.degraded({ ...data, message: `The monitoring replica did not answer: ${replica.error}` });
    }
    if (replica && maxLag !== undefined && (replica.ms === null || replica.ms > maxLag)) {
      const behind = replica.ms === null ? 'behind by an unknown time' : `${replica.ms} ms behind the primary`;
      const paused = replica.replayPaused ? ' (its replay is paused)' : '';
      return indicator.degraded({
        ...data,
        message: `The monitoring replica is ${behind}${paused}, over maxReplicaLag ${maxLag} ms: dashboards show older data`,
      });
    }
    return indicator.up(data);
  }

  /** The replica's lag, or why it could not be measured within `timeout`. */
  private async lagWithin(timeout: number): Promise<{ ms: number | null; replayPaused: boolean } | { error: string }> {
    try {
      const lag = await answerWithin(this.monitor.replicaLag(), timeout);
      if (!lag) {
        throw new JobsError(
          'JobsHealthIndicator.isHealthy(): "maxReplicaLag" is set, but JobsModule has no "monitoring.replica". Potential fix: leave maxReplicaLag out, or set monitoring: { replica }.',
        );
      }
      return { ms: lag.ms, replayPaused: lag.replayPaused };
    } catch (error) {
      if (error instanceof JobsError && !(error instanceof JobsDatabaseError)) throw error;
      return { error: (error as Error).message };
    }
  }
}

function checkMaxLag(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new JobsError(
      `JobsHealthIndicator.isHealthy(): "maxReplicaLag" must be a whole number of ms (>= 0), got ${describeValue(value)}. Potential fix: { maxReplicaLag: 30_000 }.`,
    );
  }
  return value;
}
