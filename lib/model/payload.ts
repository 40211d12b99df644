import { JobsError } from './errors.js';

/**
 * Serialises a payload once, refusing what JSON would silently change:
 * functions and undefined vanish, BigInt throws, Dates become strings the
 * handler did not expect, cycles throw. Returns the JSON text for storage.
 */
export function serializePayload(jobName: string, payload: unknown, maxBytes: number): string {
  const problem = findUnserialisable(payload, '$', new Set());
  if (problem) {
    throw new JobsError(
      `Job "${jobName}": the payload is not JSON-serialisable at ${problem.path} (${problem.reason}). ` +
        `Potential fix: pass plain data (objects, arrays, strings, finite numbers, booleans, null); send ids instead of class instances and convert BigInt/Date to strings.`,
    );
  }
  const json = payload === undefined ? 'null' : JSON.stringify(payload);
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > maxBytes) {
    throw new JobsError(
      `Job "${jobName}": the payload is ${bytes} bytes, over maxPayloadBytes (${maxBytes}). ` +
        `Potential fix: store the data elsewhere (a table, object storage) and pass its id, or raise JobsModule's "maxPayloadBytes".`,
    );
  }
  return json;
}

function findUnserialisable(value: unknown, path: string, seen: Set<object>): { path: string; reason: string } | null {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return null;
    case 'number':
      return Number.isFinite(value) ? null : { path, reason: `${value} is not a finite number` };
    case 'bigint':
      return { path, reason: 'a BigInt' };
    case 'function':
      return { path, reason: 'a function' };
    case 'symbol':
      return { path, reason: 'a symbol' };
    case 'undefined':
      return path === '$' ? null : { path, reason: 'undefined' };
    case 'object':
      break;
  }
  if (value === null) return null;
  const obj = value as object;
  if (seen.has(obj)) return { path, reason: 'a circular reference' };
  if (typeof (obj as { toJSON?: unknown }).toJSON === 'function' && !(obj instanceof Date)) return null;
  if (obj instanceof Date) return { path, reason: 'a Date (it would arrive as a string)' };
  if (obj instanceof Map || obj instanceof Set)
    return { path, reason: `a ${obj.constructor.name} (it would arrive as {})` };
  const proto = Object.getPrototypeOf(obj) as object | null;
  if (!Array.isArray(obj) && proto !== Object.prototype && proto !== null) {
    return { path, reason: `an instance of ${obj.constructor?.name ?? 'a class'}` };
  }
  seen.add(obj);
  const entries: Array<[string, unknown]> = Array.isArray(obj)
    ? obj.map((v, i) => [`[${i}]`, v])
    : Object.entries(obj).map(([k, v]) => [`.${k}`, v]);
  for (const [key, v] of entries) {
    const found = findUnserialisable(v, path + key, seen);
    if (found) return found;
  }
  seen.delete(obj);
  return null;
}

/** Limits on what a job may carry, from JobsModule's options. */
export interface QueueSettings {
  maxPayloadBytes: number;
}

export const QUEUE_SETTINGS = Symbol('QUEUE_SETTINGS');
