import type { JobContextSource } from './job-context-data.js';

/**
 * What every write of a job checks, from JobsModule's options: the bounds on
 * what it carries, its default context, and the queues that need a group.
 */
export interface JobWriteRules {
  maxPayloadBytes: number;
  /** Largest job or step result, in bytes of JSON. */
  maxResultBytes: number;
  /** JobsModule's `contextFrom`: the context of an enqueue that gives none, outside a handler. */
  contextFrom?: JobContextSource;
  /** The queues JobsModule's `queues` declares with `groups.rateLimit`: a job written into one must have a group. */
  groupRated?: ReadonlySet<string>;
}

export const JOB_WRITE_RULES = Symbol('JOB_WRITE_RULES');
