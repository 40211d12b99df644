import type { EntityManager } from 'typeorm';

declare const storageTx: unique symbol;

/**
 * A transaction storage opened for a multi-step write (see
 * `WorkflowStorage.transaction`). Opaque outside storage: callers only pass
 * it back to the storage methods that take it.
 */
export interface StorageTx {
  readonly [storageTx]: true;
}

/**
 * Where a write joins an open transaction: the caller's TypeORM
 * `EntityManager` (inside `dataSource.transaction(...)`), or a `StorageTx`.
 */
export type TxScope = EntityManager | StorageTx;
