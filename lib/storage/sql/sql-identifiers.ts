/** Quotes a PostgreSQL identifier (schema names come from configuration). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * A list of constant strings as SQL literals (`'a', 'b'`), for state names
 * and the like that the model defines: the SQL then spells them from the
 * model's one list. Never for user input, which goes in parameters.
 */
export function sqlLiterals(values: readonly string[]): string {
  return values.map((v) => `'${v.replace(/'/g, "''")}'`).join(', ');
}
