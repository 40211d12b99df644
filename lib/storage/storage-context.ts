import type { DataSource } from 'typeorm';
import { PoolExecutor } from './connection/sql-executor.js';
import type { ResolvedTimeouts } from './connection/timeouts.js';
import { notificationChannel } from './notifications/notification-topics.js';

/**
 * What every storage of one module works on: the connection, the schema,
 * the schema's NOTIFY channel, and how long to wait on the database.
 */
export class StorageContext {
  readonly channel: string;
  /** Queries on the DataSource's pool, each bounded by the client-side timeouts. */
  readonly executor: PoolExecutor;

  constructor(
    readonly dataSource: DataSource,
    readonly schema: string,
    readonly timeouts: ResolvedTimeouts,
  ) {
    this.channel = notificationChannel(schema);
    this.executor = new PoolExecutor(dataSource, { queryMs: timeouts.query, connectMs: timeouts.connect });
  }
}
