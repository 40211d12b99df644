import { JobsError } from './errors.js';
import { checkName } from './validation.js';

/**
 * The longest signal name or published key: each is recorded as a step
 * named after it (`signal:<name>`, `event:<key>#<n>`), and a step name holds
 * at most 200 characters.
 */
export const MAX_SIGNAL_NAME_LENGTH = 180;

/** A signal name or a published key: a short, non-empty, storable string. */
export function checkSignalName(where: string, field: 'name' | 'key', value: unknown, example: string): string {
  const name = checkName(where, field, value, example);
  if (name.length > MAX_SIGNAL_NAME_LENGTH) {
    throw new JobsError(
      `${where}: "${field}" is ${name.length} characters long; the limit is ${MAX_SIGNAL_NAME_LENGTH}. Potential fix: a short stable name such as '${example}'.`,
    );
  }
  return name;
}
