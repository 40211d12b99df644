import type { EntityManager } from 'typeorm';

export interface EnqueueOptions {
  /** Milliseconds from now before the job may run. */
  delay?: number;
  /** An absolute time before which the job does not run. */
  runAt?: Date;
  /** Higher runs first. */
  priority?: number;
  queue?: string;
  maxAttempts?: number;
  /** Milliseconds one attempt may run. */
  timeout?: number;
  /** Write the job in this TypeORM transaction: it exists only if that commits. */
  manager?: EntityManager;
  /**
   * Wait for other jobs or batches to settle: a job id (run after it
   * succeeds), or a list of parents with the outcome each must have.
   */
  after?: string | ParentRef[];
}

export type DependencyOn = 'success' | 'failure' | 'always';

export type ParentRef = { job: string; on?: DependencyOn } | { batch: string; on?: DependencyOn };
