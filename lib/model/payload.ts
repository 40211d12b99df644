import { JobsError } from './errors.js';

/** Deeper than this is a data structure gone wrong, not a job's input (and JSON itself recurses). */
const MAX_PAYLOAD_DEPTH = 64;

/**
 * Serialises a payload once, refusing what JSON would silently change
 * (functions and undefined vanish, holes become null, BigInt throws, Dates
 * become strings the handler did not expect, cycles throw) and what
 * PostgreSQL's jsonb refuses (NUL, lone surrogates). Returns the JSON text.
 */
export function serializePayload(jobName: string, payload: unknown, maxBytes: number): string {
  const json = serializeJsonValue(
    payload,
    (path, reason) =>
      new JobsError(
        `Job "${jobName}": the payload is not JSON-serialisable at ${path} (${reason}). ` +
          `Potential fix: pass plain data (objects, arrays, strings, finite numbers, booleans, null); send ids instead of class instances and convert BigInt/Date to strings.`,
      ),
  );
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > maxBytes) {
    throw new JobsError(
      `Job "${jobName}": the payload is ${bytes} bytes, over maxPayloadBytes (${maxBytes}). ` +
        `Potential fix: store the data elsewhere (a table, object storage) and pass its id, or raise JobsModule's "maxPayloadBytes".`,
    );
  }
  return json;
}

/**
 * A value's JSON text, refused as serializePayload refuses a payload: `refuse` makes the error
 * for the path of what JSON would change and why. Undefined at the root is `null`.
 */
export function serializeJsonValue(value: unknown, refuse: (path: string, reason: string) => Error): string {
  const walk = { opaque: false };
  const problem = findUnserialisable(value, walk);
  if (problem) throw refuse(problem.path, problem.reason);
  let json: string | undefined;
  try {
    json = value === undefined ? 'null' : JSON.stringify(value);
  } catch (error) {
    // Only a toJSON() can get here: the scan refused everything else that throws.
    throw refuse('$', `JSON.stringify threw: ${(error as Error)?.message ?? String(error)}`);
  }
  if (json === undefined) throw refuse('$', 'its toJSON() returned nothing');
  // What toJSON() returned was not walked: walk the data it became. (Searching the JSON text
  // for an escaped NUL instead also refused a plain string holding a backslash and "u0000".)
  if (walk.opaque) {
    const inner = findUnserialisable(JSON.parse(json) as unknown, { opaque: false });
    if (inner) throw refuse(inner.path, `${inner.reason}, in what a toJSON() returned`);
  }
  return json;
}

type Problem = { path: string; reason: string };

/**
 * Walks the value without recursion (a payload nested thousands deep must be
 * refused, not overflow the stack), reading each property once inside a
 * try: a getter or a proxy that throws is a refusal, not a crash.
 */
function findUnserialisable(root: unknown, seen: { opaque: boolean }): Problem | null {
  // `exit` frames take a container off the current path once its children are done.
  const stack: Array<{ value: unknown; path: string; depth: number; key: string } | { exit: object }> = [
    { value: root, path: '$', depth: 0, key: '' },
  ];
  const onPath = new Set<object>();
  while (stack.length) {
    const frame = stack.pop()!;
    if ('exit' in frame) {
      onPath.delete(frame.exit);
      continue;
    }
    const { value, path, depth, key } = frame;
    const leaf = checkLeaf(value, path);
    if (leaf !== undefined) {
      if (leaf) return leaf;
      continue;
    }
    const obj = value as object;
    if (onPath.has(obj)) return { path, reason: 'a circular reference' };
    if (depth >= MAX_PAYLOAD_DEPTH) return { path, reason: `nested deeper than ${MAX_PAYLOAD_DEPTH} levels` };
    const kind = containerKind(obj, path);
    if (kind === 'opaque') {
      // Below the root, a toJSON() that returns nothing makes JSON drop the key (or write null in
      // an array) without a word. What it does return is walked once it is JSON text.
      if (depth > 0) {
        const gone = toJSONReturnsNothing(obj, key, path);
        if (gone) return gone;
      }
      seen.opaque = true;
      continue;
    }
    if (typeof kind !== 'string') return kind;
    let children: Array<[string, unknown, string]>;
    try {
      children = kind === 'array' ? arrayChildren(obj as unknown[], path) : objectChildren(obj, path);
    } catch (error) {
      if (isProblem(error)) return error;
      return { path, reason: `reading it threw: ${(error as Error)?.message ?? String(error)}` };
    }
    onPath.add(obj);
    stack.push({ exit: obj });
    for (let i = children.length - 1; i >= 0; i--) {
      const [name, child, step] = children[i]!;
      stack.push({ value: child, path: path + step, depth: depth + 1, key: name });
    }
  }
  return null;
}

