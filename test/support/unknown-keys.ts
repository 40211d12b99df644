import fc from 'fast-check';
import { assertDelta, assertRefusal, settle, type RowCounter } from './hostile-input.js';

/**
 * Generated unknown keys for the options objects of the public API (issue
 * 23, item 7), and what the refusal of one must say: a JobsError at the
 * call, naming the key, the known options and, for a slip on a known key,
 * the key meant; with no row written.
 */

/** One options object the API takes: where it sits, what it knows, and a call that hands it over. */
export interface OptionsPosition {
  /** How the message begins: the call or the decorator, as the user wrote it. */
  where: string;
  /** Every known key, in the order the message lists them. */
  known: readonly string[];
  /** Where the object sits inside the options given, e.g. `backoff.`; empty at the top. */
  path?: string;
  /** Valid options the generated key is added to. */
  base?: () => Record<string, unknown>;
  /** Known keys the call refuses with a message of their own. */
  refusedOtherwise?: readonly string[];
  /** Hands the options over; must throw or reject. */
  call: (options: Record<string, unknown>) => unknown;
}

/** A key that is not an option, and the known key it is one slip from (null for any other string). */
export interface UnknownKey {
  key: string;
  meant: string | null;
}

/** One slip of the fingers on `key`: a character dropped, added, replaced, or two neighbours swapped. */
export function slip(key: string): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.nat(key.length),
      fc.constantFrom('drop', 'add', 'replace', 'swap'),
      fc.constantFrom('s', 'e', 'x', '_', 'A'),
    )
    .map(([at, kind, c]) => {
      const i = Math.min(at, key.length - 1);
      if (kind === 'drop') return key.slice(0, i) + key.slice(i + 1);
      if (kind === 'add') return key.slice(0, at) + c + key.slice(at);
      if (kind === 'replace') return key.slice(0, i) + c + key.slice(i + 1);
      return i + 1 < key.length ? key.slice(0, i) + key[i + 1] + key[i] + key.slice(i + 2) : key + c;
    });
}

/** Options of features this version does not have, and keys every object inherits. */
const NOT_OPTIONS = ['sandboxed', 'redisUrl', '', ' ', '__proto__', 'constructor', 'toString', 'hasOwnProperty', '0'];
const piece = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.string({ unit: 'binary', maxLength: 4 }),
  fc.constantFrom('"', "'", '\\', '\u0000', '\n', '\ud800', '🚀', 'é', '.', '$1'),
);
const anyKey = fc.array(piece, { maxLength: 4 }).map((p) => p.join(''));

/** Keys no option of `known` has: slips on known keys half the time, any string the rest. */
export function unknownKey(position: OptionsPosition): fc.Arbitrary<UnknownKey> {
  const { known } = position;
  const taken = new Set([...known, ...(position.refusedOtherwise ?? [])]);
  return fc
    .oneof(
      { weight: 2, arbitrary: fc.constantFrom(...known).chain((k) => slip(k).map((key) => ({ key, meant: k }))) },
      { weight: 1, arbitrary: fc.constantFrom(...NOT_OPTIONS).map((key) => ({ key, meant: null })) },
      { weight: 1, arbitrary: anyKey.map((key) => ({ key, meant: null })) },
    )
    .filter(({ key }) => !taken.has(key) && key.length <= 60);
}

/** What an unknown key holds: `undefined` too, since a typo is one whatever its value. */
export const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constantFrom(null, true, 0, 3, 'x', {}, [1]) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) },
);

/**
 * Whether `a` is `b` but for one slip, case aside: what the suggestion for
 * a slip on a known key must be. Written from the four slips, apart from
 * the library's edit distance.
 */
export function oneSlipApart(a: string, b: string): boolean {
  a = a.toLowerCase();
  b = b.toLowerCase();
  if (a === b) return true;
  if (a.length === b.length) {
    const diff = [...a].flatMap((c, i) => (c === b[i] ? [] : [i]));
    if (diff.length === 1) return true;
    const [i, j] = diff as [number, number];
    return diff.length === 2 && j === i + 1 && a[i] === b[j] && a[j] === b[i];
  }
  const [short, long] = a.length < b.length ? [a, b] : [b, a];
  if (long.length - short.length !== 1) return false;
  for (let i = 0; i < long.length; i++) if (long.slice(0, i) + long.slice(i + 1) === short) return true;
  return false;
}

/**
 * Hands options with `key` added over to the position's call and checks the
 * refusal: a JobsError naming the fix, from `where`, for that key, listing
 * the known options, suggesting a known key (one a slip away when the key
 * is a slip), and no row written.
 */
export async function expectUnknownKeyRefused(
  counter: RowCounter,
  position: OptionsPosition,
  { key, meant }: UnknownKey,
  value: unknown,
): Promise<void> {
  const path = position.path ?? '';
  const label = `${position.where} given ${JSON.stringify(path + key)}`;
  const options = { ...position.base?.(), [key]: value };
  const before = await counter.counts();
  const out = await settle(() => position.call(options));
  assertDelta(label, before, await counter.counts(), {});
  if (out.ok) throw new Error(`${label} was accepted`);
  assertRefusal(out.error, label);
  const message = (out.error as Error).message;
  expect(message.startsWith(`${position.where}: unknown option ${JSON.stringify(path + key)}.`)).toBe(true);
  const of = path ? ` of "${path.slice(0, -1)}"` : '';
  expect(message).toContain(`Known options${of}: ${position.known.join(', ')}.`);
  const suggested = /Did you mean "([^"]*)"\?/.exec(message)?.[1];
  if (meant !== null) expect(suggested).toBeDefined();
  if (suggested !== undefined) {
    expect(suggested.startsWith(path)).toBe(true);
    const near = suggested.slice(path.length);
    expect(position.known).toContain(near);
    if (meant !== null && !oneSlipApart(key, near))
      throw new Error(`${label}: suggested "${near}" for a slip on "${meant}"`);
    expect(message).toContain(`Potential fix: rename it to "${near}".`);
  }
}
