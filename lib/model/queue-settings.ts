/** A rate limit: at most `max` jobs start in any window of `per` ms, across instances. */
export interface RateLimit {
  max: number;
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
  rateLimit?: RateLimit;
  /**
   * Groups (EnqueueOptions.group): at most `concurrency` running jobs per
   * group, across instances (JobQueues.setGroupLimits overrides it for one
   * group); and fairness: a group holding at least `minInflight` running
   * jobs (default 2) and more than `shareThreshold` of the queue's (default
   * 0.5) is served after the others.
   */
  groups?: { concurrency?: number; minInflight?: number; shareThreshold?: number };
}

/** What `JobQueues.list()` says of a queue's groups' limits. */
export interface GroupLimitsInfo {
  /** At most this many running jobs per group (JobsModule's `queues.<name>.groups.concurrency`), or null. */
  concurrency: number | null;
  /** Groups with a limit of their own, set at run time (JobQueues.setGroupLimits), by group. */
  overrides: Array<{ group: string; concurrency: number }>;
}

/** Where a limit in force came from: the deployed code, or a change made at run time (JobQueues). */
export type LimitSource = 'code' | 'runtime';

/** A limit and where it came from. */
export interface LimitInfo<T> {
  value: T | null;
  source: LimitSource;
}

/** What `JobQueues.rateLimits()` says of one keyed rate limit (JobsModule's `rateLimits`). */
export interface RateLimitInfo {
  key: string;
  rateLimit: LimitInfo<RateLimit>;
  /** The job names whose `@Job` refers to the key, each in its queue. */
  jobs: Array<{ queue: string; name: string }>;
}

/** What `JobQueues.list()` says of one queue. */
export interface QueueInfo {
  name: string;
  paused: boolean;
  concurrency: LimitInfo<number>;
  rateLimit: LimitInfo<RateLimit>;
  /** Job names with limits of their own in this queue. */
  jobs: Array<{ name: string; concurrency: LimitInfo<number>; rateLimit: LimitInfo<RateLimit> }>;
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
