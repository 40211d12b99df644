import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { JobsError, settlesWithin, toDatabaseError } from '../../model/index.js';
import type { SchemaMigrationResult } from '../migrations/schema-migrator.js';
import { connectionBudget } from '../sql/connection-budget.js';
import {
  checkSchemaName,
  givenPoolSize,
  initialize,
  ownedDataSource,
  pgConfigOf,
  toPostgresOptions,
} from './connection-options.js';
import { ownSessionSettings, type ConnectionPlan } from '../sql/connection-plan.js';
import {
  startEmbeddedPostgres,
  type EmbeddedPostgresHandle,
  type EmbeddedPostgresOptions,
} from '../embedded/embedded-postgres.js';
import { pgPoolOf } from '../sql/pg-driver.js';
import { checkPooler, checkDirectConnection, checkNotTransactionPooled } from './pooler-checks.js';
import { clientSessions, poolSessions } from './pooler-probe.js';
import { prepareSchema } from './schema-preparation.js';
import { checkDatabaseChoice } from './database-choice.js';
import { sessionSettingsFor, type PoolerMode } from '../sql/session-settings.js';
import type { ResolvedTimeouts } from '../sql/timeouts.js';

export interface JobsConnectionSettings {
  dataSource?: DataSource;
  connection?: string | Record<string, unknown>;
  embedded?: EmbeddedPostgresOptions;
  schema: string;
  migrationsRun: boolean;
  timeouts: ResolvedTimeouts;
  /** Which of the three keys the options hold, set or not: a key present but undefined is an unset variable. */
  given?: { connection: boolean; dataSource: boolean; embedded: boolean };
  /** What sits in front of the server (`pooler`); checked here. */
  pooler?: unknown;
  /** A URL or options straight to the server, for LISTEN and migrations (`directConnection`). */
  directConnection?: string | Record<string, unknown>;
  /** `maxConnections`; checked here. */
  maxConnections?: unknown;
  /** Whether this instance runs a worker (it needs connections of its own). */
  worker?: boolean;
  /** When a worker of an older build counts as stopped, for deferring a breaking version (the lease). */
  workerStaleAfter?: number;
  /** True when the caller reports deferred versions itself (the CLI): no log line then. */
  quietMigrations?: boolean;
}

/** How long closing the connection may take: a database that stopped answering must not hold shutdown. */
const CLOSE_WITHIN_MS = 5_000;

/**
 * The database the module works on: the app's DataSource, one it owns, or
 * the embedded development server; and how this instance reaches it (the
 * pooler in front, the connection budget, where LISTEN goes). It closes
 * only what it opened, and only after the workers have stopped (they stop
 * in beforeApplicationShutdown).
 */
export class JobsConnection implements OnApplicationShutdown {
  private static readonly logger = new Logger('JobsModule');
  /** What this connection's start migrated and installed. */
  migration: SchemaMigrationResult = { applied: [], deferred: [], routines: [] };

  private constructor(
    readonly dataSource: DataSource,
    readonly schema: string,
    readonly timeouts: ResolvedTimeouts,
    /** True when the module opened the DataSource (connection, embedded), false for the app's own. */
    readonly owned: boolean,
    readonly plan: ConnectionPlan,
    private readonly embedded: EmbeddedPostgresHandle | null,
  ) {}

