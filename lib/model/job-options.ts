import { DEFAULT_BACKOFF, type BackoffOptions } from './backoff.js';
import type { UniqueOptions } from './job-context.js';
import type { JobInterceptorClass } from './job-interceptor.js';
import type { RateLimit } from './queue-settings.js';

/**
 * A flow-control key a job type declares (`@Job` or an `externalJobs`
 * entry): a fixed string, or a function of each enqueue's payload.
 */
// The payload's type is the handler's, which a decorator's options cannot name.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type DeclaredKey = string | ((payload: any) => string);

/** The queue of a job that names none. Workers serve every queue unless told otherwise. */
export const DEFAULT_QUEUE = 'default';

/** Options a job type declares (`@Job(name, options)`, or an entry of `externalJobs`); each may be left out. */
export interface JobOptions {
  /** Workers serve queues; default `default`. */
  queue?: string;
  /** Attempts in all, the first included; default 3. */
  maxAttempts?: number;
  /**
   * The wait between a failed attempt and the next; default JobsModule's `defaults.backoff`, else
   * exponential from 1 s, capped at an hour, with jitter.
   */
  backoff?: BackoffOptions;
  /** Milliseconds one attempt may run before its signal aborts and it fails. */
  timeout?: number;
  /** Higher runs first; default 0. */
  priority?: number;
  /** At most this many jobs of this name run at once in its queue, across instances. */
  concurrency?: number;
  /**
   * At most `max` jobs of this name start in any `per` ms, across instances;
   * or the key of a limit JobsModule's `rateLimits` declares, whose one
   * window every job type referring to it shares, whatever its queue.
   */
  rateLimit?: RateLimit | string;
  /**
   * A unique key for every `enqueue()` and `enqueueMany()` of this job, so
   * call sites need not pass one; a call's own `unique` replaces it.
   */
  unique?: JobUniqueOptions;
  /**
   * The serial key of every job of this type (jobs that share one run one
   * at a time, in order, across instances): a string, or a function of the
   * payload, such as `(p) => \`account-${p.accountId}\``. Every enqueue takes
   * it, batch members, chain and flow steps and continuations included; a
   * call that passes its own `serialKey` or `group` replaces it.
   */
  serialKey?: DeclaredKey;
  /**
   * The group of every job of this type (fair share and the per-group limit
   * of its queue): a string, or a function of the payload, such as
   * `(p) => \`tenant-${p.tenantId}\``. Every enqueue takes it; a call that
   * passes its own `group` or `serialKey` replaces it.
   */
  group?: DeclaredKey;
  /**
   * Interceptors around each attempt of this job, outermost first, inside
   * the module's own (`JobsModule.forRoot({ interceptors })`).
   */
  interceptors?: readonly JobInterceptorClass[];
  /**
   * Encrypt its payload, result, step results, errors and progress messages
   * with JobsModule's `encryption` keys; default false (see `encryption.all`).
   */
  encrypted?: boolean;
  /**
   * How an onFailure hook that throws runs again: `attempts` runs in all,
   * the first included (default 3), `backoff` between them (default
   * exponential from 1 s, capped at a minute, with jitter). A hook that
   * throws a PermanentJobError is not run again.
   */
  onFailureRetries?: FailureHookRetries;
  /**
   * Which ended jobs of this type keep their row. `{ succeeded: false }` forgets a success: the
   * outcome's write deletes the job with its history, as BullMQ's `removeOnComplete` and
   * graphile-worker do, and `get()` then finds nothing. Default: JobsModule's `retention.succeeded`
   * (0 forgets every success), else kept until retention prunes it.
   */
  keep?: KeepOptions;
}

/** `keep`: whether a job's row outlives its success. */
export interface KeepOptions {
  /**
   * false deletes the job in the write of its success. A success others still need is kept until
   * retention prunes it: a flow's parent, a job `waitFor()` or a parent's `ctx.invoke()` waits on.
   */
  succeeded?: boolean;
}

