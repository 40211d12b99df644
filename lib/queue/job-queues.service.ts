import { Inject, Injectable } from '@nestjs/common';
import { JobRegistry } from '../discovery/job-registry.js';
import {
  checkInteger,
  checkKey,
  checkLimits,
  checkName,
  checkOptions,
  Clock,
  databaseCall,
  INT4_MAX,
  JobsError,
  JobsNotFoundError,
  optionShape,
  RATE_LIMIT_SHAPE,
  type QueueInfo,
  type QueueOptions,
  type RateLimit,
  type RateLimitInfo,
} from '../model/index.js';
import { MONITORING_STORAGE, type MonitoringStorage } from '../storage/monitoring/monitoring-storage.interface.js';
import { QUEUE_STORAGE, type QueueConfig, type QueueStorage } from '../storage/queues/queue-storage.interface.js';
import { listQueues } from './queue-list.js';
import { RATE_LIMIT_DECLARATIONS } from './rate-limit-declarations.js';

/** JobsModule's `queues`, validated. */
export const QUEUE_DECLARATIONS = Symbol('QUEUE_DECLARATIONS');

/** A change of limits: a field left out keeps its value, null removes the limit. */
export interface LimitsChange {
  /** At most this many jobs running at once, across instances: an integer >= 1, or null for no limit. */
  concurrency?: number | null;
  /** At most `max` job starts in any window of `per` ms, across instances, or null for no limit. */
  rateLimit?: RateLimit | null;
}

/** A change of one group's own limits: null removes the group's own limit, so the queue's default applies. */
export interface GroupLimitsChange {
  /** At most this many of the group's jobs running at once, across instances: an integer >= 1, or null. */
  concurrency: number | null;
}

/** Whose limits `setLimits()` changes: the queue's, or one job name's in it. */
export interface SetLimitsOptions {
  /** A job name in the queue, to change that name's limits instead of the queue's. */
  job?: string;
}

const LIMITS_SHAPE = optionShape<LimitsChange>({ concurrency: true, rateLimit: RATE_LIMIT_SHAPE });
const SET_LIMITS_SHAPE = optionShape<SetLimitsOptions>({ job: true });
const GROUP_LIMITS_SHAPE = optionShape<GroupLimitsChange>({ concurrency: true });

/**
 * Queues as operators steer them: pause and resume, change limits at run
 * time, and see each queue's limits (and where each came from), whether it
 * is paused, and its live counts. Every change is stored and announced, so
 * it reaches every instance within a second (at once through NOTIFY, or at
 * the next poll).
 */
@Injectable()
export class JobQueues {
  constructor(
    @Inject(QUEUE_STORAGE) private readonly storage: QueueStorage,
    @Inject(MONITORING_STORAGE) private readonly monitoring: MonitoringStorage,
    private readonly registry: JobRegistry,
    private readonly clock: Clock,
    @Inject(QUEUE_DECLARATIONS) private readonly declared: Readonly<Record<string, QueueOptions>>,
    @Inject(RATE_LIMIT_DECLARATIONS) private readonly keyed: Readonly<Record<string, RateLimit>>,
  ) {}

  /** Running jobs finish; queued ones stay queued until resume(); enqueue goes on working. */
  async pause(queue: string): Promise<void> {
    const name = await this.known('pause', queue);
    await databaseCall(`JobQueues.pause('${name}')`, () => this.storage.setPaused(name, true, this.clock.now()));
  }

  /**
   * Every instance claims from the queue again. A queue nobody knows (no handler serves it, no
   * declaration, no job) throws a JobsNotFoundError.
   */
  async resume(queue: string): Promise<void> {
    const name = await this.known('resume', queue);
    await databaseCall(`JobQueues.resume('${name}')`, () => this.storage.setPaused(name, false, this.clock.now()));
  }

  /**
   * Changes a queue's limits (or, with `job`, one job name's in it) at run
   * time; a field left out keeps its value, `null` removes the limit. The
   * change holds until the code declares a different value for the field.
   */
  async setLimits(queue: string, limits: LimitsChange, options: SetLimitsOptions = {}): Promise<void> {
    const name = await this.known('setLimits', queue);
    const where = `JobQueues.setLimits('${name}')`;
    const change = checkLimits(where, checkOptions(where, limits, '{ concurrency: 5 }', LIMITS_SHAPE) ?? {});
    const job = checkOptions(where, options, "{ job: 'send-receipt' }", SET_LIMITS_SHAPE)?.job;
    if (job !== undefined) checkName(where, 'job', job, 'send-receipt');
    if (change.concurrency === undefined && change.rateLimit === undefined) {
      throw new JobsError(
        `${where}: nothing to change. Potential fix: pass { concurrency } and/or { rateLimit } (null removes one).`,
      );
    }
    await databaseCall(where, () => this.storage.setLimits(name, job ?? null, change, this.clock.now()));
  }

