import type { DataSource } from 'typeorm';
import { DEFAULT_MAX_ERROR_BYTES, JobCipher } from '../model/index.js';
import { PoolExecutor } from './connection/sql-executor.js';
import type { ResolvedTimeouts } from './connection/timeouts.js';
import { notificationChannel } from './notifications/notification-topics.js';

/**
 * What every storage of one module works on: the connection, the schema,
 * the schema's NOTIFY channel, how long to wait on the database, the
 * cipher that seals encrypted jobs' values on their way in and opens them on
 * their way out, and the most bytes a stored error keeps of each of its texts
 * (`maxErrorBytes`).
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
    readonly maxErrorBytes: number = DEFAULT_MAX_ERROR_BYTES,
  ) {
    this.channel = notificationChannel(schema);
    this.executor = new PoolExecutor(dataSource, { queryMs: timeouts.query, connectMs: timeouts.connect });
  }

  /** The same schema, limits and cipher on another server's DataSource (the monitoring replica). */
  on(dataSource: DataSource): StorageContext {
    return new StorageContext(dataSource, this.schema, this.timeouts, this.cipher, this.maxErrorBytes);
  }
}
