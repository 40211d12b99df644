import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { JobsError } from '../../model/index.js';
import { quoteIdent } from '../sql/sql-identifiers.js';
import { installRoutines, missingRoutines } from '../routines/routine-installer.js';
import {
  LAST_RELEASED_VERSION,
  latestSchemaVersion,
  migrationSql,
  schemaMigrations,
  type SchemaMigration,
} from './migration-files.js';

/**
 * What release 0.1.0 recorded for versions 1-3: it checksummed the same SQL
 * as a list of statements built in code. The files hold exactly that SQL,
 * so a database it migrated is accepted as it is.
 */
const RELEASE_0_1_0_CHECKSUMS: Readonly<Record<number, string>> = {
  1: '0afa6bb4306e2f0c',
  2: '91bdd86e562937af',
  3: '51ada09b1d5088c2',
};

function versionTable(s: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${s}.schema_version (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), checksum text)`,
    `ALTER TABLE ${s}.schema_version ADD COLUMN IF NOT EXISTS checksum text`,
    `ALTER TABLE ${s}.schema_version ADD COLUMN IF NOT EXISTS breaking boolean NOT NULL DEFAULT false`,
  ];
}

/** A recorded version, as every release's schema_version can answer (older ones lack columns). */
type AppliedRow = { version: number; checksum: string | null; breaking: boolean };

const appliedRows = (s: string) =>
  `SELECT v.version, to_jsonb(v) ->> 'checksum' AS checksum, coalesce((to_jsonb(v) ->> 'breaking')::boolean, false) AS breaking
     FROM ${s}.schema_version v`;

/**
 * Recorded versions after the last released one whose text differs from
 * this build's file: an unreleased build (a development build from main)
 * applied another text of them.
 */
function staleUnreleased(rows: AppliedRow[]): AppliedRow[] {
  const byVersion = new Map(schemaMigrations().map((m) => [m.version, m]));
  return rows.filter(
    (r) =>
      r.version > LAST_RELEASED_VERSION &&
      byVersion.has(r.version) &&
      byVersion.get(r.version)!.checksum !== r.checksum,
  );
}

/** Versions as a short list: runs of consecutive numbers as "4-22". */
function versionList(versions: number[]): string {
  const runs: Array<[number, number]> = [];
  for (const v of [...versions].sort((a, b) => a - b)) {
    const last = runs.at(-1);
    if (last && v === last[1] + 1) last[1] = v;
    else runs.push([v, v]);
  }
  return runs.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(', ');
}

/**
 * Applied versions; throws when one was applied from different SQL than
 * this build's, or is a breaking version this build does not know (a newer
 * build dropped or changed what this one needs). An unknown version that is
 * not breaking is one an older build runs beside. Unreleased versions
 * written by another unreleased build are the first thing it names, with
 * `migrate --reset-unreleased` as the fix.
 */
function checkApplied(schema: string, rows: AppliedRow[]): Set<number> {
  const byVersion = new Map(schemaMigrations().map((m) => [m.version, m]));
  if (staleUnreleased(rows).length) {
    const unreleased = rows.map((r) => r.version).filter((v) => v > LAST_RELEASED_VERSION);
    throw new JobsError(
      `Schema "${schema}" records version(s) ${versionList(unreleased)} of the job tables as an unreleased build of nestjs-durable-jobs wrote them ` +
        `(a development build from main: the versions after ${LAST_RELEASED_VERSION}, the last released one, may change until they are released, ` +
        `and this build's differ), so this build cannot tell what the schema holds. ` +
        `Potential fix: stop the apps on it and run "npx nestjs-durable-jobs migrate --reset-unreleased --schema ${schema}", which forgets those versions ` +
        `and applies this build's, keeping the jobs; or, in development, drop the schema (DROP SCHEMA "${schema}" CASCADE, or delete .jobs-data for the embedded database).`,
    );
  }
  for (const row of rows) {
    const migration = byVersion.get(row.version);
    if (!migration && row.breaking) {
      throw new JobsError(
        `Schema "${schema}" is at version ${row.version} of the job tables, a breaking version this build of nestjs-durable-jobs ` +
          `does not know (it knows up to ${latestSchemaVersion()}), so the schema may lack what this build calls. ` +
          `Potential fix: deploy a build that knows version ${row.version} (the newer release); to roll back past it, ` +
          `first undo version ${row.version} with its down migration (createJobsMigrations through TypeORM's migration:revert).`,
      );
    }
    if (!migration || row.checksum === migration.checksum) continue;
    if (row.checksum === RELEASE_0_1_0_CHECKSUMS[row.version]) continue;
    throw new JobsError(
      `Schema "${schema}" holds version ${row.version} of the job tables as written by a different build of nestjs-durable-jobs ` +
        `(a pre-release whose migration changed), so its tables may lack columns this build needs. ` +
        `Potential fix: in development, drop it (DROP SCHEMA "${schema}" CASCADE, or delete .jobs-data for the embedded database) and start again.`,
    );
  }
  return new Set(rows.map((r) => r.version));
}

async function recordVersion(runner: QueryRunner, s: string, migration: SchemaMigration): Promise<void> {
  await runner.query(
    `INSERT INTO ${s}.schema_version (version, name, checksum, breaking) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
    [migration.version, migration.name, migration.checksum, migration.breaking !== null],
  );
}

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
