import fc from 'fast-check';
import { JobsError } from '../../lib/model/errors.js';
import {
  checkOptionKeys,
  editDistance,
  isPlainObject,
  nearestKey,
  optionShape,
  recordOf,
  withFixes,
} from '../../lib/model/option-keys.js';
import { JOB_OPTIONS_SHAPE } from '../../lib/model/option-shapes.js';
import { MODULE_SHAPE } from '../../lib/jobs-options.keys.js';

/**
 * The edit distance by its definition, top down: the last characters
 * matched, substituted, deleted, inserted, or (the last two) swapped. Slow,
 * and written apart from the table the library fills, so the two check
 * each other.
 */
function reference(a: string, b: string): number {
  const memo = new Map<string, number>();
  const d = (i: number, j: number): number => {
    if (i === 0) return j;
    if (j === 0) return i;
    const key = `${i},${j}`;
    const known = memo.get(key);
    if (known !== undefined) return known;
    let best = Math.min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] === b[j - 1] ? 0 : 1));
    if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d(i - 2, j - 2) + 1);
    memo.set(key, best);
    return best;
  };
  return d(a.length, b.length);
}

/** Few letters, so generated strings often share characters, as typos of a key do. */
const word = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'A', 'x'), maxLength: 7 });
const key = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'T'), minLength: 1, maxLength: 12 });

/** One slip on `k`: a character dropped, added, replaced, or two neighbours swapped. */
const slip = (k: string) =>
  fc
    .tuple(fc.nat(k.length), fc.constantFrom('drop', 'add', 'replace', 'swap'), fc.constantFrom('a', 'q', 'Z', '_'))
    .map(([at, kind, c]) => {
      const i = Math.min(at, k.length - 1);
      if (kind === 'drop') return k.slice(0, i) + k.slice(i + 1);
      if (kind === 'add') return k.slice(0, at) + c + k.slice(at);
      if (kind === 'replace') return k.slice(0, i) + c + k.slice(i + 1);
      return i + 1 < k.length ? k.slice(0, i) + k[i + 1] + k[i] + k.slice(i + 2) : k + c;
    });

describe('editDistance', () => {
  it('agrees with the distance by its definition', () => {
    fc.assert(
      fc.property(word, word, (a, b) => expect(editDistance(a, b)).toBe(reference(a, b))),
      { numRuns: 500 },
    );
  });

  it('is a distance: zero only to itself, symmetric, at least the difference in length', () => {
    fc.assert(
      fc.property(word, word, (a, b) => {
        expect(editDistance(a, a)).toBe(0);
        expect(editDistance(a, b) === 0).toBe(a === b);
        expect(editDistance(a, b)).toBe(editDistance(b, a));
        expect(editDistance(a, b)).toBeGreaterThanOrEqual(Math.abs(a.length - b.length));
        expect(editDistance(a, b)).toBeLessThanOrEqual(Math.max(a.length, b.length));
      }),
    );
  });

  it('counts a swap of neighbours as one edit', () => {
    expect(editDistance('maxAttempts', 'maxAtetmpts')).toBe(1);
    expect(editDistance('ab', 'ba')).toBe(1);
    expect(editDistance('abc', 'ca')).toBe(3);
  });
});

describe('nearestKey', () => {
  it('names the key a misspelling meant: a letter missing, doubled or swapped, or the case changed', () => {
    expect(nearestKey('maxAtempts', JOB_OPTIONS_SHAPE.keys)).toBe('maxAttempts');
    expect(nearestKey('retension', MODULE_SHAPE.keys)).toBe('retention');
    expect(nearestKey('MAXATTEMPTS', JOB_OPTIONS_SHAPE.keys)).toBe('maxAttempts');
    expect(nearestKey('concurency', JOB_OPTIONS_SHAPE.keys)).toBe('concurrency');
  });

  it('suggests nothing for an option this version does not have', () => {
    expect(nearestKey('sandboxed', JOB_OPTIONS_SHAPE.keys)).toBeUndefined();
    expect(nearestKey('redisUrl', MODULE_SHAPE.keys)).toBeUndefined();
    expect(nearestKey('middleware', MODULE_SHAPE.keys)).toBeUndefined();
    expect(nearestKey('', JOB_OPTIONS_SHAPE.keys)).toBeUndefined();
  });

  it('for one slip on a known key, suggests that key, or one as near when two are', () => {
    const keysAndSlip = fc
      .uniqueArray(key, { minLength: 1, maxLength: 6 })
      .chain((keys) => fc.tuple(fc.constant(keys), fc.nat(keys.length - 1)))
      .chain(([keys, i]) => fc.tuple(fc.constant(keys), fc.constant(keys[i]!), slip(keys[i]!)))
      .filter(([keys, , typo]) => !keys.includes(typo));
    fc.assert(
      fc.property(keysAndSlip, ([keys, meant, typo]) => {
        const got = nearestKey(typo, keys);
        expect(got).toBeDefined();
        const distance = (k: string) => reference(typo.toLowerCase(), k.toLowerCase());
        const best = Math.min(...keys.map(distance));
        expect(distance(got!)).toBe(best);
        // Ties go to the key listed first.
        expect(got).toBe(
          keys.find((k) => distance(k) === best && distance(k) <= Math.max(1, Math.floor(k.length / 3))),
        );
        if (keys.filter((k) => distance(k) === best).length === 1 && distance(meant) === best) expect(got).toBe(meant);
      }),
      { numRuns: 500 },
    );
  });

  it('suggests only keys within one edit per three of their characters', () => {
    fc.assert(
      fc.property(fc.uniqueArray(key, { maxLength: 6 }), word, (keys, given) => {
        const got = nearestKey(given, keys);
        const close = keys.filter(
          (k) => reference(given.toLowerCase(), k.toLowerCase()) <= Math.max(1, Math.floor(k.length / 3)),
        );
        if (close.length === 0) expect(got).toBeUndefined();
        else expect(close).toContain(got);
      }),
      { numRuns: 500 },
    );
  });

  it('answers at once for a key of 300,000 characters', () => {
    expect(nearestKey('x'.repeat(300_000), MODULE_SHAPE.keys)).toBeUndefined();
  });
});