  static async open(settings: JobsConnectionSettings): Promise<JobsConnection> {
    const { schema, timeouts } = settings;
    checkSchemaName(schema);
    checkDatabaseChoice(settings);
    const pooler = checkPooler(settings.pooler);
    const direct =
      settings.directConnection === undefined
        ? null
        : pgConfigOf(toPostgresOptions(settings.directConnection, 'directConnection'), timeouts, 'direct');
    const planFor = (owned: boolean, appPoolSize?: number): ConnectionPlan => {
      const listen = direct ? 'direct' : pooler === 'transaction' ? 'none' : 'pool';
      const budget = connectionBudget({
        maxConnections: settings.maxConnections,
        owned,
        appPoolSize,
        worker: settings.worker ?? false,
        listening: listen !== 'none',
      });
      const session = owned ? ownSessionSettings(pooler, timeouts) : sessionSettingsFor(pooler);
      return { pooler, session, budget, listen, direct };
    };
    let connection: JobsConnection;
    if (settings.dataSource) {
      const ds = settings.dataSource;
      if (ds.options.type !== 'postgres') {
        throw new JobsError(
          `JobsModule: the DataSource is "${ds.options.type}"; jobs need PostgreSQL. Potential fix: pass a postgres DataSource or a "connection".`,
        );
      }
      const plan = planFor(false);
      if (!ds.isInitialized) await initialize(ds);
      await probe('dataSource', pooler, () => poolSessions(pgPoolOf(ds)), pgPoolOf(ds).options.max);
      connection = new JobsConnection(ds, schema, timeouts, false, plan, null);
    } else if (settings.connection !== undefined) {
      const options = toPostgresOptions(settings.connection);
      const plan = planFor(true, givenPoolSize(options));
      // Before any session of ours sets anything: behind an undeclared transaction pooler a SET would leak.
      await probe('connection', pooler, () => clientSessions(pgConfigOf(options, timeouts, 'probe')));
      const ds = ownedDataSource(options, timeouts, plan.session, plan.budget.app);
      await initialize(ds);
      connection = new JobsConnection(ds, schema, timeouts, true, plan, null);
    } else {
      const plan = planFor(true);
      // Through Nest's logger, like every other line of the app, unless the options name another.
      const logger = settings.embedded?.logger ?? new Logger('EmbeddedPostgres');
      const embedded = await startEmbeddedPostgres({ ...settings.embedded, logger });
      JobsConnection.logger.warn(
        'No "connection" or "dataSource" given: using an embedded PostgreSQL (a development default). Point "connection" at your own server in production.',
      );
      const ds = ownedDataSource({ url: embedded.url }, timeouts, plan.session, plan.budget.app);
      await initialize(ds).catch(async (error: unknown) => {
        await embedded.stop();
        throw error;
      });
      connection = new JobsConnection(ds, schema, timeouts, true, plan, embedded);
    }
    JobsConnection.describe(connection.plan);
    try {
      if (direct) await checkDirectConnection(direct, settings.connection);
      connection.migration = await prepareSchema(connection.dataSource, {
        schema,
        migrationsRun: settings.migrationsRun,
        direct,
        timeouts,
        workerStaleAfter: settings.workerStaleAfter,
        log: settings.quietMigrations ? null : JobsConnection.logger,
      });
    } catch (error) {
      await connection.onApplicationShutdown();
      if (error instanceof JobsError) throw error;
      const step = settings.migrationsRun ? 'migrating' : 'checking';
      throw toDatabaseError(`JobsModule: ${step} schema "${schema}"`, error);
    }
    return connection;
  }

  /** Sessions the module's own DataSource holds open now; 0 for the app's (the app counts its pool). */
  get openSessions(): number {
    return this.owned && this.dataSource.isInitialized ? pgPoolOf(this.dataSource).totalCount : 0;
  }

  /** Says once how this instance reaches the server when a pooler is in front. */
  private static describe(plan: ConnectionPlan): void {
    if (!plan.pooler) return;
    const budget = `at most ${plan.budget.max} connections`;
    if (plan.listen === 'none') {
      JobsConnection.logger.log(
        `Behind a ${plan.pooler} pooler, ${budget}. No "directConnection": no LISTEN, so workers poll for work ` +
          `(worker.pollInterval) and the scheduler for due ticks; set directConnection for wake-ups on commit.`,
      );
    } else {
      const where = plan.listen === 'direct' ? '"directConnection"' : 'the pooled connection';
      JobsConnection.logger.log(
        `Behind a ${plan.pooler} pooler, ${budget}: LISTEN${plan.direct ? ' and migrations' : ''} on ${where}.`,
      );
    }
  }

  async onApplicationShutdown(): Promise<void> {
    const close = async () => {
      if (this.owned && this.dataSource.isInitialized) await this.dataSource.destroy();
    };
    const gaveUp = !(await settlesWithin(close(), CLOSE_WITHIN_MS));
    if (gaveUp) {
      JobsConnection.logger.warn(
        `Closing the database connection did not finish within ${CLOSE_WITHIN_MS} ms; going on`,
      );
    }
    if (this.embedded) await this.embedded.stop();
  }
}

/**
 * Refuses a transaction pooler the options do not declare, before anything
 * is written; a pool of one session cannot be probed (two are needed).
 */
async function probe(
  field: 'connection' | 'dataSource',
  pooler: PoolerMode | null,
  sessions: () => ReturnType<typeof clientSessions>,
  poolMax?: number,
): Promise<void> {
  if (pooler === 'transaction' || (poolMax !== undefined && poolMax < 2)) return;
  await checkNotTransactionPooled(field, pooler, sessions());
}
