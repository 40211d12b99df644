import {
  checkInteger,
  checkLimits,
  checkName,
  checkOptions,
  describeValue,
  INT4_MAX,
  JobsError,
  QUEUE_GROUPS_SHAPE,
  QUEUE_SHAPE,
  recordOf,
  type QueueOptions,
  type RateLimit,
} from '../model/index.js';

const QUEUES_SHAPE = recordOf(QUEUE_SHAPE);

/** JobsModule's `queues`, checked at start: a bad limit fails the boot naming the queue and the fix. */
export function resolveQueueDeclarations(queues: unknown): Record<string, QueueOptions> {
  const given =
    checkOptions('JobsModule "queues"', queues as object, '{ emails: { concurrency: 5 } }', QUEUES_SHAPE) ?? {};
  const out: Record<string, QueueOptions> = {};
  for (const [queue, options] of Object.entries(given)) {
    const where = `JobsModule "queues.${queue}"`;
    checkName('JobsModule "queues"', 'queue', queue, 'emails');
    const o = checkOptions(where, options as QueueOptions, '{ concurrency: 5 }', QUEUE_SHAPE) ?? {};
    const limits = checkLimits(where, o);
    const groups = checkOptions(
      `${where}.groups`,
      o.groups,
      '{ concurrency: 2, rateLimit: { max: 10, per: 1_000 }, minInflight: 2, shareThreshold: 0.5 }',
      QUEUE_GROUPS_SHAPE,
    );
    const share = groups?.shareThreshold;
    if (share !== undefined && (typeof share !== 'number' || !(share > 0 && share <= 1))) {
      throw new JobsError(
        `${where}: "groups.shareThreshold" must be a fraction in (0, 1], got ${String(share)}. Potential fix: groups: { shareThreshold: 0.5 }.`,
      );
    }
    out[queue] = {
      concurrency: limits.concurrency ?? undefined,
      rateLimit: limits.rateLimit ?? undefined,
      groups: groups && {
        concurrency:
          groups.concurrency === undefined
            ? undefined
            : checkInteger(where, 'groups.concurrency', groups.concurrency, 1, INT4_MAX, 2),
        minInflight:
          groups.minInflight === undefined
            ? undefined
            : checkInteger(where, 'groups.minInflight', groups.minInflight, 1, 1_000_000, 2),
        rateLimit: groupRate(where, groups.rateLimit),
        shareThreshold: share,
      },
    };
  }
  return out;
}

/**
 * A queue's `groups.rateLimit`: { max, per }, checked as a queue's own rate limit is, the error
 * naming `groups.rateLimit`.
 */
function groupRate(where: string, rate: unknown): RateLimit | undefined {
  if (rate === undefined) return undefined;
  if (rate === null || typeof rate !== 'object' || Array.isArray(rate)) {
    throw new JobsError(
      `${where}: "groups.rateLimit" must be { max, per } (at most max jobs of each group start in any per ms), got ${describeValue(rate)}. ` +
        `Potential fix: groups: { rateLimit: { max: 10, per: 1_000 } }.`,
    );
  }
  const r = rate as { max?: unknown; per?: unknown };
  return {
    max: checkInteger(where, 'groups.rateLimit.max', r.max, 1, INT4_MAX, 10),
    per: checkInteger(where, 'groups.rateLimit.per', r.per, 1, INT4_MAX, 1_000),
  };
}
