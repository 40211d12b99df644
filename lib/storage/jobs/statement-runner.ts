import { createHash } from 'node:crypto';
import { withNames } from '../sql/named-params.js';

/**
 * One concern's statements, those in `prepared` as named prepared statements,
 * parsed and planned once per connection. The name carries a hash of the
 * text, because the app's pool may serve several schemas and a name must
 * mean one text.
 */
export function preparedStatements<S extends Record<string, unknown>>(sql: S, prepared: ReadonlyArray<keyof S>): S {
  return withNames(sql, (key, text) =>
    prepared.includes(key)
      ? `durable_jobs_${key}_${createHash('sha1').update(text).digest('hex').slice(0, 12)}`
      : undefined,
  );
}
