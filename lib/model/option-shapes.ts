import type { BatchListFilter, BulkFilter, JobListState, JobSearch, PurgeOptions } from './admin.js';
import type { BackoffOptions, BackoffFunction } from './backoff.js';
import type { StepOptions, UniqueOptions } from './job-context.js';
import type { FailureHookRetries, JobDefaults, JobOptions, JobUniqueOptions, KeepOptions } from './job-options.js';
import type { JobListFilter } from './monitoring.js';
import { optionShape, type OptionField } from './option-keys.js';
import type { QueueOptions, RateLimit } from './queue-settings.js';

/**
 * The known keys of the options objects the model defines, each stated once
 * against its interface (see optionShape: a field added there without its
 * key here does not compile). Services with options of their own state
 * theirs beside them.
 */

/** Both object forms at once; `maxDelay` with `type: 'fixed'` is refused by validateJobOptions. */
const BACKOFF_SHAPE = optionShape<Exclude<BackoffOptions, BackoffFunction>>({
  type: true,
  delay: true,
  maxDelay: true,
  jitter: true,
});

export const RATE_LIMIT_SHAPE = optionShape<RateLimit>({ max: true, per: true });

export const QUEUE_GROUPS_SHAPE = optionShape<NonNullable<QueueOptions['groups']>>({
  concurrency: true,
  rateLimit: RATE_LIMIT_SHAPE,
  minInflight: true,
  shareThreshold: true,
});

export const QUEUE_SHAPE = optionShape<QueueOptions>({
  concurrency: true,
  rateLimit: RATE_LIMIT_SHAPE,
  groups: QUEUE_GROUPS_SHAPE,
});

/** A call's `unique` options. */
export const UNIQUE_SHAPE = optionShape<UniqueOptions>({ key: true, while: true, for: true, ttl: true, replace: true });

/** A job type's `unique` options (`@Job`, `externalJobs`): the key may be a function of the payload. */
const JOB_UNIQUE_SHAPE = optionShape<JobUniqueOptions>({
  key: true,
  while: true,
  for: true,
  ttl: true,
  replace: true,
});

/** `onFailureRetries` of `@Job`, `externalJobs` and `defaults`. */
const FAILURE_HOOK_RETRIES_SHAPE = optionShape<FailureHookRetries>({ attempts: true, backoff: BACKOFF_SHAPE });
const KEEP_SHAPE = optionShape<KeepOptions>({ succeeded: true });

/** `@Job(name, options)` and the entries of `externalJobs`. */
export const JOB_OPTIONS_SHAPE = optionShape<JobOptions>({
  queue: true,
  maxAttempts: true,
  backoff: BACKOFF_SHAPE,
  timeout: true,
  priority: true,
  concurrency: true,
  rateLimit: RATE_LIMIT_SHAPE,
  unique: JOB_UNIQUE_SHAPE,
  serialKey: true,
  group: true,
  interceptors: true,
  encrypted: true,
  onFailureRetries: FAILURE_HOOK_RETRIES_SHAPE,
  keep: KEEP_SHAPE,
});

export const JOB_DEFAULTS_SHAPE = optionShape<JobDefaults>({
  maxAttempts: true,
  backoff: BACKOFF_SHAPE,
  timeout: true,
  onFailureRetries: FAILURE_HOOK_RETRIES_SHAPE,
});

/** The fields of per-job options, for the shapes of the calls that take them with fields of their own. */
export const STEP_FIELDS = {
  delay: true,
  runAt: true,
  priority: true,
  queue: true,
  maxAttempts: true,
  timeout: true,
  group: true,
  serialKey: true,
  unique: UNIQUE_SHAPE,
  deadline: true,
  // A value: its keys are the app's own, checked as JSON, never against a shape.
  context: true,
} as const satisfies Record<keyof StepOptions, OptionField>;

export const JOB_LIST_FILTER_SHAPE = optionShape<JobListFilter>({
  state: true,
  queue: true,
  name: true,
  before: true,
  limit: true,
});

/** `ids` is a bulk field: search() refuses it with a message of its own. */
export const JOB_SEARCH_SHAPE = optionShape<JobSearch, 'ids'>({
  state: true,
  queue: true,
  name: true,
  nameContains: true,
  batchId: true,
  idPrefix: true,
  before: true,
  limit: true,
  ids: true,
});

export const BULK_FILTER_SHAPE = optionShape<BulkFilter<JobListState>>({
  state: true,
  queue: true,
  name: true,
  batchId: true,
  idPrefix: true,
  ids: true,
});

export const PURGE_OPTIONS_SHAPE = optionShape<PurgeOptions>({
  succeededBefore: true,
  failedBefore: true,
  cancelledBefore: true,
  skippedBefore: true,
  pause: true,
});

export const BATCH_LIST_FILTER_SHAPE = optionShape<BatchListFilter>({
  state: true,
  name: true,
  before: true,
  limit: true,
});
