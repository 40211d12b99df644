import type { LimitSource, RateLimit } from '../../model/index.js';

export type { LimitSource, RateLimit };

export interface Limits {
  concurrency: number | null;
  concurrencySource: LimitSource;
  rateLimit: RateLimit | null;
  rateSource: LimitSource;
  /** The service whose code declares these limits; null when no code declares them. */
  service: string | null;
}

/** One queue's stored settings, and those of the job names with limits of their own in it. */
export interface QueueConfig extends Limits {
  queue: string;
  paused: boolean;
  hasGroups: boolean;
  hasSerial: boolean;
  groupMinInflight: number;
  groupShare: number;
  /** At most this many running jobs per group, unless the group has a limit of its own. */
  groupConcurrency: number | null;
  /** At most `max` starts per group in any `per` ms (the code's `groups.rateLimit`), or null. */
  groupRateLimit: RateLimit | null;
  /** How many of the queue's groups have a limit of their own (groupLimits lists them). */
  groupLimits: number;
  names: Array<Limits & { name: string; rateKey: string | null }>;
}

/** One keyed rate limit as stored, and the job names (each in its queue) whose code refers to it. */
export interface RateLimitConfig {
  key: string;
  rateLimit: RateLimit | null;
  rateSource: LimitSource;
  /** The service whose code declares the key; null when set at run time only. */
  service: string | null;
  jobs: Array<{ queue: string; name: string }>;
}

/** A group's own concurrency limit in its queue, set at run time. */
export interface GroupLimit {
  queue: string;
  group: string;
  concurrency: number;
}

/** What the code declares for a queue (JobsModule's `queues`) or a job name (@Job). */
export interface CodeLimits {
  queue: string;
  /** Set for a job name's own limits. */
  name?: string;
  /**
   * For a queue (no name): true when JobsModule's `queues` declares its limits; false when the
   * queue is there only because job names in it have limits (its own limits are not this code's).
   */
  declared?: boolean;
  concurrency: number | null;
  rateLimit: RateLimit | null;
  /** The keyed rate limit a job name's @Job refers to. */
  rateKey?: string;
  groupMinInflight?: number;
  groupShare?: number;
  groupConcurrency?: number;
  groupRateLimit?: RateLimit;
}

/** A change made at run time; a field left out keeps its value, null removes the limit. */
export interface LimitChange {
  concurrency?: number | null;
  rateLimit?: RateLimit | null;
}

/** The settings of queues, kept in the database so every instance enforces the same ones. */
export interface QueueStorage {
  configs(): Promise<QueueConfig[]>;
  /** Whether any job, ended or not, was ever in the queue (until pruned). */
  hasJobs(queue: string): Promise<boolean>;
  /** Creates the queue's row when missing. */
  setPaused(queue: string, paused: boolean, now: Date): Promise<void>;
  setLimits(queue: string, name: string | null, change: LimitChange, now: Date): Promise<void>;
  /** Every group's own limit, by queue and group. */
  groupLimits(): Promise<GroupLimit[]>;
  /** Sets one group's own limit (null removes it: the queue's default applies). Creates the queue's row when missing. */
  setGroupLimit(queue: string, group: string, concurrency: number | null, now: Date): Promise<void>;
  /** The keyed rate limits, by key. */
  rateLimits(): Promise<RateLimitConfig[]>;
  /** Changes a keyed limit at run time (null removes it); creates the key's row when missing. */
  setRateLimit(key: string, limit: RateLimit | null, now: Date): Promise<void>;
}

export const QUEUE_STORAGE = Symbol('QUEUE_STORAGE');
