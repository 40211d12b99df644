import { JobsConnection } from './storage/connection/jobs-connection.js';
import { resolveTimeouts } from './storage/connection/timeouts.js';
import { latestSchemaVersion } from './storage/migrations/migration-files.js';
import { grantSchema, type SchemaGrant } from './storage/migrations/schema-grants.js';
import type { DeferredVersion } from './storage/migrations/schema-migrator.js';

export type { SchemaGrant };

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
  /** What each role of `grant` was given on the schema; absent when none was named. */
  granted?: SchemaGrant[];
}

export interface MigrateJobsSchemaOptions {
  /**
   * Roles to grant what an app needs to run on the schema once it is
   * migrated, and no more: the app's role then needs no CREATE anywhere.
   */
  grant?: readonly string[];
}

/**
 * Brings a schema to this build's version without starting an app (the
 * CLI's `migrate`): the same advisory-locked migrator the module runs at
 * start, on a connection of its own that it closes again; then, with
 * `grant`, the grants an app's role needs on it.
 */
export async function migrateJobsSchema(
  connection: string,
  schema: string,
  options: MigrateJobsSchemaOptions = {},
): Promise<SchemaMigrationReport> {
  const grant = options.grant ?? [];
  const opened = await JobsConnection.open({
    connection,
    schema,
    migrationsRun: true,
    timeouts: resolveTimeouts({}),
    quietMigrations: true,
  });
  try {
    const { applied, deferred, routines } = opened.migration;
    const report = { schema, applied, version: latestSchemaVersion(), deferred, routines };
    if (!grant.length) return report;
    return { ...report, granted: await grantSchema(opened.dataSource, schema, grant) };
  } finally {
    await opened.onApplicationShutdown();
  }
}
