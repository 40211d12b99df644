/** Jest's and Vitest's `expect.any(…)`, `expect.stringMatching(…)` and the like. */
interface AsymmetricMatcher {
  asymmetricMatch(other: unknown): boolean;
  toAsymmetricMatcher?(): string;
}

function isAsymmetricMatcher(value: unknown): value is AsymmetricMatcher {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Partial<AsymmetricMatcher>).asymmetricMatch === 'function'
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * Whether a stored payload holds what a test expects: every key the
 * expectation names matches (objects are compared the same way, so extra
 * keys in the payload are fine at any depth), arrays match item by item
 * and length, anything else by equality. A test framework's asymmetric
 * matcher stands for any value it accepts.
 */
export function matchesPayload(actual: unknown, expected: unknown): boolean {
  if (isAsymmetricMatcher(expected)) return expected.asymmetricMatch(actual);
  if (Array.isArray(expected)) {
    return (
      Array.isArray(actual) &&
      actual.length === expected.length &&
      expected.every((item, i) => matchesPayload(actual[i], item))
    );
  }
  if (isPlainObject(expected)) {
    return (
      isPlainObject(actual) &&
      Object.entries(expected).every(([key, value]) => Object.hasOwn(actual, key) && matchesPayload(actual[key], value))
    );
  }
  return Object.is(actual, expected);
}

/** A value for a message: JSON, with asymmetric matchers by their own names, long values cut. */
export function showValue(value: unknown, max = 200): string {
  let text: string;
  try {
    text =
      JSON.stringify(value, (_key, v: unknown) => {
        if (isAsymmetricMatcher(v)) return `<${v.toAsymmetricMatcher?.() ?? String(v)}>`;
        return v === undefined ? '<undefined>' : v;
      }) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
