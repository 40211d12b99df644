import { AsyncLocalStorage } from 'node:async_hooks';
import { JobsError } from './errors.js';
import { serializeJsonValue } from './payload.js';
import { describeValue } from './validation.js';

/**
 * A job's context (`ctx.context`): a small JSON object stored beside its
 * payload, such as the tenant and the user a job runs for. Frozen, nested
 * objects and arrays included.
 */
export type JobContextData = Readonly<Record<string, unknown>>;

/**
 * The most bytes of JSON a job's context may take. Small on purpose: it is
 * copied to every job the job starts and read with every claim; ids belong
 * in it, data in the payload or a table.
 */
export const MAX_CONTEXT_BYTES = 8 * 1024;

/** The context of a job that has none: `ctx.context` is never undefined. */
export const NO_CONTEXT: JobContextData = Object.freeze({});

const CONTEXT_FIX =
  "context: { tenantId: 't-42', userId: 'u-7' }: a plain object of JSON values (ids, not class instances or Dates)";

/**
 * A context as a call gives it: `undefined` (not given: the default applies),
 * `null` (none), or its JSON text, checked to be a plain object of JSON
 * values within MAX_CONTEXT_BYTES. `where` names the call and the job.
 */
export function serializeContext(where: string, value: unknown): string | null | undefined {
  if (value === undefined || value === null) return value;
  if (typeof value !== 'object' || Array.isArray(value) || !isPlainObject(value)) {
    throw new JobsError(
      `${where}: "context" must be a plain object, got ${describeValue(value)}${constructorName(value)}. Potential fix: ${CONTEXT_FIX}.`,
    );
  }
  const json = serializeJsonValue(value, (path, reason) => contextError(where, `is not JSON at ${path} (${reason})`));
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > MAX_CONTEXT_BYTES) {
    throw contextError(
      where,
      `is ${bytes} bytes of JSON, over its bound of ${MAX_CONTEXT_BYTES} (8 KiB)`,
      'keep ids in the context (a tenant id, a user id) and load the rest in the handler or its interceptor',
    );
  }
  return json;
}

function contextError(where: string, what: string, fix = CONTEXT_FIX): JobsError {
  return new JobsError(`${where}: "context" ${what}. Potential fix: ${fix}.`);
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as object | null;
  return proto === Object.prototype || proto === null;
}

function constructorName(value: unknown): string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return '';
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== 'Object' ? ` (an instance of ${name})` : '';
}

/**
 * A stored context as a handler reads it: frozen all the way down, so that a
 * handler cannot change what its continuations and children inherit.
 */
export function frozenContext(value: unknown): JobContextData {
  if (value === null || value === undefined || typeof value !== 'object') return NO_CONTEXT;
  return deepFreeze(value) as JobContextData;
}

function deepFreeze(value: object): object {
  if (Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const child of Object.values(value)) {
    if (child !== null && typeof child === 'object') deepFreeze(child as object);
  }
  return value;
}

/**
 * The context of the job whose handler (or interceptor) is running, for
 * the jobs it enqueues through JobQueue: the worker runs each attempt of a
 * job that has a context inside it.
 */
const running = new AsyncLocalStorage<JobContextData>();

/** Runs `fn` as the attempt of a job with this context: what `fn` enqueues inherits it. */
export function runWithJobContext<T>(context: JobContextData, fn: () => T): T {
  return running.run(context, fn);
}

/** The context of the job running here (see runWithJobContext); undefined outside a handler. */
export function runningJobContext(): JobContextData | undefined {
  return running.getStore();
}

/**
 * JobsModule's `contextFrom`: the context a job gets when its enqueue gives
 * none and no job's handler is running there, read at the call (from
 * nestjs-cls, an AsyncLocalStorage of the app's, a request-scoped store).
 * Return undefined (or null) for none.
 */
export type JobContextSource = () => Record<string, unknown> | null | undefined;

/** JobsModule's `contextFrom`, checked at start: a function, or left out. */
export function checkContextFrom(value: unknown): JobContextSource | undefined {
  if (value === undefined || typeof value === 'function') return value as JobContextSource | undefined;
  throw new JobsError(
    `JobsModule: "contextFrom" must be a function that returns the context of a job enqueued here, got ${describeValue(value)}. ` +
      `Potential fix: contextFrom: () => ({ tenantId: cls.get('tenantId') }).`,
  );
}
