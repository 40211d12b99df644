import type { EntityManager, DataSource } from 'typeorm';

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
 * a caller's transaction (an `EntityManager` inside `transaction()`).
 */
export interface SqlExecutor {
  query<T = Record<string, unknown>>(text: string, values?: unknown[], name?: string): Promise<T[]>;
}

export class PoolExecutor implements SqlExecutor {
  private readonly pool: PgQueryable;

  constructor(dataSource: DataSource) {
    this.pool = (dataSource.driver as unknown as { master: PgQueryable }).master;
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
export class ManagerExecutor implements SqlExecutor {
  constructor(private readonly manager: EntityManager) {}

  async query<T>(text: string, values?: unknown[]): Promise<T[]> {
    const runner = this.manager.queryRunner;
    if (!runner || runner.isReleased) {
      // A manager outside a transaction has nothing to join: use the pool.
      return new PoolExecutor(this.manager.dataSource).query<T>(text, values);
    }
    const client = (await runner.connect()) as PgQueryable;
    const res = await client.query({ text, values });
    return res.rows as T[];
  }
}
