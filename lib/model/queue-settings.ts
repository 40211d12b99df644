import { JobsError } from './errors.js';

/** A rate limit: at most `max` jobs start in any window of `per` ms, across instances. */
export interface RateLimit {
  /** The most jobs that start in one window: an integer of at least 1. */
  max: number;
  /** The window's length, in ms: an integer of at least 1. */
  per: number;
}

/**
 * How long after its claim a rate-limited job's handler may start, in ms.
 * A rate window counts each claim for `per` plus this lag, and a worker that
 * cannot start a claimed rate-limited job within it hands the job back
 * unspent, so a limit holds at the handlers' starts, not only at the claims.
 * Measured on three instances in one process: handlers start 2-8 ms after
 * their claim, tens of ms on a loaded machine; 50 ms costs a one-second
 * window 5% of its rate.
 */
export const RATE_START_LAG_MS = 50;

/** A queue's flow control, as JobsModule's `queues` declares it. */
export interface QueueOptions {
  /** At most this many of the queue's jobs run at once, across instances. */
  concurrency?: number;
  /** At most `max` of the queue's jobs start in any `per` ms, across instances. */
  rateLimit?: RateLimit;
  /**
   * Groups (EnqueueOptions.group): at most `concurrency` running jobs per
   * group, across instances (JobQueues.setGroupLimits overrides it for one
   * group); at most `rateLimit.max` starts per group in any `rateLimit.per`
   * ms, across instances; and fairness: a group holding at least
   * `minInflight` running jobs (default 2) and more than `shareThreshold` of
   * the queue's (default 0.5) is served after the others.
   */
  groups?: {
    /** At most this many running jobs per group, across instances; default no limit. */
    concurrency?: number;
    /**
     * At most `max` jobs of each group start in any `per` ms, across instances, counted at the
     * handlers' starts as a queue's `rateLimit` is: with `group: (p) => p.shopId` on `@Job`,
     * `{ max: 10, per: 1_000 }` is 10/s per shop. Every job enqueued into the queue must then have
     * a group (declared on `@Job` or given by the call); one without is refused with a JobsError.
     * Default no limit.
     */
    rateLimit?: RateLimit;
    /** The running jobs a group must hold before it can be served after the others; default 2. */
    minInflight?: number;
    /** The share of the queue's running jobs, in (0, 1], a group must exceed to be served last; default 0.5. */
    shareThreshold?: number;
  };
}

/**
 * A job bound for a queue whose groups have a rate limit (JobsModule's
 * `queues.<queue>.groups.rateLimit`, listed in `groupRated`) must have a
 * group: the limit counts each group's starts, and a job of no group would
 * start uncounted. Refused with a JobsError naming the job, the queue, the
 * field and the fix, before anything is written.
 */
export function checkGroupRated(
  where: string,
  name: string,
  queue: string,
  group: string | null | undefined,
  groupRated: ReadonlySet<string> | undefined,
): void {
  if (group != null || !groupRated?.has(queue)) return;
  throw new JobsError(
    `${where}: job '${name}' goes to queue '${queue}', whose groups have a rate limit (JobsModule "queues.${queue}.groups.rateLimit"), ` +
      `but it has no "group", so no group's limit would count its start. ` +
      `Potential fix: declare its group on the job type (@Job('${name}', { group: (payload) => \`shop-\${payload.shopId}\` })), ` +
      `pass { group } to this call, or put the job in another queue.`,
  );
}

/** What `JobQueues.list()` says of a queue's groups' limits. */
export interface GroupLimitsInfo {
  /** At most this many running jobs per group (JobsModule's `queues.<name>.groups.concurrency`), or null. */
  concurrency: number | null;
  /** At most `max` starts per group in any `per` ms (JobsModule's `queues.<name>.groups.rateLimit`), or null. */
  rateLimit: RateLimit | null;
  /** Groups with a limit of their own, set at run time (JobQueues.setGroupLimits), by group. */
  overrides: Array<{
    /** The group key, as `group` names it when a job is enqueued. */
    group: string;
    /** At most this many of the group's jobs run at once, in place of `concurrency`. */
    concurrency: number;
  }>;
}

/** Where a limit in force came from: the deployed code, or a change made at run time (JobQueues). */
export type LimitSource = 'code' | 'runtime';

/** A limit and where it came from. */
export interface LimitInfo<T> {
  /** The limit in force; null for none. */
  value: T | null;
  /** `code` when the deployed code decides it (a declaration, or none), `runtime` when a JobQueues change set it. */
  source: LimitSource;
}

/** What `JobQueues.rateLimits()` says of one keyed rate limit (JobsModule's `rateLimits`). */
export interface RateLimitInfo {
  /** The key, as JobsModule's `rateLimits` and `@Job`'s `rateLimit` name it. */
  key: string;
  /** Its limit in force (null `value` once `JobQueues.setRateLimit()` removed it), and where it came from. */
  rateLimit: LimitInfo<RateLimit>;
  /** The service whose code declares the key (JobsModule's `service`); null when none does. */
  service: string | null;
  /** The job names whose `@Job` refers to the key, each in its queue. */
  jobs: Array<{
    /** The queue the job runs in. */
    queue: string;
    /** The job's name, as in `@Job(name)`. */
    name: string;
  }>;
}

/** What `JobQueues.list()` says of one queue. */
export interface QueueInfo {
  /** The queue's name. */
  name: string;
  /** True from `JobQueues.pause()` until `resume()`: no instance claims its jobs. */
  paused: boolean;
  /** At most this many of the queue's jobs run at once, across instances; null `value` for no limit. */
  concurrency: LimitInfo<number>;
  /** The queue's rate limit; null `value` for none. */
  rateLimit: LimitInfo<RateLimit>;
  /** The service whose code declares the queue's limits (JobsModule's `service`); null when no code does. */
  service: string | null;
  /** Job names with limits of their own in this queue. */
  jobs: Array<{
    /** The job's name, as in `@Job(name)`. */
    name: string;
    /** At most this many jobs of the name run at once in the queue, across instances; null `value` for no limit. */
    concurrency: LimitInfo<number>;
    /** The name's own rate limit; null `value` for none (a keyed limit it refers to is in `JobQueues.rateLimits()`). */
    rateLimit: LimitInfo<RateLimit>;
    /** The service whose code declares the name's limits; null when no code does. */
    service: string | null;
  }>;
  /** Its groups' concurrency limit, and the groups with one of their own. */
  groups: GroupLimitsInfo;
  /** Running now (claimed), across instances. */
  active: number;
  /** Due and waiting for a worker. */
  queued: number;
  /** Queued for later (a delay, a backoff, a snooze). */
  scheduled: number;
  /** Waiting on parents or a batch. */
  waiting: number;
}
