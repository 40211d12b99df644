import { describeValue, JobsError } from '../model/index.js';

/**
 * Reading the dashboard's query strings and bodies. Whatever arrives over
 * HTTP is checked here or by the service called, and a bad value is a
 * JobsError (a 400 through JobsErrorFilter) naming the field and the fix,
 * never a TypeError (a 500) or a filter silently dropped.
 */
export type Query = Record<string, unknown>;

const WHERE = 'Jobs dashboard';

/** Refuses query parameters the endpoint does not read: a typo must not widen a list or an action. */
export function onlyKnown(query: Query | undefined, known: readonly string[]): Query {
  const q = query ?? {};
  const unknown = Object.keys(q).filter((k) => !known.includes(k));
  if (unknown.length) {
    throw new JobsError(
      `${WHERE}: unknown query parameter ${JSON.stringify(unknown[0])}. Potential fix: use only ${known.join(', ') || 'none'}.`,
    );
  }
  return q;
}

/** One plain value, or undefined when left out or empty. */
export function one(query: Query, field: string): string | undefined {
  const value = query[field];
  if (value === undefined || value === '') return undefined;
  if (Array.isArray(value)) {
    throw new JobsError(
      `${WHERE}: "${field}" was given ${value.length} times. Potential fix: pass it once, e.g. ?${field}=${String(value[0] ?? '')}.`,
    );
  }
  if (typeof value !== 'string') {
    throw new JobsError(
      `${WHERE}: "${field}" must be a plain value. Potential fix: ?${field}=value, without brackets.`,
    );
  }
  return value;
}

/** A whole number in [min, max], or undefined when left out. */
export function integer(query: Query, field: string, min: number, max: number): number | undefined {
  const text = one(query, field);
  if (text === undefined) return undefined;
  const n = /^\d{1,10}$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new JobsError(
      `${WHERE}: "${field}" must be an integer from ${min} to ${max}, got ${describeValue(text.slice(0, 40))}. Potential fix: ?${field}=${min}.`,
    );
  }
  return n;
}

/** States as a comma list or a repeated key (?state=failed&state=queued); the service checks each. */
export function stateList(query: Query, field = 'state'): string[] | undefined {
  const value = query[field];
  if (value === undefined || value === '') return undefined;
  const parts = (Array.isArray(value) ? value : [value]).flatMap((v) =>
    typeof v === 'string' ? v.split(',') : [v as string],
  );
  if (parts.some((p) => typeof p !== 'string')) {
    throw new JobsError(`${WHERE}: "${field}" must be plain values. Potential fix: ?${field}=failed,cancelled.`);
  }
  const states = parts.map((p) => p.trim()).filter(Boolean);
  return states.length ? states : undefined;
}

/**
 * A single job's retry body: none (a plain retry, its finished steps kept),
 * or `{ "fromStep": "<name>" }` to run that step and the ones recorded after
 * it again. JobQueue.retry() checks the name and the job's state.
 */
export function retryBody(body: unknown): { fromStep?: string } {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new JobsError(
      `${WHERE}: retry: the body must be a JSON object, got ${describeValue(body)}. Potential fix: send no body, or { "fromStep": "charge" } with content-type application/json.`,
    );
  }
  const unknown = Object.keys(body).filter((k) => k !== 'fromStep');
  if (unknown.length) {
    throw new JobsError(
      `${WHERE}: retry: unknown field ${JSON.stringify(unknown[0])}. Potential fix: send no body, or { "fromStep": "charge" }.`,
    );
  }
  const { fromStep } = body as { fromStep?: unknown };
  return fromStep === undefined ? {} : { fromStep: fromStep as string };
}

/** What a bulk action works on: the rows an operator ticked, or every job matching a filter. */
interface BulkBody {
  ids?: string[];
  state?: string[];
  queue?: string;
  name?: string;
  batchId?: string;
  idPrefix?: string;
}

const BULK_FIELDS = ['ids', 'all', 'state', 'queue', 'name', 'batchId', 'idPrefix'];

/**
 * A bulk action's body: `{ ids: [...] }`, or `{ all: true, ...filter }`.
 * An empty body is refused rather than read as "every job": that is what
 * `all: true` is for, said on purpose.
 */
export function bulkBody(action: 'retry' | 'cancel', body: unknown): BulkBody {
  const where = `${WHERE}: bulk ${action}`;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new JobsError(
      `${where}: the body must be a JSON object, got ${describeValue(body)}. Potential fix: send { "ids": ["…"] } with content-type application/json.`,
    );
  }
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).filter((k) => !BULK_FIELDS.includes(k));
  if (unknown.length) {
    throw new JobsError(
      `${where}: unknown field ${JSON.stringify(unknown[0])}. Potential fix: use only ${BULK_FIELDS.join(', ')}.`,
    );
  }
  if (b.all !== undefined && b.all !== true) {
    throw new JobsError(
      `${where}: "all" must be true when given, got ${describeValue(b.all)}. Potential fix: { "all": true, "queue": "emails" }.`,
    );
  }
  if (b.ids !== undefined) {
    if (b.all === true || Object.keys(b).some((k) => k !== 'ids')) {
      throw new JobsError(
        `${where}: "ids" names the jobs by itself. Potential fix: send { "ids": [...] } alone, or a filter with "all": true.`,
      );
    }
    if (!Array.isArray(b.ids) || b.ids.length === 0) {
      throw new JobsError(
        `${where}: "ids" must be a non-empty array of job ids, got ${describeValue(b.ids)}. Potential fix: { "ids": ["…"] }.`,
      );
    }
    return { ids: b.ids as string[] };
  }
  if (b.all !== true) {
    throw new JobsError(
      `${where}: no jobs named. Potential fix: { "ids": ["…"] } for chosen jobs, or { "all": true } with state, queue, name, batchId or idPrefix for every match.`,
    );
  }
  const state = b.state === undefined ? undefined : Array.isArray(b.state) ? b.state : [b.state];
  const text = (field: string) => b[field] as string | undefined;
  return {
    ...(state ? { state: state as string[] } : {}),
    ...(b.queue !== undefined ? { queue: text('queue') } : {}),
    ...(b.name !== undefined ? { name: text('name') } : {}),
    ...(b.batchId !== undefined ? { batchId: text('batchId') } : {}),
    ...(b.idPrefix !== undefined ? { idPrefix: text('idPrefix') } : {}),
  };
}
