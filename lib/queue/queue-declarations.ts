import {
  checkInteger,
  checkLimits,
  checkName,
  checkOptions,
  INT4_MAX,
  JobsError,
  QUEUE_GROUPS_SHAPE,
  QUEUE_SHAPE,
  recordOf,
  type QueueOptions,
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
      '{ concurrency: 2, minInflight: 2, shareThreshold: 0.5 }',
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
        shareThreshold: share,
      },
    };
  }
  return out;
}
