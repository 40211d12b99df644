import type { DataSource } from 'typeorm';
import { JobCipher } from '../model/index.js';
import { PoolExecutor } from './connection/sql-executor.js';
import type { ResolvedTimeouts } from './connection/timeouts.js';
import { notificationChannel } from './notifications/notification-topics.js';

/**
 * What every storage of one module works on: the connection, the schema,
 * the schema's NOTIFY channel, how long to wait on the database, and the
 * cipher that seals encrypted jobs' values on their way in and opens them on
 * their way out.
 */
export class StorageContext {
  readonly channel: string;
  /** Queries on the DataSource's pool, each bounded by the client-side timeouts. */
  readonly executor: PoolExecutor;

  constructor(
    readonly dataSource: DataSource,
    readonly schema: string,
    readonly timeouts: ResolvedTimeouts,
    readonly cipher: JobCipher = new JobCipher(),
  ) {
    this.channel = notificationChannel(schema);
    this.executor = new PoolExecutor(dataSource, { queryMs: timeouts.query, connectMs: timeouts.connect });
  }
}
