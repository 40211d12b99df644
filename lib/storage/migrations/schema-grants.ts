import type { DataSource, QueryRunner } from 'typeorm';
import { JobsError, toDatabaseError } from '../../model/index.js';
import { quoteIdent } from '../sql/sql-identifiers.js';

/** What `migrate --grant` gave one role on the schema, read back from the catalog after granting. */
export interface SchemaGrant {
  role: string;
  /** Tables it may read and write (SELECT, INSERT, UPDATE, DELETE). */
  tables: string[];
  /** Sequences it may draw from (USAGE, SELECT). */
  sequences: string[];
  /** Functions it may call (EXECUTE): the routines the migrator installed among them. */
  functions: string[];
  /**
   * The role whose objects created in the schema later get the same grants
   * (ALTER DEFAULT PRIVILEGES): the one that ran this migration, so the next
   * one it runs needs no new grant.
   */
  laterObjectsOf: string;
}

/** SQLSTATE insufficient_privilege. */
const NO_PRIVILEGE = '42501';

/** What the app does on its tables: no TRUNCATE, REFERENCES or TRIGGER, and nothing on the schema but USAGE. */
const TABLE_PRIVILEGES = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'] as const;
const SEQUENCE_PRIVILEGES = ['USAGE', 'SELECT'] as const;

function grantStatements(s: string, role: string): string[] {
  const r = quoteIdent(role);
  const tables = TABLE_PRIVILEGES.join(', ');
  const sequences = SEQUENCE_PRIVILEGES.join(', ');
  return [
    `GRANT USAGE ON SCHEMA ${s} TO ${r}`,
    `GRANT ${tables} ON ALL TABLES IN SCHEMA ${s} TO ${r}`,
    `GRANT ${sequences} ON ALL SEQUENCES IN SCHEMA ${s} TO ${r}`,
    `GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ${s} TO ${r}`,
    // A later build's migrate adds tables and installs routines under new names: the same owner's new objects keep working.
    `ALTER DEFAULT PRIVILEGES IN SCHEMA ${s} GRANT ${tables} ON TABLES TO ${r}`,
    `ALTER DEFAULT PRIVILEGES IN SCHEMA ${s} GRANT ${sequences} ON SEQUENCES TO ${r}`,
    `ALTER DEFAULT PRIVILEGES IN SCHEMA ${s} GRANT EXECUTE ON FUNCTIONS TO ${r}`,
  ];
}

const MISSING_ROLES = `SELECT r AS role FROM unnest($1::text[]) AS r WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r)`;

const every = (check: string, privileges: readonly string[]) =>
  privileges.map((p) => `${check}($2::name, c.oid, '${p}')`).join(' AND ');

/**
 * The schema's objects as the role can use them. Privileges are read back
 * rather than trusted: a grantor that holds a privilege without its grant
 * option gets only a warning from GRANT, and the role nothing.
 */
const GRANTED = `
  SELECT c.relname AS name, CASE WHEN c.relkind = 'S' THEN 'sequence' ELSE 'table' END AS kind,
         CASE WHEN c.relkind = 'S' THEN ${every('has_sequence_privilege', SEQUENCE_PRIVILEGES)}
              ELSE ${every('has_table_privilege', TABLE_PRIVILEGES)} END AS usable
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = $1::name AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
  UNION ALL
  SELECT p.proname, 'function', bool_and(has_function_privilege($2::name, p.oid, 'EXECUTE'))
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
   WHERE n.nspname = $1::name AND p.prokind <> 'p'
   GROUP BY p.proname
  UNION ALL
  SELECT $1::name, 'schema', has_schema_privilege($2::name, $1::name, 'USAGE')
   ORDER BY 2, 1`;

type GrantedRow = { name: string; kind: 'table' | 'sequence' | 'function' | 'schema'; usable: boolean };

/**
 * Grants each role what an app needs to run on the schema and no more, in
 * one transaction: all roles or none. A role that does not exist is refused
 * before anything is granted.
 */
export async function grantSchema(
  dataSource: DataSource,
  schema: string,
  given: readonly string[],
): Promise<SchemaGrant[]> {
  const roles = [...new Set(given)];
  const runner = dataSource.createQueryRunner();
  try {
    await runner.connect();
    await runner.startTransaction();
    const missing = ((await runner.query(MISSING_ROLES, [roles])) as Array<{ role: string }>).map((r) => r.role);
    if (missing.length) throw missingRoles(schema, missing);
    const s = quoteIdent(schema);
    for (const role of roles) for (const statement of grantStatements(s, role)) await runner.query(statement);
    const grants: SchemaGrant[] = [];
    for (const role of roles) grants.push(await readBack(runner, schema, role));
    await runner.commitTransaction();
    return grants;
  } catch (error) {
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    throw refused(error, schema);
  } finally {
    await runner.release();
  }
}

async function readBack(runner: QueryRunner, schema: string, role: string): Promise<SchemaGrant> {
  const rows = (await runner.query(GRANTED, [schema, role])) as GrantedRow[];
  const unusable = rows.filter((r) => !r.usable);
  if (unusable.length) {
    const listed = unusable.slice(0, 4).map((r) => `${r.kind} ${r.name}`);
    if (unusable.length > listed.length) listed.push('…');
    throw new JobsError(
      `migrate --grant: role "${role}" would still lack privileges on ${unusable.length} of schema "${schema}"'s objects ` +
        `(${listed.join(', ')}): the role running migrate may not grant them, as it does not own them. Nothing was granted. ` +
        `Potential fix: run migrate --grant as the role that owns the schema's objects (the one that ran migrate before), or as a superuser.`,
    );
  }
  const named = (kind: GrantedRow['kind']) => rows.filter((r) => r.kind === kind).map((r) => r.name);
  const [{ owner }] = (await runner.query(`SELECT current_user AS owner`)) as [{ owner: string }];
  return {
    role,
    tables: named('table'),
    sequences: named('sequence'),
    functions: named('function'),
    laterObjectsOf: owner,
  };
}

function missingRoles(schema: string, missing: readonly string[]): JobsError {
  const names = missing.map((r) => `"${r}"`).join(', ');
  const create = missing.map((r) => `CREATE ROLE ${quoteIdent(r)} LOGIN PASSWORD '…';`).join(' ');
  return new JobsError(
    `migrate --grant: role(s) ${names} do not exist, so nothing was granted on schema "${schema}" ` +
      `(the schema itself is migrated). Potential fix: create the role first (${create}), ` +
      `or check the name: it is matched exactly, case included; then run migrate --grant again.`,
  );
}

/** A refused GRANT gets the role to run it as; other database errors are named after the grant. */
function refused(error: unknown, schema: string): JobsError {
  if (error instanceof JobsError) return error;
  if ((error as { code?: unknown }).code === NO_PRIVILEGE) {
    return new JobsError(
      `migrate --grant: the role running migrate may not grant on schema "${schema}" (${(error as Error).message}); nothing was granted. ` +
        `Potential fix: run migrate --grant as the role that owns the schema's objects (the one that ran migrate before), or as a superuser.`,
      { cause: error },
    );
  }
  return toDatabaseError(`migrate --grant: granting on schema "${schema}"`, error);
}
