import type { QueryRunner } from 'typeorm';
import { JobsError } from '../../model/index.js';
import { routineSql, type Routine } from './routine.js';
import { ROUTINES } from './routine-catalog.js';

/** PostgreSQL's SQLSTATE for a refused privilege. */
const INSUFFICIENT_PRIVILEGE = '42501';

/** The query a runner or a DataSource can send. */
interface Queryable {
  query(text: string, values?: unknown[]): Promise<unknown>;
}

/** The routines of this build not installed in the schema yet. */
export async function missingRoutines(db: Queryable, schema: string): Promise<Routine[]> {
  const rows = (await db.query(
    `SELECT p.proname AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = $1 AND p.proname = ANY($2::text[])`,
    [schema, ROUTINES.map((r) => r.name)],
  )) as Array<{ name: string }>;
  const present = new Set(rows.map((r) => r.name));
  return ROUTINES.filter((r) => !present.has(r.name));
}

/**
 * Installs the routines the schema lacks, in the caller's transaction; the
 * caller holds the migrator's advisory lock, so two instances never create
 * the same one. An installed routine is never replaced: a build still
 * running calls it. Returns the names installed.
 */
export async function installRoutines(runner: QueryRunner, schema: string): Promise<string[]> {
  const installed: string[] = [];
  for (const routine of await missingRoutines(runner, schema)) {
    try {
      await runner.query(routineSql(routine, schema));
    } catch (error) {
      throw refused(error, routine, schema);
    }
    installed.push(routine.name);
  }
  return installed;
}

function refused(error: unknown, routine: Routine, schema: string): unknown {
  if ((error as { code?: string }).code !== INSUFFICIENT_PRIVILEGE) return error;
  return new JobsError(
    `Schema "${schema}" lacks the database routine ${routine.name} (${routine.base} of this build) and this role may not create it ` +
      `(${(error as Error).message}). Potential fix: run "npx nestjs-durable-jobs migrate --schema ${schema}" as a role that may ` +
      `create functions in the schema, or GRANT CREATE ON SCHEMA "${schema}" to this role.`,
  );
}
