import type { JobRegistry } from '../discovery/job-registry.js';
import type { QueueOptions, RateLimit } from '../model/index.js';
import type { CodeLimits } from '../storage/queues/queue-storage.interface.js';
import { rateKeyOf } from './rate-limit-declarations.js';

/**
 * The limits an app's code declares: JobsModule's `queues`, and each `@Job`'s own concurrency
 * and rate. A `@Job` whose `rateLimit` names an undeclared key fails the start. A queue whose
 * names have limits gets a row even when `queues` leaves it out: the claim reads a name's limits
 * through its queue's row.
 */
export function codeLimitsOf(
  registry: JobRegistry,
  queues: Readonly<Record<string, QueueOptions>>,
  keyed: Readonly<Record<string, RateLimit>>,
): CodeLimits[] {
  const declared: CodeLimits[] = Object.entries(queues).map(([queue, o]) => ({
    queue,
    declared: true,
    concurrency: o.concurrency ?? null,
    rateLimit: o.rateLimit ?? null,
    groupMinInflight: o.groups?.minInflight,
    groupShare: o.groups?.shareThreshold,
    groupConcurrency: o.groups?.concurrency,
    groupRateLimit: o.groups?.rateLimit,
  }));
  for (const job of registry.all()) {
    const { concurrency, rateLimit } = job.declared;
    if (concurrency === undefined && rateLimit === undefined) continue;
    const rateKey = rateKeyOf(job, keyed);
    const queue = job.options.queue;
    if (!declared.some((d) => d.queue === queue && !d.name)) {
      declared.push({ queue, declared: false, concurrency: null, rateLimit: null });
    }
    const own = rateKey === undefined ? (rateLimit as RateLimit | undefined) : undefined;
    declared.push({ queue, name: job.name, concurrency: concurrency ?? null, rateLimit: own ?? null, rateKey });
  }
  return declared;
}
