import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { describeValue, JobsError, settlesWithin, toDatabaseError } from '../../model/index.js';
import {
  ensureRoutines,
  migrateSchema,
  pendingSchemaVersions,
  type DeferredVersion,
  type SchemaMigrationResult,
} from '../migrations/schema-migrator.js';
import {
  startEmbeddedPostgres,
  type EmbeddedPostgresHandle,
  type EmbeddedPostgresOptions,
} from './embedded-postgres.js';
import { pgSessionSettings, type ResolvedTimeouts } from './timeouts.js';

interface JobsConnectionSettings {
  dataSource?: DataSource;
  connection?: string | Record<string, unknown>;
  embedded?: EmbeddedPostgresOptions;
  schema: string;
  migrationsRun: boolean;
  timeouts: ResolvedTimeouts;
  /** When a worker of an older build counts as stopped, for deferring a breaking version (the lease). */
  workerStaleAfter?: number;
  /** True when the caller reports deferred versions itself (the CLI): no log line then. */
  quietMigrations?: boolean;
}

/** How long closing the connection may take: a database that stopped answering must not hold shutdown. */
const CLOSE_WITHIN_MS = 5_000;

/**
 * The database the module works on: the app's DataSource, one it owns, or
 * the embedded development server. It closes only what it opened, and only
 * after the workers have stopped (they stop in beforeApplicationShutdown).
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
    private readonly embedded: EmbeddedPostgresHandle | null,
  ) {}

  static async open(settings: JobsConnectionSettings): Promise<JobsConnection> {
    const { schema, timeouts } = settings;
    checkSchemaName(schema);
    const owned = (options: Record<string, unknown>) => ownedDataSource(options, timeouts);
    let connection: JobsConnection;
    if (settings.dataSource) {
      const ds = settings.dataSource;
      if (ds.options.type !== 'postgres') {
        throw new JobsError(
          `JobsModule: the DataSource is "${ds.options.type}"; jobs need PostgreSQL. Potential fix: pass a postgres DataSource or a "connection".`,
        );
      }
      if (!ds.isInitialized) await initialize(ds);
      connection = new JobsConnection(ds, schema, timeouts, false, null);
    } else if (settings.connection !== undefined) {
      const ds = owned(toPostgresOptions(settings.connection));
      await initialize(ds);
      connection = new JobsConnection(ds, schema, timeouts, true, null);
    } else {
      // Through Nest's logger, like every other line of the app, unless the options name another.
      const logger = settings.embedded?.logger ?? new Logger('EmbeddedPostgres');
      const embedded = await startEmbeddedPostgres({ ...settings.embedded, logger });
      JobsConnection.logger.warn(
        'No "connection" or "dataSource" given: using an embedded PostgreSQL (a development default). Point "connection" at your own server in production.',
      );
      const ds = owned({ url: embedded.url });
      await initialize(ds).catch(async (error: unknown) => {
        await embedded.stop();
        throw error;
      });
      connection = new JobsConnection(ds, schema, timeouts, true, embedded);
    }
    try {
      if (settings.migrationsRun) {
        connection.migration = await migrateSchema(connection.dataSource, schema, {
          workerStaleAfter: settings.workerStaleAfter,
        });
        if (!settings.quietMigrations) {
          for (const d of connection.migration.deferred) JobsConnection.logger.warn(deferredLine(schema, d));
        }
      } else {
        const pending = await pendingSchemaVersions(connection.dataSource, schema);
        if (pending.required.length) {
          throw new JobsError(
            `JobsModule: schema "${schema}" lacks migration(s) ${pending.all.join(', ')} and migrationsRun is false. ` +
              `Potential fix: add createJobsMigrations('${schema}') to your DataSource's migrations and run them, or set migrationsRun: true.`,
          );
        }
        connection.migration = {
          applied: [],
          deferred: [],
          routines: await ensureRoutines(connection.dataSource, schema),
        };
      }
    } catch (error) {
      await connection.onApplicationShutdown();
      const step = settings.migrationsRun ? 'migrating' : 'checking';
      throw toDatabaseError(`JobsModule: ${step} schema "${schema}"`, error);
    }
    return connection;
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

/** The warning for a breaking version left for later: which, why, and when it will be applied. */
function deferredLine(schema: string, d: DeferredVersion): string {
  return (
    `Schema "${schema}": version ${d.version} not applied yet: it is breaking (${d.breaking}) and ${d.olderWorkers} ` +
    `worker(s) of an older build are still running. It will be applied at a later start, or by "npx nestjs-durable-jobs migrate", ` +
    `once the older instances have stopped; this build runs without it.`
  );
}