  /**
   * Sets one group's own concurrency limit in a queue at run time, across
   * instances: at most that many of the group's jobs run at once, in place
   * of the queue's default (`groups.concurrency`); `null` removes it.
   */
  async setGroupLimits(queue: string, group: string, limits: GroupLimitsChange): Promise<void> {
    const name = await this.known('setGroupLimits', queue);
    const where = `JobQueues.setGroupLimits('${name}')`;
    const key = checkKey(where, 'group', group, 'tenant-42');
    const change = checkOptions(where, limits, '{ concurrency: 2 }', GROUP_LIMITS_SHAPE);
    if (change?.concurrency === undefined) {
      throw new JobsError(
        `${where}: no "concurrency" for group "${key}". Potential fix: { concurrency: 2 }, or { concurrency: null } to remove the group's own limit.`,
      );
    }
    const concurrency =
      change.concurrency === null ? null : checkInteger(where, 'concurrency', change.concurrency, 1, INT4_MAX, 2);
    await databaseCall(where, () => this.storage.setGroupLimit(name, key, concurrency, this.clock.now()));
  }

  /** Every queue known here or in the database, with its settings and live counts (read on the primary). */
  list(): Promise<QueueInfo[]> {
    const source = { queues: this.storage, monitoring: this.monitoring };
    return listQueues('JobQueues.list()', source, this.codeQueues(), this.clock.now());
  }

  /** The keyed rate limits (JobsModule's `rateLimits`), each with where its value came from and the jobs sharing it. */
  async rateLimits(): Promise<RateLimitInfo[]> {
    const stored = await databaseCall('JobQueues.rateLimits()', () => this.storage.rateLimits());
    const byKey = new Map(stored.map((k) => [k.key, k]));
    const keys = new Set([...byKey.keys(), ...Object.keys(this.keyed)]);
    return [...keys].sort().map((key) => {
      const k = byKey.get(key);
      return {
        key,
        rateLimit: { value: k ? k.rateLimit : this.keyed[key]!, source: k?.rateSource ?? 'code' },
        service: k?.service ?? null,
        jobs: k?.jobs ?? [],
      };
    });
  }

  /**
   * Changes a keyed rate limit at run time on every instance; `null`
   * removes it (the jobs referring to it start unlimited by it). The change
   * holds until the code declares a different value for the key.
   */
  async setRateLimit(key: string, limit: RateLimit | null): Promise<void> {
    const where = 'JobQueues.setRateLimit()';
    const name = checkName(where, 'key', key, 'partner-api');
    if (limit === undefined) {
      throw new JobsError(
        `${where}: no limit given for '${name}'. Potential fix: setRateLimit('${name}', { max: 10, per: 1_000 }), or null to remove it.`,
      );
    }
    const checked = checkLimits(`JobQueues.setRateLimit('${name}')`, { rateLimit: limit }).rateLimit ?? null;
    if (!Object.hasOwn(this.keyed, name)) {
      const stored = await databaseCall(where, () => this.storage.rateLimits());
      if (!stored.some((k) => k.key === name)) {
        throw new JobsNotFoundError(
          `${where}: no rate limit key '${name}' is known (JobsModule's "rateLimits" does not declare it, and no instance stored it). ` +
            `Potential fix: check the key against JobQueues.rateLimits(), or declare it in JobsModule's "rateLimits".`,
        );
      }
    }
    await databaseCall(`JobQueues.setRateLimit('${name}')`, () =>
      this.storage.setRateLimit(name, checked, this.clock.now()),
    );
  }

  private codeQueues(): string[] {
    return [...Object.keys(this.declared), ...this.registry.all().map((j) => j.options.queue)];
  }

  /** A queue this app or the database knows: a typo must not pause a queue nobody uses. */
  private async known(call: string, queue: unknown): Promise<string> {
    const where = `JobQueues.${call}()`;
    const name = checkName(where, 'queue', queue, 'emails');
    if (this.codeQueues().includes(name)) return name;
    const configs = await databaseCall(where, () => this.storage.configs());
    if (configs.some((c: QueueConfig) => c.queue === name)) return name;
    const counts = await databaseCall(where, () => this.monitoring.counts(this.clock.now(), null));
    if (counts.some((c) => c.queue === name)) return name;
    // A tool without the app's handlers (the CLI) knows a queue by its history.
    if (await databaseCall(where, () => this.storage.hasJobs(name))) return name;
    throw new JobsNotFoundError(
      `${where}: no queue "${name}" is known (no handler serves it, JobsModule's "queues" does not declare it, and it holds no jobs). ` +
        `Potential fix: check the name against JobQueues.list(), or declare it in JobsModule's "queues".`,
    );
  }
}
