import { DataSource } from 'typeorm';
import { checkSchemaName, initialize } from './storage/connection/connection-options.js';
import { JobsConnection } from './storage/connection/jobs-connection.js';
import { resolveTimeouts } from './storage/sql/timeouts.js';
import { latestSchemaVersion } from './storage/migrations/migration-files.js';
import { grantSchema, type SchemaGrant } from './storage/migrations/schema-grants.js';
import {
  resetUnreleasedVersions,
  type DeferredVersion,
  type UnreleasedResetResult,
} from './storage/migrations/schema-migrator.js';

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
  /**
   * With `resetUnreleased`: the recorded versions after the last released
   * one that were forgotten and applied again from this build's files;
   * empty when the schema held none written by another unreleased build.
   */
  reset?: number[];
}

export interface MigrateJobsSchemaOptions {
  /**
   * Roles to grant what an app needs to run on the schema once it is
   * migrated, and no more: the app's role then needs no CREATE anywhere.
   */
  grant?: readonly string[];
  /**
   * First forget the versions after the last released one that another
   * unreleased build (a development build from main) recorded with other
   * texts, and apply this build's over what that build made, keeping the
   * jobs: the fix for a start refused for them. Refused while a worker of
   * the schema is alive.
   */
  resetUnreleased?: boolean;
}

/**
 * Brings a schema to this build's version without starting an app (the
 * CLI's `migrate`): the same advisory-locked migrator the module runs at
 * start, on a connection of its own that it closes again; first, with
 * `resetUnreleased`, the reset of another unreleased build's versions;
 * then, with `grant`, the grants an app's role needs on it.
 */
export async function migrateJobsSchema(
  connection: string,
  schema: string,
  options: MigrateJobsSchemaOptions = {},
): Promise<SchemaMigrationReport> {
  const grant = options.grant ?? [];
  const reset = options.resetUnreleased ? await resetUnreleased(connection, schema) : null;
  const opened = await JobsConnection.open({
    connection,
    schema,
    migrationsRun: true,
    timeouts: resolveTimeouts({}),
    quietMigrations: true,
  });
  try {
    const { applied, deferred, routines } = opened.migration;
    const report: SchemaMigrationReport = {
      schema,
      applied: [...(reset?.applied ?? []), ...applied],
      version: latestSchemaVersion(),
      deferred,
      routines: [...(reset?.routines ?? []), ...routines],
      ...(reset ? { reset: reset.removed } : {}),
    };
    if (!grant.length) return report;
    return { ...report, granted: await grantSchema(opened.dataSource, schema, grant) };
  } finally {
    await opened.onApplicationShutdown();
  }
}

/** The reset, on a session of its own: the module's start would refuse the schema it fixes. */
async function resetUnreleased(connection: string, schema: string): Promise<UnreleasedResetResult> {
  checkSchemaName(schema);
  const ds = new DataSource({
    type: 'postgres',
    url: connection,
    poolSize: 1,
    applicationName: 'nestjs-durable-jobs migrate',
  });
  await initialize(ds);
  try {
    return await resetUnreleasedVersions(ds, schema);
  } finally {
    await ds.destroy();
  }
}
