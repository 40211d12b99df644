import type { ArgsOf, Statement } from '../sql/named-params.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import type { StorageContext } from '../sql/storage-context.js';
import type {
  CodeLimits,
  GroupLimit,
  LimitChange,
  Limits,
  LimitSource,
  QueueConfig,
  QueueStorage,
  RateLimit,
  RateLimitConfig,
} from './queue-storage.interface.js';
import { queueStatements, type QueueStatements } from './queue-statements.js';

type Row = Record<string, unknown>;

export class PostgresQueueStorage implements QueueStorage {
  private readonly sql: QueueStatements;
  private readonly pool: SqlExecutor;
  private readonly channel: string;

  constructor(context: StorageContext) {
    this.sql = queueStatements(context.schema);
    this.pool = context.executor;
    this.channel = context.channel;
  }

  private run<K extends keyof QueueStatements>(key: K, args: ArgsOf<QueueStatements[K]>): Promise<Row[]> {
    return (this.sql[key] as Statement<ArgsOf<QueueStatements[K]>>).run(this.pool, args);
  }

  async hasJobs(queue: string): Promise<boolean> {
    return (await this.run('hasJobs', { queue }))[0]!['found'] === true;
  }

  async configs(): Promise<QueueConfig[]> {
    return (await this.run('configs', {})).map((r) => ({
      queue: r.queue as string,
      ...limitsOf(r),
      paused: r.paused as boolean,
      hasGroups: r.has_groups as boolean,
      hasSerial: r.has_serial as boolean,
      groupMinInflight: r.group_min_inflight as number,
      groupShare: r.group_share as number,
      groupConcurrency: (r.group_concurrency as number | null) ?? null,
      groupRateLimit:
        r.group_rate_max == null ? null : { max: r.group_rate_max as number, per: r.group_rate_per_ms as number },
      groupLimits: r.group_limits as number,
      names: (r.names as Row[]).map((n) => ({
        name: n.name as string,
        ...limitsOf(n),
        rateKey: (n.rate_key as string | null) ?? null,
      })),
    }));
  }

  async setPaused(queue: string, paused: boolean, now: Date): Promise<void> {
    await this.run('setPaused', { queue, paused, now, channel: this.channel });
  }

  async setLimits(queue: string, name: string | null, change: LimitChange, now: Date): Promise<void> {
    const limits = {
      queue,
      setsConcurrency: change.concurrency !== undefined,
      setsRate: change.rateLimit !== undefined,
      channel: this.channel,
      concurrency: change.concurrency ?? null,
      rateMax: change.rateLimit?.max ?? null,
      ratePer: change.rateLimit?.per ?? null,
      now,
    };
    if (name === null) await this.run('setQueueLimits', limits);
    else await this.run('setNameLimits', { ...limits, name });
  }

  async groupLimits(): Promise<GroupLimit[]> {
    return (await this.run('groupLimits', {})).map((r) => ({
      queue: r.queue as string,
      group: r.group_key as string,
      concurrency: r.concurrency as number,
    }));
  }

  async setGroupLimit(queue: string, group: string, concurrency: number | null, now: Date): Promise<void> {
    await this.run('setGroupLimit', { queue, group, concurrency, now, channel: this.channel });
  }

  async rateLimits(): Promise<RateLimitConfig[]> {
    return (await this.run('rateLimits', {})).map((r) => {
      const { rateLimit, rateSource, service } = limitsOf(r);
      return { key: r.key as string, rateLimit, rateSource, service, jobs: r.jobs as RateLimitConfig['jobs'] };
    });
  }

  async setRateLimit(key: string, limit: RateLimit | null, now: Date): Promise<void> {
    await this.run('setRateLimit', {
      key,
      max: limit?.max ?? null,
      per: limit?.per ?? null,
      now,
      channel: this.channel,
    });
  }
}

function limitsOf(r: Row): Limits {
  return {
    concurrency: (r.concurrency as number | null) ?? null,
    concurrencySource: r.concurrency_source as LimitSource,
    rateLimit: r.rate_max == null ? null : { max: r.rate_max as number, per: r.rate_per_ms as number },
    rateSource: r.rate_source as LimitSource,
    service: (r.code_service as string | null) ?? null,
  };
}

/** syncCode's and codeConflicts' declarations (`limits`) and keyed limits (`keys`), as JSON. */
export function encodeCodeLimits(
  declared: readonly CodeLimits[],
  keys: Readonly<Record<string, RateLimit>>,
): { limits: string; keys: string } {
  const rows = declared.map((d) => ({
    queue: d.queue,
    name: d.name ?? null,
    declared: d.declared ?? false,
    concurrency: d.concurrency,
    rate: d.rateLimit,
    min_inflight: d.groupMinInflight ?? null,
    share: d.groupShare ?? null,
    group_concurrency: d.groupConcurrency ?? null,
    group_rate: d.groupRateLimit ?? null,
    rate_key: d.rateKey ?? null,
  }));
  const keyed = Object.entries(keys).map(([key, rate]) => ({ key, rate }));
  return { limits: JSON.stringify(rows), keys: JSON.stringify(keyed) };
}
