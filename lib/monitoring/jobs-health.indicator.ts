import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { checkOptions, optionShape } from '../model/index.js';
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
}

const HEALTH_SHAPE = optionShape<JobsHealthOptions>({ maxQueued: true, timeout: true });

/**
 * A @nestjs/terminus indicator (import it from 'nestjs-durable-jobs/health',
 * and TerminusModule in the health module). It is meant for readiness and
 * alerting, not liveness: a dead worker elsewhere makes it `down` here too.
 *
 * - `down`: the database did not answer in time, or jobs are due in a queue
 *   that no alive worker serves (they would wait forever).
 * - `degraded`: more jobs are due than `maxQueued`, or this instance's
 *   worker met jobs sealed with an encryption key its keyring lacks
 *   (`missingKeys`: it hands them back for an instance that has the key).
 * - `up` otherwise. Each result carries the live counts and the number of
 *   alive workers.
 */
@Injectable()
export class JobsHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly monitor: JobsMonitor,
  ) {}

  async isHealthy<const Key extends string = 'jobs'>(
    key: Key = 'jobs' as Key,
    options: JobsHealthOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    options = checkOptions('JobsHealthIndicator.isHealthy()', options, '{ maxQueued: 1000 }', HEALTH_SHAPE) ?? {};
    const indicator = this.health.check(key);
    const timeout = options.timeout ?? 3000;
    let timer: NodeJS.Timeout | undefined;
    let state;
    try {
      state = await Promise.race([
        Promise.all([this.monitor.counts({ finished: false }), this.monitor.workers({ stoppedWithin: 0 })]),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${timeout} ms`)), timeout);
        }),
      ]);
    } catch (error) {
      return indicator.down({ message: `The jobs database is unreachable: ${(error as Error).message}` });
    } finally {
      clearTimeout(timer);
    }
    const [counts, workers] = state;
    const alive = workers.filter((w) => w.alive);
    const { queued, scheduled, active, waiting } = counts.total;
    const data = { queued, scheduled, active, waiting, aliveWorkers: alive.length };
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
    return indicator.up(data);
  }
}
