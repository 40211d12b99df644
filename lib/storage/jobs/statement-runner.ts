import { createHash } from 'node:crypto';
import type { PoolExecutor, SqlExecutor } from '../sql/sql-executor.js';

type Row = Record<string, unknown>;

/**
 * Runs one concern's statements by key. The keys in `prepared` go as named
 * prepared statements, parsed and planned once per connection; the name
 * carries a hash of the text, because the app's pool may serve several
 * schemas and a name must mean one text.
 */
export class StatementRunner<K extends string> {
  private readonly names: ReadonlyMap<K, string>;

  constructor(
    readonly sql: Readonly<Record<K, string>>,
    prepared: readonly K[],
    private readonly pool: PoolExecutor,
  ) {
    this.names = new Map(
      prepared.map((key) => [
        key,
        `durable_jobs_${key}_${createHash('sha1').update(sql[key]).digest('hex').slice(0, 12)}`,
      ]),
    );
  }

  /** Runs `key` on `executor` (the app's pool unless given). */
  run<T = Row>(key: K, values: unknown[], executor: SqlExecutor = this.pool): Promise<T[]> {
    return executor.query<T>(this.sql[key], values, this.names.get(key));
  }
}
