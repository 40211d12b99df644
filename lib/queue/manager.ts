import type { EntityManager } from 'typeorm';
import { isEntityManager } from '../model/entity-manager.js';
import { describeValue, JobsError } from '../model/index.js';

/**
 * The caller's transaction, when one is passed: a TypeORM EntityManager (the
 * one `dataSource.transaction(async (manager) => …)` hands out). Checked by
 * shape rather than class, so a second copy of TypeORM in the app still works.
 */
export function checkManager(where: string, manager: unknown): EntityManager | undefined {
  if (manager === undefined) return undefined;
  if (!isEntityManager(manager)) {
    throw new JobsError(
      `${where}: "manager" must be a TypeORM EntityManager, got ${describeValue(manager)}. ` +
        `Potential fix: dataSource.transaction(async (manager) => jobs.enqueue(Job, payload, { manager })).`,
    );
  }
  // Storage runs a manager without a live transaction on the pool, which for one whose transaction
  // has ended (an enqueue not awaited inside the callback) wrote the job outside it, kept even if
  // that transaction rolled back.
  if ((manager as EntityManager).queryRunner?.isReleased) {
    throw new JobsError(
      `${where}: "manager" belongs to a transaction that has already ended, so the job would be written outside it. ` +
        `Potential fix: await the call inside dataSource.transaction(async (manager) => …), before the callback returns.`,
    );
  }
  return manager as EntityManager;
}
