import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import {
  answerWithin,
  checkOptions,
  describeValue,
  JobsDatabaseError,
  JobsError,
  optionShape,
  type JobCounts,
  type WorkerInfo,
} from '../model/index.js';
import { JobsMonitor } from './jobs-monitor.service.js';

/** What `isHealthy()` checks: how long the database may take to answer, and two checks kept for compatibility. */
export interface JobsHealthOptions {
  /**
   * Report `degraded` (HTTP 200, status "degraded") when more jobs than this
   * are due and unclaimed, across queues. Default: no limit. A system-wide
   * condition: `checkSystem()` reports it as `down`, for alerts.
   */
  maxQueued?: number;
  /** How long the database may take to answer before the check is `down`, in ms; default 3000. */
  timeout?: number;
  /**
   * Report `degraded` when the monitoring replica (`monitoring.replica`) is
   * further behind the primary than this, in ms, or does not answer.
   * Default: the replica is not looked at. `checkSystem()` reports it as `down`.
   */
  maxReplicaLag?: number;
}

/** What `checkSystem()` checks beyond stranded queues and unhandled jobs. */
export interface JobsSystemHealthOptions {
  /** `down` when more jobs than this are due and unclaimed, across queues. Default: no limit. */
  maxQueued?: number;
  /** How long the database may take to answer before the check is `down`, in ms; default 3000. */
  timeout?: number;
  /**
   * `down` when the monitoring replica (`monitoring.replica`) is further
   * behind the primary than this, in ms, or does not answer. Default: the
   * replica is not looked at.
   */
  maxReplicaLag?: number;
}

const HEALTH_SHAPE = optionShape<JobsHealthOptions>({ maxQueued: true, timeout: true, maxReplicaLag: true });
const SYSTEM_SHAPE = optionShape<JobsSystemHealthOptions>({ maxQueued: true, timeout: true, maxReplicaLag: true });

type Lag = { ms: number | null; replayPaused: boolean } | { error: string };

/**
 * Two health indicators for `@nestjs/terminus` (import the class from
 * 'nestjs-durable-jobs/health', and TerminusModule in the health module):
 *
 * - `isHealthy()`, this instance's readiness: `down` only when this
 *   instance cannot do its part, that is its database does not answer in
 *   time, or its worker should run here and does not (not started, stopped,
 *   or its heartbeat older than its lease). Wire it to a readinessProbe.
 *   Other instances' troubles never make it `down`, so one crashed worker
 *   deployment does not take every API pod out of rotation.
 * - `checkSystem()`, the jobs system's alerts: `down` when jobs are due in
 *   a queue no alive worker serves (stranded), when due jobs have a name no
 *   live worker handles (`JobsMonitor.unhandledJobs()`), when more jobs are
 *   due than `maxQueued`, or when the monitoring replica is behind by more
 *   than `maxReplicaLag` (or does not answer). Wire it to an endpoint your
 *   alerting polls, never to a probe.
 *
 * Both read the primary (a replica's view could strand a queue that is
 * already drained) and carry the live counts and the number of alive
 * workers in their details.
 */