/** `onFailureRetries`: how often, and how far apart, a throwing onFailure hook runs. */
export interface FailureHookRetries {
  /** Runs in all, the first included; 1 runs the hook once whatever it throws. */
  attempts?: number;
  /** The wait between two runs; default exponential from 1 s, capped at a minute, with jitter. */
  backoff?: BackoffOptions;
}

/**
 * A job type's unique key: a call's `unique` options, with `key` a fixed
 * string or a function of the payload (`(p) => \`digest-${p.userId}\``).
 */
export interface JobUniqueOptions extends Omit<UniqueOptions, 'key'> {
  /**
   * The key (at most 256 characters), or a function that makes it from the payload of each enqueue;
   * jobs of any name share the key space.
   */
  // The payload's type is the handler's, which a decorator's options cannot name.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  key: string | ((payload: any) => string);
}

/** JobsModule's `defaults`: for job types whose declaration leaves these out. */
export interface JobDefaults {
  /** Attempts in all, the first included; default 3. */
  maxAttempts?: number;
  /** The wait between a failed attempt and the next; default exponential from 1 s, capped at an hour, with jitter. */
  backoff?: BackoffOptions;
  /** Milliseconds one attempt may run before its signal aborts and it fails; default no limit. */
  timeout?: number;
  /**
   * How a throwing onFailure hook runs again, field by field; default 3 runs in all, exponential from
   * 1 s, capped at a minute, with jitter.
   */
  onFailureRetries?: FailureHookRetries;
}

/** What a job type runs with once every default is applied. */
export interface ResolvedJobOptions {
  queue: string;
  maxAttempts: number;
  backoff: BackoffOptions;
  timeout: number | null;
  priority: number;
  encrypted: boolean;
  onFailureRetries: Required<FailureHookRetries>;
  /** false: a success deletes the job (`keep.succeeded`). */
  keepSucceeded: boolean;
}

/** The library's own defaults: the one place they are spelled. */
export const JOB_DEFAULTS: Readonly<ResolvedJobOptions> = Object.freeze({
  queue: DEFAULT_QUEUE,
  maxAttempts: 3,
  backoff: DEFAULT_BACKOFF,
  timeout: null,
  priority: 0,
  encrypted: false,
  onFailureRetries: Object.freeze<Required<FailureHookRetries>>({
    attempts: 3,
    backoff: { type: 'exponential', delay: 1_000, maxDelay: 60_000, jitter: true },
  }),
  keepSucceeded: true,
});

/**
 * Per field: the declaration, else the module's defaults, else the library's. `keepSucceeded`: the
 * module's default for `keep.succeeded` (false when its `retention.succeeded` is 0).
 */
export function resolveJobOptions(
  declared: JobOptions = {},
  defaults: JobDefaults = {},
  keepSucceeded: boolean = JOB_DEFAULTS.keepSucceeded,
): ResolvedJobOptions {
  return {
    queue: declared.queue ?? JOB_DEFAULTS.queue,
    maxAttempts: declared.maxAttempts ?? defaults.maxAttempts ?? JOB_DEFAULTS.maxAttempts,
    backoff: declared.backoff ?? defaults.backoff ?? JOB_DEFAULTS.backoff,
    timeout: declared.timeout ?? defaults.timeout ?? JOB_DEFAULTS.timeout,
    priority: declared.priority ?? JOB_DEFAULTS.priority,
    encrypted: declared.encrypted ?? JOB_DEFAULTS.encrypted,
    onFailureRetries: {
      attempts:
        declared.onFailureRetries?.attempts ??
        defaults.onFailureRetries?.attempts ??
        JOB_DEFAULTS.onFailureRetries.attempts,
      backoff:
        declared.onFailureRetries?.backoff ??
        defaults.onFailureRetries?.backoff ??
        JOB_DEFAULTS.onFailureRetries.backoff,
    },
    keepSucceeded: declared.keep?.succeeded ?? keepSucceeded,
  };
}
