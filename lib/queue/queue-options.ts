import type { EntityManager } from 'typeorm';
import type { DependencyOn, StepOptions } from '../model/index.js';

/** Per-job options (delay, runAt, priority, queue, maxAttempts, timeout) and where to write. */
export interface EnqueueOptions extends StepOptions {
  /** Write the job in this TypeORM transaction: it exists only if that commits. */
  manager?: EntityManager;
  /**
   * Wait for other jobs or batches to settle: a job id (run after it
   * succeeds), or a list of parents with the outcome each must have.
   */
  after?: string | ParentRef[];
}

export type { DependencyOn };

export type ParentRef = { job: string; on?: DependencyOn } | { batch: string; on?: DependencyOn };
