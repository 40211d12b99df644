import { JobsError } from '../../model/index.js';

interface DatabaseChoice {
  dataSource?: unknown;
  connection?: unknown;
  embedded?: unknown;
  given?: { connection: boolean; dataSource: boolean; embedded: boolean };
}

/**
 * The embedded development server starts only when asked for: no database
 * key at all, or `embedded`. A `connection` or `dataSource` key whose value
 * is undefined is an unset variable (`connection: process.env.DATABASE_URL`),
 * never a reason to start a throwaway database, and production never gets one.
 */
export function checkDatabaseChoice(o: DatabaseChoice, env: NodeJS.ProcessEnv = process.env): void {
  const given = o.given ?? { connection: false, dataSource: false, embedded: false };
  for (const key of ['connection', 'dataSource'] as const) {
    const other = key === 'connection' ? o.dataSource : o.connection;
    if (given[key] && o[key] === undefined && other === undefined) {
      throw new JobsError(
        `JobsModule: "${key}" is undefined, as when it is read from an unset environment variable ` +
          `(${key === 'connection' ? 'connection: process.env.DATABASE_URL' : 'a DataSource provider that returned nothing'}). ` +
          `Potential fix: set the variable (or check the provider); for the embedded development database, leave "${key}" out or pass embedded: {}.`,
      );
    }
  }
  const wantsEmbedded = o.dataSource === undefined && o.connection === undefined;
  if (!wantsEmbedded && given.embedded && o.embedded !== undefined) {
    throw new JobsError(
      `JobsModule: "embedded" is given beside ${o.dataSource !== undefined ? '"dataSource"' : '"connection"'}, and only one database can be used. ` +
        `Potential fix: leave "embedded" out to use that database, or leave the other out for the embedded development database.`,
    );
  }
  if (wantsEmbedded && env.NODE_ENV === 'production') {
    throw new JobsError(
      'JobsModule: no "connection" or "dataSource" given and NODE_ENV is "production": the embedded PostgreSQL is for development only, ' +
        'and its data would live in a local folder of this container. Potential fix: connection: process.env.DATABASE_URL (set in the environment).',
    );
  }
}
