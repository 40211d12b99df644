import { JobsError } from './errors.js';

/**
 * The keys every options object of the public API knows, and the check that
 * refuses any other: a typo (`maxAtempts`) or an option this version does not
 * have would otherwise be dropped without a word, and the job would quietly
 * run with the default it was meant to override.
 */

/** What a known key holds: a value (never looked into), or an options object with keys of its own. */
export type OptionField = true | OptionShape;

/** The keys of an options object, and the shapes of those that hold options objects themselves. */
export interface OptionShape {
  /** Every key, in the order messages list them; empty for a record (`entries`). */
  readonly keys: readonly string[];
  readonly nested: Readonly<Record<string, OptionShape>>;
  /** Set for a record whose keys are the app's own names (queues): each value has this shape. */
  readonly entries?: OptionShape;
  /** Keys that are no option here for a reason worth saying: the fix the message gives for each. */
  readonly refused?: Readonly<Record<string, string>>;
}

/** Every key of every member of a union (keyof a union gives only the keys they share). */
type AllKeys<T> = T extends unknown ? keyof T : never;

/**
 * The shape of options of type T. `fields` must name every key of T and no
 * other (plus `Extra`, keys a call refuses with a message of its own), so a
 * field added to an interface without its key here does not compile.
 */
export function optionShape<T, Extra extends string = never>(
  fields: Record<(AllKeys<T> & string) | Extra, OptionField>,
): OptionShape {
  const nested: Record<string, OptionShape> = {};
  for (const [key, field] of Object.entries<OptionField>(fields)) if (field !== true) nested[key] = field;
  return { keys: Object.keys(fields), nested };
}

/** The shape, with the fix to give for keys people pass with a reason that does not hold here. */
export function withFixes(shape: OptionShape, refused: Record<string, string>): OptionShape {
  return { ...shape, refused };
}

/** A record keyed by the app's own names (queue names, job names), each value of `shape`. */
export function recordOf(shape: OptionShape): OptionShape {
  return { keys: [], nested: {}, entries: shape };
}

/**
 * Options written as object literals, spread, or parsed from JSON or a config
 * file: those are checked. A class instance in an options position (a
 * DataSource, a config object with state of its own) is a value, and its own
 * fields are not options. Any realm's Object.prototype counts, so objects
 * made in a vm context or by another copy of the library are plain too.
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as object | null;
  return proto === null || Object.getPrototypeOf(proto) === null;
}

/**
 * Refuses the first key `shape` does not know, here or in a nested options
 * object, naming it and the nearest known key. A key is refused whatever its
 * value, `undefined` included: `{ maxAtempts: config.attempts }` with the
 * setting unset is the same typo, and would otherwise surface only the day
 * the setting is set (in production).
 */
export function checkOptionKeys(where: string, value: unknown, shape: OptionShape, path = ''): void {
  let keys: string[];
  try {
    if (!isPlainObject(value)) return;
    keys = Object.keys(value);
  } catch (error) {
    // A proxy whose traps throw: its keys cannot be told, so neither can its options.
    throw new JobsError(
      `${where}: the options${path ? ` "${path.slice(0, -1)}"` : ''} could not be read (${(error as Error)?.message ?? String(error)}). Potential fix: pass a plain object.`,
    );
  }
  for (const key of keys) {
    const inner = shape.entries ?? (shape.keys.includes(key) ? shape.nested[key] : null);
    if (inner === null) throw unknownOption(where, key, shape, path);
    if (!inner) continue;
    // Only data properties are looked into: a getter is the caller's code, and may throw.
    const field = Object.getOwnPropertyDescriptor(value, key);
    if (field && 'value' in field) checkOptionKeys(where, field.value, inner, `${path}${key}.`);
  }
}

/** Longer keys are cut in messages, so a hostile one cannot flood a log. */
const SHOWN_KEY = 60;

function unknownOption(where: string, key: string, shape: OptionShape, path: string): JobsError {
  const shown = JSON.stringify(key.length > SHOWN_KEY ? `${key.slice(0, SHOWN_KEY)}…` : key);
  const fix = Object.hasOwn(shape.refused ?? {}, key) ? shape.refused![key] : undefined;
  const near = fix === undefined ? nearestKey(key, shape.keys) : undefined;
  const of = path ? ` of "${path.slice(0, -1)}"` : '';
  return new JobsError(
    `${where}: unknown option ${path ? `"${path}${shown.slice(1)}` : shown}.` +
      (near === undefined ? '' : ` Did you mean "${path}${near}"?`) +
      ` Known options${of}: ${shape.keys.join(', ') || 'none'}. ` +
      (fix !== undefined
        ? `Potential fix: ${fix}`
        : near === undefined
          ? 'Potential fix: remove it; this version of nestjs-durable-jobs has no such option.'
          : `Potential fix: rename it to "${near}".`),
  );
}

/**
 * The known key `given` was most likely meant as, or undefined when none is
 * close: at most one edit per three characters of the known key (at least
 * one), case ignored. Ties go to the key listed first.
 */
export function nearestKey(given: string, known: readonly string[]): string | undefined {
  const lower = given.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const key of known) {
    const limit = Math.max(1, Math.floor(key.length / 3));
    // The distance is at least the difference in length: a long key is dismissed without the table.
    if (Math.abs(key.length - given.length) > Math.min(limit, bestDistance - 1)) continue;
    const d = editDistance(lower, key.toLowerCase());
    if (d <= limit && d < bestDistance) {
      best = key;
      bestDistance = d;
    }
  }
  return best;
}

/**
 * Edits (insert, delete, substitute a character, swap two adjacent ones)
 * between two strings: the optimal string alignment distance. The swap
 * counts one, as typing "Atempts" for "Attempts" is one slip.
 */
export function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      current.push(d);
    }
    before = previous;
    previous = current;
  }
  return previous[b.length]!;
}