describe('checkOptionKeys', () => {
  const backoff = optionShape<{ type?: string; delay?: number }>({ type: true, delay: true });
  const shape = optionShape<{ queue?: string; backoff?: object; payload?: unknown }>({
    queue: true,
    backoff,
    payload: true,
  });
  const refusal = (value: unknown, s = shape): JobsError => {
    try {
      checkOptionKeys('@Job(x)', value, s);
    } catch (error) {
      expect(error).toBeInstanceOf(JobsError);
      return error as JobsError;
    }
    throw new Error(`${JSON.stringify(value)} was accepted`);
  };

  it('names the unknown key, the nearest known one, and lists the known ones', () => {
    expect(refusal({ queue: 'a', queeu: 'b' }).message).toBe(
      '@Job(x): unknown option "queeu". Did you mean "queue"? Known options: queue, backoff, payload. Potential fix: rename it to "queue".',
    );
    expect(refusal({ encrypted: true }).message).toBe(
      '@Job(x): unknown option "encrypted". Known options: queue, backoff, payload. Potential fix: remove it; this version of nestjs-durable-jobs has no such option.',
    );
  });

  it('gives the fix a shape states for a key that is no option there for a reason, without a guess', () => {
    const message = refusal({ quee: 1 }, withFixes(shape, { quee: 'say "queue", as it happens.' })).message;
    expect(message).toBe(
      '@Job(x): unknown option "quee". Known options: queue, backoff, payload. Potential fix: say "queue", as it happens.',
    );
    // Only own keys of the fixes: an inherited name is an unknown key like any other.
    expect(refusal({ toString: 1 }, withFixes(shape, {})).message).toMatch(/Potential fix: remove it/);
  });

  it('refuses a key whose value is undefined: the typo is the same', () => {
    expect(refusal({ queeu: undefined }).message).toMatch(/unknown option "queeu"/);
  });

  it('looks into nested options objects, and names the path', () => {
    expect(refusal({ backoff: { type: 'fixed', dealy: 5 } }).message).toMatch(
      /unknown option "backoff\.dealy"\. Did you mean "backoff\.delay"\? Known options of "backoff": type, delay\./,
    );
    const records = optionShape<{ queues?: object }>({ queues: recordOf(backoff) });
    expect(refusal({ queues: { emails: { typ: 'x' } } }, records).message).toMatch(
      /unknown option "queues\.emails\.typ"\. Did you mean "queues\.emails\.type"\?/,
    );
    expect(() => checkOptionKeys('w', { queues: { 'any name': { type: 'x' } } }, records)).not.toThrow();
  });

  it('never looks into values: payloads, arrays, class instances, getters', () => {
    class Settings {
      anything = 1;
    }
    const getter = Object.defineProperty({}, 'backoff', {
      enumerable: true,
      get() {
        throw new Error('a getter ran');
      },
    });
    for (const ok of [
      { payload: { whatever: 1, nested: { deep: true } } },
      { backoff: [1, 2] },
      { backoff: new Settings() },
      getter,
      new Settings(),
      [1, 2],
      'a string',
      null,
      undefined,
    ]) {
      expect(() => checkOptionKeys('w', ok, shape)).not.toThrow();
    }
  });

  it('takes plain objects of any realm and with no prototype, not instances', () => {
    expect(isPlainObject({})).toBe(true);
    expect(isPlainObject(Object.create(null))).toBe(true);
    expect(isPlainObject(JSON.parse('{"a":1}'))).toBe(true);
    expect(isPlainObject(new (class {})())).toBe(false);
    expect(isPlainObject(new Date())).toBe(false);
    expect(isPlainObject(new Map())).toBe(false);
    expect(refusal(Object.assign(Object.create(null) as object, { queeu: 1 })).message).toMatch(/"queeu"/);
  });

  it('refuses a proxy whose traps throw with a JobsError, not the TypeError', () => {
    const hostile = new Proxy(
      {},
      {
        ownKeys() {
          throw new TypeError('ownKeys trap');
        },
      },
    );
    expect(refusal(hostile).message).toMatch(/the options could not be read \(ownKeys trap\)\. Potential fix/);
  });

  it('shows a key as JSON, cut at 60 characters', () => {
    expect(refusal({ ['a\u0000"b']: 1 }).message).toContain('unknown option "a\\u0000\\"b"');
    expect(refusal({ ['k'.repeat(100)]: 1 }).message).toContain(`unknown option "${'k'.repeat(60)}…"`);
  });

  it('makes a shape that forgets a field, or names one the interface lacks, fail to compile', () => {
    // @ts-expect-error: "b" is missing
    const missing = optionShape<{ a?: number; b?: number }>({ a: true });
    // @ts-expect-error: "c" is not a field
    const extra = optionShape<{ a?: number }>({ a: true, c: true });
    expect([missing.keys, extra.keys]).toEqual([['a'], ['a', 'c']]);
  });
});
