import { createHash } from 'node:crypto';
import { notificationChannel } from '../sql/notification-topics.js';
import { quoteIdent, sqlLiterals } from '../sql/sql-identifiers.js';

/**
 * A database routine as code: its CREATE FUNCTION text, with `:SCHEMA`
 * standing for the quoted schema, `:ROUTINE` for its own name and
 * `:CHANNEL` for the schema's NOTIFY channel as a literal. It is
 * installed under `name`, which carries a hash of that text, so a build
 * calls exactly the body it shipped with: two builds running side by side
 * during a deploy each call their own, and a change to a body needs no
 * migration (an unchanged one is never replaced under a running build).
 */
export interface Routine {
  /** The name without its hash, e.g. `claim_controlled`. */
  base: string;
  /** The installed name: `base`, `_`, and the first 8 hex digits of the SHA-256 of `template`. */
  name: string;
  /** The CREATE FUNCTION text, placeholders unsubstituted. */
  template: string;
}

/**
 * The installed name of a routine with this text. The placeholders stay in
 * what is hashed, so the name is the same in every schema.
 */
export function routineName(base: string, template: string): string {
  return `${base}_${createHash('sha256').update(template).digest('hex').slice(0, 8)}`;
}

/** A routine from its base name and template. */
export function defineRoutine(base: string, template: string): Routine {
  return { base, name: routineName(base, template), template };
}

/** A routine's CREATE FUNCTION statement for one schema. */
export function routineSql(routine: Routine, schema: string): string {
  return routine.template
    .replaceAll(':ROUTINE', routine.name)
    .replaceAll(':SCHEMA', quoteIdent(schema))
    .replaceAll(':CHANNEL', sqlLiterals([notificationChannel(schema)]));
}