@Injectable()
export class JobsHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly monitor: JobsMonitor,
  ) {}

  /**
   * This instance's readiness, under `key` (default `jobs`): `down` when the
   * database fails or does not answer within `timeout` (not an error), or
   * when this instance's worker should run and is not alive; `degraded`
   * (HTTP 200) when this instance's worker met jobs sealed with an
   * encryption key its keyring lacks (`missingKeys`: it hands them back),
   * and, kept for compatibility, over `maxQueued` or `maxReplicaLag`; `up`
   * otherwise. Details: the live counts (`queued`, `scheduled`, `active`,
   * `waiting`), `aliveWorkers`, `worker` (this instance's: `alive`,
   * `disabled`, `not running` or `not beating`), and `replicaLagMs` when
   * measured. Bad options (an unknown key, a `maxReplicaLag` that is not a
   * whole number >= 0, or `maxReplicaLag` without a `monitoring.replica`)
   * throw a JobsError.
   */
  async isHealthy<const Key extends string = 'jobs'>(
    key: Key = 'jobs' as Key,
    options: JobsHealthOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    const where = 'JobsHealthIndicator.isHealthy()';
    options = checkOptions(where, options, '{ timeout: 3000 }', HEALTH_SHAPE) ?? {};
    const indicator = this.health.check(key);
    const timeout = options.timeout ?? 3000;
    const maxLag = checkMaxLag(where, options.maxReplicaLag);
    const lag = maxLag === undefined ? null : this.lagWithin(where, timeout);
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
    const local = this.monitor.localWorker();
    const worker = !local.expected ? 'disabled' : local.alive ? 'alive' : local.running ? 'not beating' : 'not running';
    const replica = lag && (await lag);
    const data = { ...liveData(counts, workers, replica), worker };
    if (worker === 'not running') {
      return indicator.down({ ...data, message: "This instance's jobs worker is not running" });
    }
    if (worker === 'not beating') {
      const since = local.lastHeartbeat ? `since ${local.lastHeartbeat.toISOString()}` : 'yet';
      return indicator.down({
        ...data,
        message: `This instance's jobs worker has not written its heartbeat ${since}: its leases run out`,
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
    const queued = counts.total.queued;
    if (options.maxQueued !== undefined && queued > options.maxQueued) {
      return indicator.degraded({ ...data, message: `${queued} jobs are due, over maxQueued ${options.maxQueued}` });
    }
    const lagProblem = replicaProblem(replica, maxLag);
    if (lagProblem) return indicator.degraded({ ...data, message: lagProblem });
    return indicator.up(data);
  }

  /**
   * The jobs system's alerts, under `key` (default `jobs-system`): `down`
   * when the database does not answer within `timeout`, or with any of
   * `stranded` (queues with due jobs that no alive worker serves),
   * `unhandled` (due jobs whose name no live worker handles, as
   * `JobsMonitor.unhandledJobs()` reads them), more due jobs than
   * `maxQueued`, or a replica behind by more than `maxReplicaLag`; the
   * message names each. `up` otherwise. Details: the live counts,
   * `aliveWorkers`, `stranded`, `unhandled`, and `replicaLagMs` when
   * measured. Bad options throw a JobsError, as for `isHealthy()`.
   */
  async checkSystem<const Key extends string = 'jobs-system'>(
    key: Key = 'jobs-system' as Key,
    options: JobsSystemHealthOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    const where = 'JobsHealthIndicator.checkSystem()';
    options = checkOptions(where, options, '{ maxQueued: 10_000 }', SYSTEM_SHAPE) ?? {};
    const indicator = this.health.check(key);
    const timeout = options.timeout ?? 3000;
    const maxLag = checkMaxLag(where, options.maxReplicaLag);
    const lag = maxLag === undefined ? null : this.lagWithin(where, timeout);
    lag?.catch(() => undefined);
    let state;
    try {
      state = await answerWithin(
        Promise.all([
          this.monitor.counts({ finished: false, fromPrimary: true }),
          this.monitor.workers({ stoppedWithin: 0, fromPrimary: true }),
          this.monitor.unhandledJobs({ fromPrimary: true }),
        ]),
        timeout,
      );
    } catch (error) {
      return indicator.down({ message: `The jobs database is unreachable: ${(error as Error).message}` });
    }
    const [counts, workers, unhandled] = state;
    const replica = lag && (await lag);
    const alive = workers.filter((w) => w.alive);
    const served = (queue: string) => alive.some((w) => w.queues.length === 0 || w.queues.includes(queue));
    const stranded = Object.entries(counts.queues)
      .filter(([queue, c]) => c.queued > 0 && !served(queue))
      .map(([queue]) => queue)
      .sort();
    // A stranded queue's jobs are unhandled too; they are reported once, as the queue.
    const unserved = unhandled.filter((u) => !stranded.includes(u.queue));
    const data = { ...liveData(counts, workers, replica), stranded, unhandled: unserved };
    const problems: string[] = [];
    if (stranded.length) {
      problems.push(
        `Jobs are due in ${stranded.map((q) => `"${q}"`).join(', ')} and no alive worker serves ${stranded.length > 1 ? 'them' : 'it'}`,
      );
    }
    if (unserved.length) {
      problems.push(
        `Due jobs have no live worker that handles their name: ${unserved.map((u) => `"${u.name}" in "${u.queue}" (${u.due})`).join(', ')}`,
      );
    }
    const queued = counts.total.queued;
    if (options.maxQueued !== undefined && queued > options.maxQueued) {
      problems.push(`${queued} jobs are due, over maxQueued ${options.maxQueued}`);
    }
    const lagProblem = replicaProblem(replica, maxLag);
    if (lagProblem) problems.push(lagProblem);
    if (problems.length) return indicator.down({ ...data, message: problems.join('; ') });
    return indicator.up(data);
  }

  /** The replica's lag, or why it could not be measured within `timeout`. */
  private async lagWithin(where: string, timeout: number): Promise<Lag> {
    try {
      const lag = await answerWithin(this.monitor.replicaLag(), timeout);
      if (!lag) {
        throw new JobsError(
          `${where}: "maxReplicaLag" is set, but JobsModule has no "monitoring.replica". Potential fix: leave maxReplicaLag out, or set monitoring: { replica }.`,
        );
      }
      return { ms: lag.ms, replayPaused: lag.replayPaused };
    } catch (error) {
      if (error instanceof JobsError && !(error instanceof JobsDatabaseError)) throw error;
      return { error: (error as Error).message };
    }
  }
}

function checkMaxLag(where: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new JobsError(
      `${where}: "maxReplicaLag" must be a whole number of ms (>= 0), got ${describeValue(value)}. Potential fix: { maxReplicaLag: 30_000 }.`,
    );
  }
  return value;
}

/** The details both checks carry. */
function liveData(counts: JobCounts, workers: WorkerInfo[], replica: Lag | null) {
  const { queued, scheduled, active, waiting } = counts.total;
  return {
    queued,
    scheduled,
    active,
    waiting,
    aliveWorkers: workers.filter((w) => w.alive).length,
    ...(replica && 'ms' in replica ? { replicaLagMs: replica.ms } : {}),
  };
}

/** What is wrong with the replica's lag against `maxLag`, if anything. */
function replicaProblem(replica: Lag | null, maxLag: number | undefined): string | null {
  if (replica && 'error' in replica) return `The monitoring replica did not answer: ${replica.error}`;
  if (replica && maxLag !== undefined && (replica.ms === null || replica.ms > maxLag)) {
    const behind = replica.ms === null ? 'behind by an unknown time' : `${replica.ms} ms behind the primary`;
    const paused = replica.replayPaused ? ' (its replay is paused)' : '';
    return `The monitoring replica is ${behind}${paused}, over maxReplicaLag ${maxLag} ms: dashboards show older data`;
  }
  return null;
}
