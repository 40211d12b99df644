import { JobsConnection } from './storage/connection/jobs-connection.js';
import { resolveTimeouts } from './storage/connection/timeouts.js';
import { schemaMigrations } from './storage/migrations/migration-files.js';

export interface SchemaMigrationReport {
  schema: string;
  /** Versions this call applied, in order; empty when the schema was up to date. */
  applied: number[];
  /** The version the schema is at now: this build's latest. */
  version: number;
}

/**
 * Brings a schema to this build's version without starting an app (the
 * CLI's `migrate`): the same advisory-locked migrator the module runs at
 * start, on a connection of its own that it closes again.
 */
export async function migrateJobsSchema(connection: string, schema: string): Promise<SchemaMigrationReport> {
  const opened = await JobsConnection.open({ connection, schema, migrationsRun: true, timeouts: resolveTimeouts({}) });
  try {
    const versions = schemaMigrations().map((m) => m.version);
    return { schema, applied: opened.migrated, version: Math.max(...versions) };
  } finally {
    await opened.onApplicationShutdown();
  }
}
