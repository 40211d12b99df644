import type { EntityManager } from 'typeorm';
import { describeValue, JobsError } from '../model/index.js';

/**
 * The caller's transaction, when one is passed: a TypeORM EntityManager (the
 * one `dataSource.transaction(async (manager) => …)` hands out). Checked by
 * shape rather than class, so a second copy of TypeORM in the app still works.
 */
export function checkManager(where: string, manager: unknown): EntityManager | undefined {
  if (manager === undefined) return undefined;
  const m = manager as Partial<EntityManager> | null;
  if (!m || typeof m !== 'object' || typeof m.transaction !== 'function' || !('dataSource' in m)) {
    throw new JobsError(
      `${where}: "manager" must be a TypeORM EntityManager, got ${describeValue(manager)}. ` +
        `Potential fix: dataSource.transaction(async (manager) => jobs.enqueue(Job, payload, { manager })).`,
    );
  }
  return manager as EntityManager;
}
