import { databaseCall, type LimitInfo, type QueueInfo, type RateLimit } from '../model/index.js';
import type { MonitoringStorage } from '../storage/monitoring/monitoring-storage.interface.js';
import type { Limits, QueueStorage } from '../storage/queues/queue-storage.interface.js';

/** Where a queue list is read: the primary's storages (JobQueues) or the monitoring reads (JobsAdmin). */
export interface QueueListSource {
  queues: Pick<QueueStorage, 'configs' | 'groupLimits'>;
  monitoring: Pick<MonitoringStorage, 'counts'>;
}

/** Every queue the code or the database knows, with its settings, where each came from, and its live counts. */
export async function listQueues(
  where: string,
  source: QueueListSource,
  codeQueues: readonly string[],
  now: Date,
): Promise<QueueInfo[]> {
  const [configs, counts, groupLimits] = await databaseCall(where, () =>
    Promise.all([source.queues.configs(), source.monitoring.counts(now, null), source.queues.groupLimits()]),
  );
  const byQueue = new Map(configs.map((c) => [c.queue, c]));
  const names = new Set<string>([...byQueue.keys(), ...codeQueues, ...counts.map((c) => c.queue)]);
  return [...names].sort().map((name) => {
    const config = byQueue.get(name);
    const count = (state: string) => counts.find((c) => c.queue === name && c.state === state)?.n ?? 0;
    return {
      name,
      paused: config?.paused ?? false,
      ...limitInfo(config),
      service: config?.service ?? null,
      jobs: (config?.names ?? []).map((n) => ({ name: n.name, ...limitInfo(n), service: n.service })),
      groups: {
        concurrency: config?.groupConcurrency ?? null,
        rateLimit: config?.groupRateLimit ?? null,
        overrides: groupLimits
          .filter((g) => g.queue === name)
          .map((g) => ({ group: g.group, concurrency: g.concurrency })),
      },
      active: count('active'),
      queued: count('queued'),
      scheduled: count('scheduled'),
      waiting: count('waiting'),
    };
  });
}

function limitInfo(limits: Limits | undefined): { concurrency: LimitInfo<number>; rateLimit: LimitInfo<RateLimit> } {
  return {
    concurrency: { value: limits?.concurrency ?? null, source: limits?.concurrencySource ?? 'code' },
    rateLimit: { value: limits?.rateLimit ?? null, source: limits?.rateSource ?? 'code' },
  };
}
