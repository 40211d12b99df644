import { sql } from './database.js';

/**
 * A schema's shape as text, from pg_catalog: tables and their columns (by
 * name, so the order columns were added in does not matter), constraints
 * and indexes, each in a fixed order, and the names of the functions
 * installed (the routines: their names carry a hash of their text, so a
 * changed routine shows here as a new name), with the schema's own name
 * replaced by `<schema>`. Two schemas with the same text have the same shape.
 */
export async function dumpSchema(schema: string): Promise<string> {
  const [ns] = await sql<{ oid: number }>(`SELECT oid FROM pg_namespace WHERE nspname = $1`, [schema]);
  if (!ns) throw new Error(`no schema ${schema}`);
  const columns = await sql<{ t: string; c: string; type: string; notnull: boolean; def: string | null }>(
    `SELECT c.relname AS t, a.attname AS c, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS notnull,
            pg_get_expr(d.adbin, d.adrelid) AS def
       FROM pg_class c
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
      WHERE c.relnamespace = $1 AND c.relkind = 'r'
      ORDER BY c.relname, a.attname`,
    [ns.oid],
  );
  // PostgreSQL 18 also lists each column's NOT NULL as a constraint (contype 'n'); the columns
  // above already show it, so one snapshot holds on every major the suite runs against.
  const constraints = await sql<{ t: string; name: string; def: string }>(
    `SELECT c.relname AS t, k.conname AS name, pg_get_constraintdef(k.oid) AS def
       FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
      WHERE k.connamespace = $1 AND k.contype <> 'n' ORDER BY c.relname, k.conname`,
    [ns.oid],
  );
  const indexes = await sql<{ name: string; def: string }>(
    `SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname`,
    [schema],
  );
  const functions = await sql<{ name: string; args: string }>(
    `SELECT p.proname AS name, pg_get_function_identity_arguments(p.oid) AS args
       FROM pg_proc p WHERE p.pronamespace = $1 ORDER BY p.proname, 2`,
    [ns.oid],
  );
  const triggers = await sql<{ name: string; def: string }>(
    `SELECT t.tgname AS name, pg_get_triggerdef(t.oid) AS def
       FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
      WHERE c.relnamespace = $1 AND NOT t.tgisinternal ORDER BY t.tgname`,
    [ns.oid],
  );
  const lines: string[] = [];
  let table = '';
  for (const c of columns) {
    if (c.t !== table) lines.push(`\nTABLE ${(table = c.t)}`);
    lines.push(`  ${c.c} ${c.type}${c.notnull ? ' NOT NULL' : ''}${c.def ? ` DEFAULT ${c.def}` : ''}`);
  }
  lines.push('\nCONSTRAINTS');
  for (const k of constraints) lines.push(`  ${k.t}.${k.name}: ${k.def}`);
  lines.push('\nINDEXES');
  for (const i of indexes) lines.push(`  ${i.name}: ${i.def}`);
  lines.push('\nTRIGGERS');
  for (const t of triggers) lines.push(`  ${t.name}: ${t.def}`);
  lines.push('\nROUTINES');
  for (const f of functions) lines.push(`  ${f.name}(${f.args})`);
  return (lines.join('\n').trim() + '\n').replaceAll(`"${schema}"`, '<schema>').replaceAll(schema, '<schema>');
}
