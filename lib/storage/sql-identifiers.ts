/** Quotes a PostgreSQL identifier (schema names come from configuration). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
