import type { DataSource } from 'typeorm';
import { DEFAULT_MAX_ERROR_BYTES, JobCipher } from '../../model/index.js';
import { connectionBudget } from './connection-budget.js';
import type { ConnectionPlan } from './connection-plan.js';
import { sessionSettingsFor } from './session-settings.js';
import { PoolExecutor } from './sql-executor.js';
import type { ResolvedTimeouts } from './timeouts.js';
import { notificationChannel } from './notification-topics.js';

/** A direct connection to a DataSource the app owns, with the default budget. */
const DIRECT_PLAN: ConnectionPlan = {
  pooler: null,
  session: sessionSettingsFor(null),
  budget: connectionBudget({ maxConnections: undefined, owned: false, worker: true, listening: true }),
  listen: 'pool',
  direct: null,
};

/**
 * What every storage of one module works on: the connection, the schema,
 * the schema's NOTIFY channel, how long to wait on the database, the
 * cipher that seals encrypted jobs' values on their way in and opens them on
 * their way out, the most bytes a stored error keeps of each of its texts
 * (`maxErrorBytes`), and how this instance reaches the server (`plan`: the
 * pooler in front, the connection budget, where LISTEN goes).
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
    readonly plan: ConnectionPlan = DIRECT_PLAN,
  ) {
    this.channel = notificationChannel(schema);
    this.executor = new PoolExecutor(dataSource, {
      queryMs: timeouts.query,
      connectMs: timeouts.connect,
      session: plan.session,
    });
  }

  /** The same schema, limits, cipher and pooler on another server's DataSource (the monitoring replica). */
  on(dataSource: DataSource): StorageContext {
    return new StorageContext(dataSource, this.schema, this.timeouts, this.cipher, this.maxErrorBytes, this.plan);
  }
}
