import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { SCHEMA_MIGRATIONS } from './schema-migrations.js';
import { quoteIdent } from './sql-identifiers.js';

/**
 * Brings the schema to the latest version at start. Several instances may
 * start at once: a transaction-scoped advisory lock, keyed by the schema
 * name, lets one migrate while the others wait and then find nothing to do.
 */
export async function migrateSchema(dataSource: DataSource, schema: string): Promise<number[]> {
  const runner = dataSource.createQueryRunner();
  const s = quoteIdent(schema);
  const applied: number[] = [];
  try {
    await runner.connect();
    await runner.startTransaction();
    await runner.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`nestjs-durable-jobs:${schema}`]);
    await runner.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await runner.query(
      `CREATE TABLE IF NOT EXISTS ${s}.schema_version (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const rows = (await runner.query(`SELECT version FROM ${s}.schema_version`)) as Array<{ version: number }>;
    const done = new Set(rows.map((r) => r.version));
    for (const migration of SCHEMA_MIGRATIONS) {
      if (done.has(migration.version)) continue;
      for (const statement of migration.up(schema)) {
        await runner.query(statement);
      }
      await runner.query(`INSERT INTO ${s}.schema_version (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ]);
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
  return SCHEMA_MIGRATIONS.map((migration) => {
    const timestamp = 1764000000000 + migration.version;
    // TypeORM records migrations by name: the schema is part of it, so two
    // schemas migrated through one DataSource are two sets of migrations.
    const name = `DurableJobs_${schema}_v${migration.version}_${timestamp}`;
    const cls = class implements MigrationInterface {
      name = name;
      async up(runner: QueryRunner): Promise<void> {
        await runner.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
        await runner.query(
          `CREATE TABLE IF NOT EXISTS ${s}.schema_version (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
        );
        for (const statement of migration.up(schema)) await runner.query(statement);
        await runner.query(`INSERT INTO ${s}.schema_version (version, name) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [
          migration.version,
          migration.name,
        ]);
      }
      async down(runner: QueryRunner): Promise<void> {
        for (const statement of migration.down(schema)) await runner.query(statement);
        await runner.query(`DELETE FROM ${s}.schema_version WHERE version = $1`, [migration.version]);
      }
    };
    Object.defineProperty(cls, 'name', { value: name });
    return cls;
  });
}

/** Whether the schema is at the latest version (for `migrationsRun: false`). */
export async function pendingSchemaVersions(dataSource: DataSource, schema: string): Promise<number[]> {
  const s = quoteIdent(schema);
  const exists = (await dataSource.query(`SELECT to_regclass($1) AS t`, [`${s}.schema_version`])) as Array<{
    t: string | null;
  }>;
  if (!exists[0]?.t) return SCHEMA_MIGRATIONS.map((m) => m.version);
  const rows = (await dataSource.query(`SELECT version FROM ${s}.schema_version`)) as Array<{ version: number }>;
  const done = new Set(rows.map((r) => r.version));
  return SCHEMA_MIGRATIONS.filter((m) => !done.has(m.version)).map((m) => m.version);
}
