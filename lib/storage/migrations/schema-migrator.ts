import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { JobsError } from '../../model/index.js';
import { quoteIdent } from '../sql/sql-identifiers.js';
import { installRoutines, missingRoutines } from '../routines/routine-installer.js';
import { LAST_RELEASED_VERSION, latestSchemaVersion, migrationSql, schemaMigrations } from './migration-files.js';
import {
  versionTable,
  type AppliedRow,
  appliedRows,
  staleUnreleased,
  checkApplied,
  recordVersion,
} from './applied-versions.js';

/** A breaking version a start left for later, and why. */
export interface DeferredVersion {
  version: number;
  /** The reason the version's file gives for being breaking. */
  breaking: string;
  /** Live workers of builds that do not know it. */
  olderWorkers: number;
}

/** What one run of the migrator did. */
export interface SchemaMigrationResult {
  /** Versions applied, in order. */
  applied: number[];
  /** Breaking versions not applied because a worker of an older build is alive. */
  deferred: DeferredVersion[];
  /** Routines installed (their hashed names); the others were there already. */
  routines: string[];
}

/** What `resetUnreleasedVersions` did. */
export interface UnreleasedResetResult extends SchemaMigrationResult {
  /**
   * The recorded versions after the last released one that it forgot (and
   * applied again from this build's files); empty when the schema held
   * none written by another unreleased build, and it only migrated.
   */
  removed: number[];
}

/** How the migrator judges the workers of older builds. */
export interface SchemaMigrationOptions {
  /**
   * A worker whose last heartbeat is older than this, in ms, counts as
   * stopped (it crashed): the lease, as JobsMonitor judges. Default 30 000.
   */
  workerStaleAfter?: number;
}

const DEFAULT_WORKER_STALE_AFTER = 30_000;

/**
 * Live workers whose build does not know `version`: not stopped, beating
 * within the window, registered without a schema version or with an older
 * one. Read through to_jsonb so a worker table without that column
 * (release 0.1.0's) answers too.
 */
async function olderLiveWorkers(runner: QueryRunner, s: string, version: number, staleAfter: number): Promise<number> {
  const rows = (await runner.query(
    `SELECT count(*)::int AS n FROM ${s}.worker w
      WHERE w.stopped_at IS NULL AND w.last_heartbeat > $1
        AND coalesce((to_jsonb(w) ->> 'schema_version')::int, 0) < $2`,
    [new Date(Date.now() - staleAfter), version],
  )) as Array<{ n: number }>;
  return rows[0]?.n ?? 0;
}

/** Live workers of any build: not stopped, beating within the window. */
async function liveWorkers(runner: QueryRunner, s: string, staleAfter: number): Promise<number> {
  const rows = (await runner.query(
    `SELECT count(*)::int AS n FROM ${s}.worker w WHERE w.stopped_at IS NULL AND w.last_heartbeat > $1`,
    [new Date(Date.now() - staleAfter)],
  )) as Array<{ n: number }>;
  return rows[0]?.n ?? 0;
}

/** Takes the migrator's lock: transaction-scoped, keyed by the schema name. */
async function lockSchema(runner: QueryRunner, schema: string): Promise<void> {
  await runner.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`nestjs-durable-jobs:${schema}`]);
}

/**
 * Brings the schema to the latest version at start, and installs the
 * routines this build calls. Several instances may start at once: a
 * transaction-scoped advisory lock, keyed by the schema name, lets one
 * migrate while the others wait and then find nothing to do. Each file runs
 * whole (the simple query protocol takes several statements). A breaking
 * version waits while a worker of an older build is alive, since that build
 * may call what it drops; the later versions are applied all the same.
 */
export async function migrateSchema(
  dataSource: DataSource,
  schema: string,
  options: SchemaMigrationOptions = {},
): Promise<SchemaMigrationResult> {
  const { applied, deferred, routines } = await migrateLocked(dataSource, schema, options, false);
  return { applied, deferred, routines };
}

/**
 * `migrate --reset-unreleased`: for a schema that recorded versions after
 * the last released one as another unreleased build wrote them (a
 * development database made from main), forgets the records of every
 * version after the last released one and applies this build's versions,
 * which run again over what those builds made, then migrates as a start
 * does; all in one transaction under the migrator's lock. Refused while a
 * worker of the schema is alive: it must not change the tables under a
 * running app. A schema without such versions is only migrated.
 */
export async function resetUnreleasedVersions(
  dataSource: DataSource,
  schema: string,
  options: SchemaMigrationOptions = {},
): Promise<UnreleasedResetResult> {
  return migrateLocked(dataSource, schema, options, true);
}

