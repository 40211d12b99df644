import type { JobListState } from '../../model/index.js';
import type { JobFilter } from './admin-storage.interface.js';

/** Positional parameters of a statement built from parts: each value gets the next `$n`. */
export class SqlParams {
  readonly values: unknown[] = [];

  add(value: unknown, cast = ''): string {
    this.values.push(value);
    return `$${this.values.length}${cast}`;
  }
}

/**
 * Each list state as a predicate the indexes serve: `queued` and
 * `scheduled` split the claim index's rows by run_at, `active` goes through
 * the lease index (a job holds a lease exactly while it is active), `waiting`
 * and `failed` have partial indexes of their own. The state names come from
 * the model's fixed list, never from input, so they are spelled inline:
 * a partial index is only chosen when its predicate is a constant.
 */
function statePredicate(state: JobListState, now: () => string): string {
  switch (state) {
    case 'queued':
      return `(state = 'queued' AND run_at <= ${now()})`;
    case 'scheduled':
      return `(state = 'queued' AND run_at > ${now()})`;
    case 'active':
      return `(state = 'active' AND lease_expires_at IS NOT NULL)`;
    default:
      return `state = '${state}'`;
  }
}

/** A hex prefix as the inclusive range of ids that start with it. */
function idPrefixRange(prefix: string): [string, string] {
  const uuid = (hex: string) =>
    `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return [uuid(prefix.padEnd(32, '0')), uuid(prefix.padEnd(32, 'f'))];
}

/**
 * The WHERE conditions of a filter: only the fields it sets, so each
 * statement is planned (unnamed, with its values) for the indexes those
 * fields can use rather than for a generic "field IS NULL OR …".
 */
export function filterConditions(f: JobFilter, params: SqlParams): string[] {
  const conditions: string[] = [];
  let nowParam: string | null = null;
  const now = () => (nowParam ??= params.add(f.now, '::timestamptz'));
  if (f.states) {
    // No state at all matches no job.
    conditions.push(f.states.length ? `(${f.states.map((s) => statePredicate(s, now)).join(' OR ')})` : 'FALSE');
  }
  if (f.queue !== null) conditions.push(`queue = ${params.add(f.queue, '::text')}`);
  if (f.name !== null) conditions.push(`name = ${params.add(f.name, '::text')}`);
  if (f.batchId !== null) conditions.push(`batch_id = ${params.add(f.batchId, '::uuid')}`);
  if (f.idPrefix !== null) {
    const [low, high] = idPrefixRange(f.idPrefix);
    conditions.push(`id BETWEEN ${params.add(low, '::uuid')} AND ${params.add(high, '::uuid')}`);
  }
  if (f.ids !== null) conditions.push(`id = ANY(${params.add(f.ids, '::uuid[]')})`);
  return conditions;
}

/**
 * A name substring as a pattern of `ILIKE … ESCAPE` backslash: the text
 * between two `%`, its own `%`, `_` and backslashes escaped so they match
 * themselves.
 */
export function containsPattern(text: string): string {
  return `%${text.replace(LIKE_SPECIAL, '\\$&')}%`;
}

const LIKE_SPECIAL = /[\\%_]/g;
