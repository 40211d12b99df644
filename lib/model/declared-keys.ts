import { JobsError } from './errors.js';
import type { DeclaredKey, JobOptions } from './job-options.js';
import { checkKey, describeValue } from './validation.js';

/** The flow-control keys a job type may declare. */
export type DeclaredKeyField = 'serialKey' | 'group';

const EXAMPLES: Record<DeclaredKeyField, string> = {
  serialKey: 'serialKey: (payload) => `account-${payload.accountId}`',
  group: 'group: (payload) => `tenant-${payload.tenantId}`',
};

/** A job type's `serialKey` and `group`, checked where they are declared. */
export function checkDeclaredKeys(where: string, options: Pick<JobOptions, DeclaredKeyField>): void {
  for (const field of ['serialKey', 'group'] as const) {
    const value = options[field];
    if (value === undefined || typeof value === 'function') continue;
    if (typeof value !== 'string') {
      throw new JobsError(
        `${where}: "${field}" must be a string or a function of the payload that returns one, got ${describeValue(value)}. ` +
          `Potential fix: ${EXAMPLES[field]}.`,
      );
    }
    checkKey(where, field, value, field === 'group' ? 'tenant-42' : 'account-7');
  }
  if (options.serialKey !== undefined && options.group !== undefined) {
    throw new JobsError(
      `${where}: "serialKey" and "group" declared together: a serial key already decides the order of its jobs, so a group's fair share cannot apply to them. ` +
        `Potential fix: declare one (a serial key per tenant and account, e.g. serialKey: (p) => \`\${p.tenantId}:\${p.accountId}\`, or group alone).`,
    );
  }
}

/**
 * A declared key for one enqueue: the function applied to the payload. What
 * it returns is checked as a call's key is, naming the declaration.
 */
export function applyDeclaredKey(
  where: string,
  name: string,
  field: DeclaredKeyField,
  declared: DeclaredKey,
  payload: unknown,
): string {
  if (typeof declared !== 'function') return declared;
  const key = callKeyFunction(where, `the ${field} function that @Job('${name}') declares`, declared, payload, {
    threw: `make it return a string for every payload this job is enqueued with, or pass { ${field} } to this call`,
    returned: `return a string, e.g. ${EXAMPLES[field]}`,
  });
  return checkKey(`${where} (the ${field} @Job('${name}') declares)`, field, key, 'account-7');
}

/**
 * A key function a job type declares (a unique key, a serial key, a
 * group), called on one enqueue's payload: what it throws, or a value that
 * is not a non-empty string, is a JobsError naming `what` and the fix.
 */
export function callKeyFunction(
  where: string,
  what: string,
  fn: (payload: unknown) => unknown,
  payload: unknown,
  fixes: { threw: string; returned: string },
): string {
  let key: unknown;
  try {
    key = fn(payload);
  } catch (error) {
    throw new JobsError(
      `${where}: ${what} threw (${(error as Error)?.message ?? String(error)}). Potential fix: ${fixes.threw}.`,
    );
  }
  if (typeof key !== 'string' || key === '') {
    throw new JobsError(
      `${where}: ${what} returned ${describeValue(key)}, not a non-empty string. Potential fix: ${fixes.returned}.`,
    );
  }
  return key;
}
