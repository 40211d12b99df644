import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { JobsError } from '../../model/index.js';
import {
  startEmbeddedPostgres,
  type EmbeddedPostgresHandle,
  type EmbeddedPostgresOptions,
} from './embedded-postgres.js';
import { migrateSchema, pendingSchemaVersions } from '../migrations/schema-migrator.js';

export interface JobsConnectionSettings {
  dataSource?: DataSource;
  connection?: string | Record<string, unknown>;
  embedded?: EmbeddedPostgresOptions;
  schema: string;
  migrationsRun: boolean;
}

/**
 * The database the module works on: the app's DataSource, one it owns, or
 * the embedded development server. It closes only what it opened, and only
 * after the workers have stopped (they stop in beforeApplicationShutdown).
 */
export class JobsConnection implements OnApplicationShutdown {
  private static readonly logger = new Logger('JobsModule');

  private constructor(
    readonly dataSource: DataSource,
    private readonly owned: boolean,
    private readonly embedded: EmbeddedPostgresHandle | null,
  ) {}

  static async open(settings: JobsConnectionSettings): Promise<JobsConnection> {
    const { schema } = settings;
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
      throw new JobsError(
        `JobsModule: schema "${schema}" is not a plain identifier. Potential fix: schema: 'jobs' (letters, digits, underscores).`,
      );
    }
    let connection: JobsConnection;
    if (settings.dataSource) {
      const ds = settings.dataSource;
      if (ds.options.type !== 'postgres') {
        throw new JobsError(
          `JobsModule: the DataSource is "${ds.options.type}"; jobs need PostgreSQL. Potential fix: pass a postgres DataSource or a "connection".`,
        );
      }
      if (!ds.isInitialized) await ds.initialize();
      connection = new JobsConnection(ds, false, null);
    } else if (settings.connection !== undefined) {
      const ds = new DataSource({
        ...toPostgresOptions(settings.connection),
        type: 'postgres',
        entities: [],
        synchronize: false,
      });
      await ds.initialize();
      connection = new JobsConnection(ds, true, null);
    } else {
      const embedded = await startEmbeddedPostgres(settings.embedded);
      JobsConnection.logger.warn(
        'No "connection" or "dataSource" given: using an embedded PostgreSQL (a development default). Point "connection" at your own server in production.',
      );
      const ds = new DataSource({ type: 'postgres', url: embedded.url, entities: [], synchronize: false });
      await ds.initialize();
      connection = new JobsConnection(ds, true, embedded);
    }
    try {
      if (settings.migrationsRun) {
        await migrateSchema(connection.dataSource, schema);
      } else {
        const pending = await pendingSchemaVersions(connection.dataSource, schema);
        if (pending.length) {
          throw new JobsError(
            `JobsModule: schema "${schema}" lacks migration(s) ${pending.join(', ')} and migrationsRun is false. ` +
              `Potential fix: add createJobsMigrations('${schema}') to your DataSource's migrations and run them, or set migrationsRun: true.`,
          );
        }
      }
    } catch (error) {
      await connection.onApplicationShutdown();
      throw error;
    }
    return connection;
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.owned && this.dataSource.isInitialized) await this.dataSource.destroy();
    if (this.embedded) await this.embedded.stop();
  }
}

function toPostgresOptions(connection: string | Record<string, unknown>): Record<string, unknown> {
  if (typeof connection === 'string') {
    if (!connection)
      throw new JobsError(
        'JobsModule: "connection" is an empty string. Potential fix: connection: process.env.DATABASE_URL, after checking it is set.',
      );
    return { url: connection };
  }
  if ('url' in connection && !connection.url && !connection.host) {
    throw new JobsError(
      'JobsModule: "connection.url" is undefined (is DATABASE_URL set?). Potential fix: set the variable, or leave "connection" out to use the embedded development database.',
    );
  }
  return connection;
}