async function migrateLocked(
  dataSource: DataSource,
  schema: string,
  options: SchemaMigrationOptions,
  resetUnreleased: boolean,
): Promise<UnreleasedResetResult> {
  const runner = dataSource.createQueryRunner();
  const s = quoteIdent(schema);
  const staleAfter = options.workerStaleAfter ?? DEFAULT_WORKER_STALE_AFTER;
  const result: UnreleasedResetResult = { applied: [], deferred: [], routines: [], removed: [] };
  try {
    await runner.connect();
    await runner.startTransaction();
    // A new index on a big table may take long: the sessions' statement timeout is not for migrations.
    await runner.query(`SET LOCAL statement_timeout = 0`);
    await lockSchema(runner, schema);
    await runner.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    for (const statement of versionTable(s)) await runner.query(statement);
    let rows = (await runner.query(appliedRows(s))) as AppliedRow[];
    if (resetUnreleased && staleUnreleased(rows).length) {
      const alive = await liveWorkers(runner, s, staleAfter);
      if (alive > 0) {
        throw new JobsError(
          `migrate --reset-unreleased: ${alive} worker(s) on schema "${schema}" are alive (a heartbeat within the last ${staleAfter / 1000} s), ` +
            `so nothing was reset: it changes the tables those apps run on. ` +
            `Potential fix: stop the apps on the schema (or wait until their heartbeats are older than that), then run it again.`,
        );
      }
      result.removed = rows.map((r) => r.version).filter((v) => v > LAST_RELEASED_VERSION);
      result.removed.sort((a, b) => a - b);
      await runner.query(`DELETE FROM ${s}.schema_version WHERE version > $1`, [LAST_RELEASED_VERSION]);
      rows = rows.filter((r) => r.version <= LAST_RELEASED_VERSION);
    }
    const done = checkApplied(schema, rows);
    for (const migration of schemaMigrations()) {
      if (done.has(migration.version)) continue;
      if (migration.breaking !== null) {
        const older = await olderLiveWorkers(runner, s, migration.version, staleAfter);
        if (older > 0) {
          result.deferred.push({ version: migration.version, breaking: migration.breaking, olderWorkers: older });
          continue;
        }
      }
      await runner.query(migrationSql(migration.up, schema));
      await recordVersion(runner, s, migration);
      result.applied.push(migration.version);
    }
    result.routines = await installRoutines(runner, schema);
    await runner.commitTransaction();
    return result;
  } catch (error) {
    if (runner.isTransactionActive) await runner.rollbackTransaction();
    throw error;
  } finally {
    await runner.release();
  }
}

/**
 * Installs the routines the schema lacks, for a start with
 * `migrationsRun: false`: the tables are the app's to migrate, the routines
 * this build calls are code and come with it. Only when one is missing does
 * it open a short transaction under the migrator's lock. Returns the names
 * installed.
 */
export async function ensureRoutines(dataSource: DataSource, schema: string): Promise<string[]> {
  if (!(await missingRoutines(dataSource, schema)).length) return [];
  const runner = dataSource.createQueryRunner();
  try {
    await runner.connect();
    await runner.startTransaction();
    await lockSchema(runner, schema);
    const installed = await installRoutines(runner, schema);
    await runner.commitTransaction();
    return installed;
  } catch (error) {
    if (runner.isTransactionActive) await runner.rollbackTransaction();
    throw error;
  } finally {
    await runner.release();
  }
}

/**
 * TypeORM migration classes for apps that run migrations themselves
 * (`migrationsRun: false`): add the returned classes to the DataSource's
 * `migrations`. Each name ends in a timestamp, as TypeORM orders by it.
 */
export function createJobsMigrations(schema = 'jobs'): Array<new () => MigrationInterface> {
  const s = quoteIdent(schema);
  const latest = latestSchemaVersion();
  return schemaMigrations().map((migration) => {
    const timestamp = 1764000000000 + migration.version;
    // TypeORM records migrations by name: the schema is part of it, so two
    // schemas migrated through one DataSource are two sets of migrations.
    const name = `DurableJobs_${schema}_v${migration.version}_${timestamp}`;
    const cls = class implements MigrationInterface {
      name = name;
      async up(runner: QueryRunner): Promise<void> {
        await runner.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
        for (const statement of versionTable(s)) await runner.query(statement);
        await runner.query(migrationSql(migration.up, schema));
        await recordVersion(runner, s, migration);
        // Installed with the last version, in its transaction: a version may leave to a routine
        // what its tables no longer do (job_deleted, for the foreign keys version 7 drops).
        if (migration.version === latest) await installRoutines(runner, schema);
      }
      async down(runner: QueryRunner): Promise<void> {
        await runner.query(migrationSql(migration.down, schema));
        await runner.query(`DELETE FROM ${s}.schema_version WHERE version = $1`, [migration.version]);
      }
    };
    Object.defineProperty(cls, 'name', { value: name });
    return cls;
  });
}

/**
 * Versions the schema lacks (for `migrationsRun: false`): every version when
 * it has none; `required` leaves out the breaking ones, which this build runs
 * without.
 */
export async function pendingSchemaVersions(
  dataSource: DataSource,
  schema: string,
): Promise<{ all: number[]; required: number[] }> {
  const s = quoteIdent(schema);
  const migrations = schemaMigrations();
  const exists = (await dataSource.query(`SELECT to_regclass($1) AS t`, [`${s}.schema_version`])) as Array<{
    t: string | null;
  }>;
  const done = exists[0]?.t
    ? checkApplied(schema, (await dataSource.query(appliedRows(s))) as AppliedRow[])
    : new Set<number>();
  const lacking = migrations.filter((m) => !done.has(m.version));
  return {
    all: lacking.map((m) => m.version),
    required: lacking.filter((m) => m.breaking === null).map((m) => m.version),
  };
}