/** A problem with a non-container value; null when it is fine; undefined for a container. */
function checkLeaf(value: unknown, path: string): Problem | null | undefined {
  switch (typeof value) {
    case 'string': {
      const bad = jsonbRefuses(value);
      return bad ? { path, reason: bad } : null;
    }
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
    default:
      return value === null ? null : undefined;
  }
}

function containerKind(obj: object, path: string): 'array' | 'object' | 'opaque' | Problem {
  try {
    if (obj instanceof Date) return { path, reason: 'a Date (it would arrive as a string)' };
    // The object decides its own JSON; its result is checked as text afterwards.
    if (typeof (obj as { toJSON?: unknown }).toJSON === 'function') return 'opaque';
    if (obj instanceof Map || obj instanceof Set)
      return { path, reason: `a ${obj.constructor.name} (it would arrive as {})` };
    if (Array.isArray(obj)) return 'array';
    const proto = Object.getPrototypeOf(obj) as object | null;
    if (proto !== Object.prototype && proto !== null) {
      return {
        path,
        reason: `an instance of ${(obj.constructor as { name?: string } | undefined)?.name ?? 'a class'}`,
      };
    }
    return 'object';
  } catch (error) {
    return { path, reason: `reading it threw: ${(error as Error)?.message ?? String(error)}` };
  }
}

function arrayChildren(arr: unknown[], path: string): Array<[string, unknown, string]> {
  const out: Array<[string, unknown, string]> = [];
  for (let i = 0; i < arr.length; i++) {
    if (!(i in arr)) throw problem(`${path}[${i}]`, 'a hole in a sparse array (it would arrive as null)');
    out.push([String(i), arr[i], `[${i}]`]);
  }
  // Holes are refused above, so any further key is a named property, which JSON leaves out.
  const keys = Object.keys(arr);
  if (keys.length > arr.length) {
    const named = keys.find((k) => !/^(0|[1-9]\d*)$/.test(k))!;
    throw problem(`${path}.${named}`, 'a named property on an array (it would be dropped)');
  }
  return out;
}

function objectChildren(obj: object, path: string): Array<[string, unknown, string]> {
  if (Object.getOwnPropertySymbols(obj).some((s) => Object.prototype.propertyIsEnumerable.call(obj, s))) {
    throw problem(path, 'a symbol key (it would be dropped)');
  }
  const out: Array<[string, unknown, string]> = [];
  for (const key of Object.keys(obj)) {
    const bad = jsonbRefuses(key);
    if (bad) throw problem(`${path}[${JSON.stringify(key)}]`, `its key holds ${bad}`);
    let value: unknown;
    try {
      value = (obj as Record<string, unknown>)[key];
    } catch (error) {
      throw problem(`${path}.${key}`, `reading it threw: ${(error as Error)?.message ?? String(error)}`);
    }
    out.push([key, value, `.${key}`]);
  }
  return out;
}

/** JSON.stringify calls toJSON(key) the same way; one that throws is left for it to report. */
function toJSONReturnsNothing(obj: object, key: string, path: string): Problem | null {
  let out: unknown;
  try {
    out = (obj as { toJSON: (key: string) => unknown }).toJSON(key);
  } catch {
    return null;
  }
  if (out !== undefined && typeof out !== 'function' && typeof out !== 'symbol') return null;
  return {
    path,
    reason: `its toJSON() returned ${out === undefined ? 'nothing' : `a ${typeof out}`} (it would be dropped)`,
  };
}

/** NUL and lone surrogates: the two things jsonb refuses in a string. */
function jsonbRefuses(text: string): string | null {
  // eslint-disable-next-line no-control-regex
  const m = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.exec(text);
  if (!m) return null;
  return m[0] === '\u0000' ? `a NUL character at index ${m.index}` : `a lone UTF-16 surrogate at index ${m.index}`;
}

const PROBLEM = Symbol('problem');
function problem(path: string, reason: string): Problem {
  return Object.assign({ path, reason }, { [PROBLEM]: true });
}
function isProblem(value: unknown): value is Problem {
  return typeof value === 'object' && value !== null && PROBLEM in value;
}
