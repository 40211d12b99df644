import type { EntityManager, DataSource } from 'typeorm';
import type { StorageTx, TxScope } from '../storage-tx.interface.js';
import { pgPoolOf } from './pg-driver.js';

/** The part of a `pg` client or pool that storage uses. */
interface PgQueryable {
  query(config: {
    text: string;
    values?: unknown[];
    name?: string;
  }): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/**
 * Runs SQL on the `pg` driver underneath TypeORM: either the pool (the hot
 * path, no entity hydration, named prepared statements) or the connection of
 * a transaction. Private to storage: other layers hold a `TxScope`.
 */
export interface SqlExecutor {
  query<T = Record<string, unknown>>(text: string, values?: unknown[], name?: string): Promise<T[]>;
  /** Runs `fn` in a transaction: a new one on the pool, or the one this executor is in. */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
}

interface PgPoolClient extends PgQueryable {
  release(err?: Error | boolean): void;
}

class ClientExecutor implements SqlExecutor {
  constructor(private readonly client: PgQueryable) {}
  async query<T>(text: string, values?: unknown[], name?: string): Promise<T[]> {
    const res = await this.client.query(name ? { text, values, name } : { text, values });
    return res.rows as T[];
  }
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return fn(this);
  }
}

type PgPool = PgQueryable & { connect(): Promise<PgPoolClient> };

export class PoolExecutor implements SqlExecutor {
  private readonly pool: PgPool;

  /** TypeORM's own pool of a DataSource, or a pool of ours. */
  constructor(source: DataSource | PgPool) {
    this.pool = 'driver' in source ? (pgPoolOf(source) as unknown as PgPool) : source;
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query({ text: 'BEGIN' });
      const result = await fn(new ClientExecutor(client));
      await client.query({ text: 'COMMIT' });
      client.release();
      return result;
    } catch (error) {
      await client.query({ text: 'ROLLBACK' }).catch(() => undefined);
      client.release();
      throw error;
    }
  }

  async query<T>(text: string, values?: unknown[], name?: string): Promise<T[]> {
    const res = await this.pool.query(name ? { text, values, name } : { text, values });
    return res.rows as T[];
  }
}

/**
 * Uses the transaction's own connection. Going through the query runner's
 * `pg` client (instead of `manager.query`) keeps one result shape for every
 * statement kind; TypeORM 1.x returns `[rows, count]` for UPDATE … RETURNING.
 */
class ManagerExecutor implements SqlExecutor {
  constructor(private readonly manager: EntityManager) {}

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const runner = this.manager.queryRunner;
    // Inside the caller's transaction already: join it rather than nest.
    if (runner && !runner.isReleased && runner.isTransactionActive) return fn(this);
    return new PoolExecutor(this.manager.dataSource).transaction(fn);
  }

  async query<T>(text: string, values?: unknown[], name?: string): Promise<T[]> {
    const runner = this.manager.queryRunner;
    if (!runner || runner.isReleased) {
      // A manager outside a transaction has nothing to join: use the pool.
      return new PoolExecutor(this.manager.dataSource).query<T>(text, values, name);
    }
    const client = (await runner.connect()) as PgQueryable;
    const res = await client.query(name ? { text, values, name } : { text, values });
    return res.rows as T[];
  }
}

/** The executor a write runs on: the scope's transaction, or `fallback` (a pool) outside one. */
export function executorFor(scope: TxScope | undefined, fallback: SqlExecutor): SqlExecutor {
  if (!scope) return fallback;
  // A StorageTx is one of our executors handed out by transactionScope(); anything else is a manager.
  if (scope instanceof ClientExecutor || scope instanceof ManagerExecutor || scope instanceof PoolExecutor) {
    return scope;
  }
  return new ManagerExecutor(scope as EntityManager);
}

/** Hands an executor to code outside storage as the opaque handle it passes back. */
export function asStorageTx(executor: SqlExecutor): StorageTx {
  return executor as unknown as StorageTx;
}
