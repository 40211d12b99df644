import { JobsConnection } from './storage/connection/jobs-connection.js';
import { resolveTimeouts } from './storage/connection/timeouts.js';
import { latestSchemaVersion } from './storage/migrations/migration-files.js';
import type { DeferredVersion } from './storage/migrations/schema-migrator.js';

export interface SchemaMigrationReport {
  schema: string;
  /** Versions this call applied, in order; empty when the schema was up to date. */
  applied: number[];
  /** This build's latest version: the schema's, unless a breaking version was deferred. */
  version: number;
  /** Breaking versions left for later: a worker of an older build is still running. */
  deferred: DeferredVersion[];
  /** Routines this call installed (their hashed names); empty when all were there. */
  routines: string[];
}

/**
 * Brings a schema to this build's version without starting an app (the
 * CLI's `migrate`): the same advisory-locked migrator the module runs at
 * start, on a connection of its own that it closes again.
 */
export async function migrateJobsSchema(connection: string, schema: string): Promise<SchemaMigrationReport> {
  const opened = await JobsConnection.open({
    connection,
    schema,
    migrationsRun: true,
    timeouts: resolveTimeouts({}),
    quietMigrations: true,
  });
  try {
    const { applied, deferred, routines } = opened.migration;
    return { schema, applied, version: latestSchemaVersion(), deferred, routines };
  } finally {
    await opened.onApplicationShutdown();
  }
}
