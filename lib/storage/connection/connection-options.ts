import pg from 'pg';
import { DataSource } from 'typeorm';
import { describeValue, JobsError, toDatabaseError } from '../../model/index.js';
import type { SessionSettings } from '../sql/session-settings.js';
import { pgSessionSettings, type ResolvedTimeouts } from '../sql/timeouts.js';

/** The first connection: a server that refuses it fails the start with a JobsDatabaseError, the driver's error its cause. */
export async function initialize(ds: DataSource, what = 'connecting to PostgreSQL'): Promise<void> {
  await ds.initialize().catch((error: unknown) => {
    throw toDatabaseError(`JobsModule: ${what}`, error);
  });
}

type PoolHook = (client: pg.PoolClient) => Promise<void>;

/**
 * A DataSource of the module's own: its sessions carry the library's name
 * and keepalive (the user's own `extra` settings win where they set them),
 * and `session`'s settings, applied by the pool's connect hook of the `pg`
 * this package depends on (the app's own hook runs after it). No
 * connection-wide query timeout: the library's queries carry their own,
 * and a migration (TypeORM's runner) may rightly take long.
 */
export function ownedDataSource(
  options: Record<string, unknown>,
  timeouts: ResolvedTimeouts,
  session: SessionSettings,
  poolSize?: number,
): DataSource {
  const {
    application_name,
    connectionTimeoutMillis,
    query_timeout: _perQuery,
    ...extra
  } = pgSessionSettings(timeouts, '');
  const given = (options.extra as Record<string, unknown> | undefined) ?? {};
  const ours = session.poolHook().onConnect;
  const theirs = given.onConnect as PoolHook | undefined;
  const onConnect: PoolHook | undefined =
    ours && theirs ? async (c) => (await ours(c), await theirs(c)) : (ours ?? theirs);
  return new DataSource({
    applicationName: application_name,
    connectTimeoutMS: connectionTimeoutMillis,
    driver: pg,
    ...options,
    ...(poolSize === undefined ? {} : { poolSize }),
    extra: { ...extra, ...given, ...(onConnect ? { onConnect } : {}) },
    type: 'postgres',
    entities: [],
    synchronize: false,
  } as never);
}

/** The pool size the app set on options the module opens (`poolSize`, or `extra.max`), if any. */
export function givenPoolSize(options: Record<string, unknown>): number | undefined {
  const size = (options.extra as { max?: unknown } | undefined)?.max ?? options.poolSize;
  return typeof size === 'number' ? size : undefined;
}

/** A `pg` client config for TypeORM postgres options, as TypeORM's driver builds its pool's. */
export function pgConfigOf(
  options: Record<string, unknown>,
  timeouts: ResolvedTimeouts,
  role: string,
): pg.ClientConfig {
  const o = options as Record<string, never>;
  const { query_timeout: _q, ...session } = pgSessionSettings(timeouts, role);
  return {
    connectionString: o.url,
    host: o.host,
    user: o.username,
    password: o.password,
    database: o.database,
    port: o.port,
    ssl: o.ssl,
    ...session,
    ...((o.extra as object | undefined) ?? {}),
  };
}

/**
 * What PostgreSQL accepts as a schema the library may create: a plain
 * identifier of at most 63 bytes (longer ones are truncated, so two names
 * would meet in one schema), and not `pg_`, which is reserved.
 */
export function checkSchemaName(schema: unknown): void {
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

const ENV_OF: Record<string, string> = {
  connection: 'DATABASE_URL',
  directConnection: 'DIRECT_DATABASE_URL',
  'monitoring.replica': 'REPLICA_URL',
};
const LEAVE_OUT: Record<string, string> = {
  connection: 'leave "connection" out to use the embedded development database',
  directConnection: 'leave "directConnection" out to poll instead of listening',
  'monitoring.replica': 'leave "monitoring.replica" out to read from the primary',
};

/** A URL or TypeORM postgres options as the options of a DataSource; a JobsError for anything else. */
export function toPostgresOptions(
  connection: string | Record<string, unknown>,
  field = 'connection',
): Record<string, unknown> {
  const env = ENV_OF[field] ?? 'DATABASE_URL';
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
      `JobsModule: "${field}.url" is undefined (is ${env} set?). Potential fix: set the variable, or ${LEAVE_OUT[field] ?? `leave "${field}" out`}.`,
    );
  }
  return connection;
}