/** The first connection: a server that refuses it fails the start with a JobsDatabaseError, the driver's error its cause. */
export async function initialize(ds: DataSource, what = 'connecting to PostgreSQL'): Promise<void> {
  await ds.initialize().catch((error: unknown) => {
    throw toDatabaseError(`JobsModule: ${what}`, error);
  });
}

/**
 * A DataSource of the module's own: its sessions carry the library's name
 * and timeouts (the user's own `extra` settings win where they set them).
 * No connection-wide query timeout: the library's queries carry their own,
 * and a migration (TypeORM's runner) may rightly take long.
 */
export function ownedDataSource(options: Record<string, unknown>, timeouts: ResolvedTimeouts): DataSource {
  const session = pgSessionSettings(timeouts, '');
  const { application_name, connectionTimeoutMillis, query_timeout: _perQuery, ...extra } = session;
  return new DataSource({
    applicationName: application_name,
    connectTimeoutMS: connectionTimeoutMillis,
    ...options,
    extra: { ...extra, ...((options.extra as object | undefined) ?? {}) },
    type: 'postgres',
    entities: [],
    synchronize: false,
  } as never);
}

/**
 * What PostgreSQL accepts as a schema the library may create: a plain
 * identifier of at most 63 bytes (longer ones are truncated, so two names
 * would meet in one schema), and not `pg_`, which is reserved.
 */
function checkSchemaName(schema: unknown): void {
  if (typeof schema !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
    throw new JobsError(
      `JobsModule: "schema" must be a plain identifier of 1 to 63 letters, digits and underscores, not starting with a digit; got ${describeValue(schema)}. Potential fix: schema: 'jobs'.`,
    );
  }
  if (schema.toLowerCase().startsWith('pg_')) {
    throw new JobsError(
      `JobsModule: schema "${schema}" starts with "pg_", which PostgreSQL reserves for its own schemas. Potential fix: schema: 'jobs'.`,
    );
  }
}

export function toPostgresOptions(
  connection: string | Record<string, unknown>,
  field = 'connection',
): Record<string, unknown> {
  const env = field === 'connection' ? 'DATABASE_URL' : 'REPLICA_URL';
  if (typeof connection === 'string') {
    if (!connection)
      throw new JobsError(
        `JobsModule: "${field}" is an empty string. Potential fix: ${field}: process.env.${env}, after checking it is set.`,
      );
    return { url: connection };
  }
  if (connection === null || typeof connection !== 'object') {
    throw new JobsError(
      `JobsModule: "${field}" must be a postgres URL or TypeORM postgres options, got ${describeValue(connection)}. Potential fix: ${field}: process.env.${env}.`,
    );
  }
  if ('url' in connection && !connection.url && !connection.host) {
    throw new JobsError(
      field === 'connection'
        ? 'JobsModule: "connection.url" is undefined (is DATABASE_URL set?). Potential fix: set the variable, or leave "connection" out to use the embedded development database.'
        : `JobsModule: "${field}.url" is undefined (is ${env} set?). Potential fix: set the variable, or leave "${field}" out to read from the primary.`,
    );
  }
  return connection;
}
