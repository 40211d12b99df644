import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { JobsError } from '../../model/index.js';
import { quoteIdent } from '../connection/sql-identifiers.js';
import { migrationSql, schemaMigrations, type SchemaMigration } from './migration-files.js';

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
  ];
}

/** Applied versions; throws when one was applied from different SQL than this build's. */
function checkApplied(schema: string, rows: Array<{ version: number; checksum: string | null }>): Set<number> {
  const byVersion = new Map(schemaMigrations().map((m) => [m.version, m]));
  for (const row of rows) {
    const migration = byVersion.get(row.version);
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
    `INSERT INTO ${s}.schema_version (version, name, checksum) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
    [migration.version, migration.name, migration.checksum],
  );
}

/**
 * Brings the schema to the latest version at start. Several instances may
 * start at once: a transaction-scoped advisory lock, keyed by the schema
 * name, lets one migrate while the others wait and then find nothing to do.
 * Each file runs whole (the simple query protocol takes several statements).
 */
export async function migrateSchema(dataSource: DataSource, schema: string): Promise<number[]> {
  const runner = dataSource.createQueryRunner();
  const s = quoteIdent(schema);
  const applied: number[] = [];
  try {
    await runner.connect();
    await runner.startTransaction();
    // A new index on a big table may take long: the sessions' statement timeout is not for migrations.
    await runner.query(`SET LOCAL statement_timeout = 0`);
    await runner.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`nestjs-durable-jobs:${schema}`]);
    await runner.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    for (const statement of versionTable(s)) await runner.query(statement);
    const rows = (await runner.query(`SELECT version, checksum FROM ${s}.schema_version`)) as Array<{
      version: number;
      checksum: string | null;
    }>;
    const done = checkApplied(schema, rows);
    for (const migration of schemaMigrations()) {
      if (done.has(migration.version)) continue;
      await runner.query(migrationSql(migration.up, schema));
      await recordVersion(runner, s, migration);
      applied.push(migration.version);
    }
    await runner.commitTransaction();
    return applied;
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

/** Versions the schema lacks (for `migrationsRun: false`). */
export async function pendingSchemaVersions(dataSource: DataSource, schema: string): Promise<number[]> {
  const s = quoteIdent(schema);
  const all = schemaMigrations().map((m) => m.version);
  const exists = (await dataSource.query(`SELECT to_regclass($1) AS t`, [`${s}.schema_version`])) as Array<{
    t: string | null;
  }>;
  if (!exists[0]?.t) return all;
  const hasChecksum = (await dataSource.query(
    `SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'schema_version' AND column_name = 'checksum'`,
    [schema],
  )) as unknown[];
  const rows = (await dataSource.query(
    `SELECT version, ${hasChecksum.length ? 'checksum' : 'NULL AS checksum'} FROM ${s}.schema_version`,
  )) as Array<{ version: number; checksum: string | null }>;
  const done = checkApplied(schema, rows);
  return all.filter((v) => !done.has(v));
}
