import type { QueryRunner } from 'typeorm';
import { JobsError } from '../../model/index.js';
import {
  LAST_RELEASED_VERSION,
  latestSchemaVersion,
  schemaMigrations,
  type SchemaMigration,
} from './migration-files.js';

/*
 * The versions a schema records (its schema_version table): reading them, checking them against
 * this build's migration files, and recording one applied.
 */

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

export function versionTable(s: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${s}.schema_version (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), checksum text)`,
    `ALTER TABLE ${s}.schema_version ADD COLUMN IF NOT EXISTS checksum text`,
    `ALTER TABLE ${s}.schema_version ADD COLUMN IF NOT EXISTS breaking boolean NOT NULL DEFAULT false`,
  ];
}

/** A recorded version, as every release's schema_version can answer (older ones lack columns). */
export type AppliedRow = { version: number; checksum: string | null; breaking: boolean };

export const appliedRows = (s: string) =>
  `SELECT v.version, to_jsonb(v) ->> 'checksum' AS checksum, coalesce((to_jsonb(v) ->> 'breaking')::boolean, false) AS breaking
     FROM ${s}.schema_version v`;

/**
 * Recorded versions after the last released one whose text differs from
 * this build's file: an unreleased build (a development build from main)
 * applied another text of them.
 */
export function staleUnreleased(rows: AppliedRow[]): AppliedRow[] {
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
export function checkApplied(schema: string, rows: AppliedRow[]): Set<number> {
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

export async function recordVersion(runner: QueryRunner, s: string, migration: SchemaMigration): Promise<void> {
  await runner.query(
    `INSERT INTO ${s}.schema_version (version, name, checksum, breaking) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
    [migration.version, migration.name, migration.checksum, migration.breaking !== null],
  );
}
