import {
  checkId,
  checkInteger,
  checkName,
  describeValue,
  isUuid,
  JobsError,
  type BulkFilter,
  type JobListState,
} from '../model/index.js';

/** The most ids a bulk call takes by name: a page of ticked rows, not a way around the filters. */
export const MAX_IDS = 1_000;

/** The narrowing fields of a filter, checked; null where left out. */
interface CheckedFilter {
  states: JobListState[] | null;
  queue: string | null;
  name: string | null;
  batchId: string | null;
  idPrefix: string | null;
  ids: string[] | null;
}

/** One state or several, each among `allowed`; null when left out. */
export function checkStates<S extends string>(
  where: string,
  value: unknown,
  allowed: readonly S[],
  example: S = allowed[0]!,
): S[] | null {
  if (value === undefined) return null;
  const states = Array.isArray(value) ? value : [value];
  if (states.length === 0) {
    throw new JobsError(
      `${where}: "state" is an empty array. Potential fix: leave it out, or name states such as ['${example}'].`,
    );
  }
  for (const state of states) {
    if (!(allowed as readonly unknown[]).includes(state)) {
      throw new JobsError(
        `${where}: "state" must be one of ${allowed.join(', ')}, got ${describeValue(state)}. Potential fix: state: '${example}'.`,
      );
    }
  }
  return [...new Set(states as S[])];
}

const HEX = /^[0-9a-f]{1,32}$/;
const UUID_SHAPE = 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx';

/** The start of an id, with dashes where a UUID has them or none: as lowercase hex digits. */
function checkIdPrefix(where: string, value: unknown): string {
  const fail = () =>
    new JobsError(
      `${where}: "idPrefix" must be the start of a job id (hex digits, with dashes only where a UUID has them), got ${describeValue(value)}. Potential fix: idPrefix: '0193a1b2'.`,
    );
  if (typeof value !== 'string' || value === '' || value.length > UUID_SHAPE.length) throw fail();
  const lower = value.toLowerCase();
  if (lower.includes('-')) {
    for (let i = 0; i < lower.length; i++) {
      if ((UUID_SHAPE[i] === '-') !== (lower[i] === '-')) throw fail();
    }
  }
  const hex = lower.replace(/-/g, '');
  if (!HEX.test(hex)) throw fail();
  return hex;
}

/** A page cursor: the `next` a previous page returned. */
export function checkCursor(where: string, field: string, value: unknown): string | null {
  if (value === undefined) return null;
  if (!isUuid(value)) {
    throw new JobsError(
      `${where}: "${field}" must be an id (a UUID), got ${describeValue(value)}. Potential fix: pass the "next" of the previous page.`,
    );
  }
  return value.toLowerCase();
}

export function checkLimit(where: string, value: unknown, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value === 'number' && Number.isInteger(value) && value > max) {
    throw new JobsError(
      `${where}: "limit" is ${value}; the most is ${max}. Potential fix: page with "before: page.next" instead of asking for more.`,
    );
  }
  return checkInteger(where, 'limit', value, 1, max, fallback);
}

function checkIds(where: string, value: unknown): string[] | null {
  if (value === undefined) return null;
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_IDS) {
    throw new JobsError(
      `${where}: "ids" must be an array of 1 to ${MAX_IDS} job ids, got ${describeValue(value)}. Potential fix: ids: [job.id], or filter by queue, name or batchId instead.`,
    );
  }
  return [...new Set(value.map((id, i) => checkId(`${where}: ids[${i}]`, id)))];
}

/** The fields every filter shares: queue, name, batch, ids. */
export function checkFilter(
  where: string,
  filter: BulkFilter<JobListState>,
  allowedStates: readonly JobListState[],
  example: JobListState,
): CheckedFilter {
  return {
    states: checkStates(where, filter.state, allowedStates, example),
    queue: filter.queue === undefined ? null : checkName(where, 'queue', filter.queue, 'emails'),
    name: filter.name === undefined ? null : checkName(where, 'name', filter.name, 'send-receipt'),
    batchId: filter.batchId === undefined ? null : checkId(where, filter.batchId, 'batch'),
    idPrefix: filter.idPrefix === undefined ? null : checkIdPrefix(where, filter.idPrefix),
    ids: checkIds(where, filter.ids),
  };
}
