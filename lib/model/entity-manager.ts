import type { DataSource, EntityManager } from 'typeorm';

/**
 * The DataSource a TypeORM EntityManager belongs to: `dataSource` in TypeORM 1, `connection` (the
 * same DataSource) in TypeORM 0.3, which has no `dataSource` property.
 */
export function managerDataSource(manager: EntityManager): DataSource {
  const m = manager as EntityManager & { connection?: DataSource };
  return m.dataSource ?? m.connection!;
}

/** Whether `value` has the shape of a TypeORM EntityManager, of TypeORM 1 or 0.3. */
export function isEntityManager(value: unknown): value is EntityManager {
  const m = value as Partial<EntityManager> | null;
  return (
    !!m && typeof m === 'object' && typeof m.transaction === 'function' && ('dataSource' in m || 'connection' in m)
  );
}
