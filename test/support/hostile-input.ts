import fc from 'fast-check';
import pg from 'pg';
import { JobsError } from 'nestjs-durable-jobs';
import { JobsDatabaseError } from '../../lib/model/errors.js';
import { databaseUrl } from './database.js';

/**
 * Arbitraries and checks for the property tests of the public API (issue
 * 12): every call either succeeds and round-trips, or throws a JobsError
 * naming the fix and writes nothing.
 */

/** A generated argument and whether the API must accept it (false: it may go either way). */
export interface Tagged<T> {
  value: T;
  sure: boolean;
}

export const valid = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<Tagged<T>> => arb.map((value) => ({ value, sure: true }));
export const maybe = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<Tagged<T>> => arb.map((value) => ({ value, sure: false }));
/** Mostly accepted values, sometimes hostile ones: most runs then break one field at a time. */
export const either = <T>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<unknown>, goodWeight = 6): fc.Arbitrary<Tagged<T>> =>
  fc.oneof({ weight: goodWeight, arbitrary: valid(good) }, { weight: 1, arbitrary: maybe(bad as fc.Arbitrary<T>) });

/** An object whose fields are each left out (half the time), valid or hostile; sure when every field is. */
export function taggedObject(
  fields: Record<string, fc.Arbitrary<Tagged<unknown>>>,
): fc.Arbitrary<Tagged<Record<string, unknown>>> {
  const optional = Object.fromEntries(
    Object.entries(fields).map(([key, arb]) => [key, fc.option(arb, { nil: undefined, freq: 2 })]),
  );
  return fc.record(optional).map((f) => {
    const value: Record<string, unknown> = {};
    let sure = true;
    for (const [key, tagged] of Object.entries(f)) {
      if (tagged === undefined) continue;
      value[key] = tagged.value;
      sure &&= tagged.sure;
    }
    return { value, sure };
  });
}

/** An options argument: mostly such an object, sometimes left out, sometimes not an object at all. */
export function optionsArg(object: fc.Arbitrary<Tagged<unknown>>): fc.Arbitrary<Tagged<unknown>> {
  return fc.oneof(
    { weight: 16, arbitrary: object },
    { weight: 1, arbitrary: valid(fc.constant(undefined)) },
    { weight: 1, arbitrary: maybe(hostileValue) },
  );
}

/**
 * fast-check prints counterexamples by reading them; a throwing getter, a
 * trapping proxy or a structure 5,000 levels deep would break the report
 * itself, so such values describe themselves.
 */
function labelled<T extends object>(value: T, label: string): T {
  Object.defineProperty(value, fc.toStringMethod, { value: () => label, enumerable: false });
  return value;
}

export const INT4_MAX = 2 ** 31 - 1;
export const LATEST_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** NUL and lone surrogates: what jsonb and text refuse in any string. */
// eslint-disable-next-line no-control-regex
const UNSTORABLE_IN_JSON = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

const LONE_SURROGATES = ['\ud800', '\udbff', '\udc00', '\udfff', 'a\ud83d', '\ude00b'];
/** Characters that mean something in SQL, in array literals, in JSON text or in a message. */
const AWKWARD = [
  '"',
  "'",
  '\\',
  '{',
  '}',
  ',',
  ' ',
  'NULL',
  '\\u0000',
  '\\ud800',
  '\\"',
  '$1',
  '%s',
  "'); --",
  '🚀',
  'é',
];
const piece = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.string({ unit: 'binary', maxLength: 3 }),
  fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)),
  fc.constantFrom('\u007f', '\u2028', ...LONE_SURROGATES, ...AWKWARD),
);

/** Any string, with control characters, lone surrogates, quotes, or 9,000 to 300,000 characters. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.array(piece, { maxLength: 6 }).map((p) => p.join('')) },
  { weight: 1, arbitrary: fc.constantFrom(201, 9_000, 70_000, 300_000).map((n) => 'x'.repeat(n)) },
);

/** Text PostgreSQL's jsonb stores: anything but NUL and lone surrogates (other control characters included). */
export const jsonText: fc.Arbitrary<string> = fc
  .array(piece, { maxLength: 5 })
  .map((p) => p.join(''))
  .filter((s) => !UNSTORABLE_IN_JSON.test(s));

/** Whether a value is a name the API must take: a printable, non-blank string of at most 200 characters. */
export const isStorableName = (v: unknown): v is string =>
  typeof v === 'string' && v.trim() !== '' && v.length <= 200 && !CONTROL.test(v) && !UNSTORABLE_IN_JSON.test(v);

/** A job, queue, batch or schedule name the API must accept: printable, not blank, at most 200 characters. */
export const validName: fc.Arbitrary<string> = fc
  .array(fc.oneof(fc.string({ minLength: 1, maxLength: 6 }), fc.constantFrom(...AWKWARD)), {
    minLength: 1,
    maxLength: 6,
  })
  .map((p) => p.join(''))
  .filter(isStorableName);

export const edgeNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(
    0,
    -0,
    1,
    -1,
    0.5,
    -0.5,
    1.5,
    INT4_MAX,
    INT4_MAX + 1,
    -INT4_MAX,
    -INT4_MAX - 1,
    2 ** 32,
    2 ** 53 + 2,
    1e16,
    1e300,
    -1e300,
    5e-324,
    NaN,
    Infinity,
    -Infinity,
    1_000_000,
    1_000_001,
    10_000,
    10_001,
  ),
  fc.integer(),
  fc.double(),
);

/** Dates valid, invalid, before 1970 and after 9999. */
export const edgeDate: fc.Arbitrary<Date> = fc.oneof(
  fc
    .constantFrom(NaN, -1, 0, 1, LATEST_TIME, LATEST_TIME + 1, 8.64e15, -8.64e15, Date.UTC(2026, 5, 1))
    .map((t) => new Date(t)),
  fc.date(),
);
export const validDate: fc.Arbitrary<Date> = fc.date({
  min: new Date(0),
  max: new Date(LATEST_TIME),
  noInvalidDate: true,
});

class Point {
  x = 1;
}

const cyclic = fc.constant(null).map(() => {
  const o: Record<string, unknown> = { a: 1, list: [] };
  (o.list as unknown[]).push(o);
  return labelled(o, '<object with a cycle>');
});
const throwingGetter = fc.string({ maxLength: 4 }).map((key) =>
  labelled(
    Object.defineProperty({ ok: 1 }, key || 'k', {
      enumerable: true,
      get() {
        throw new TypeError('getter threw');
      },
    }),
    `<object whose getter ${JSON.stringify(key || 'k')} throws>`,
  ),
);
const throwingProxy = fc.constant(null).map(
  () =>
    new Proxy(
      {},
      {
        get(_t, key) {
          if (key === fc.toStringMethod) return () => '<proxy whose every trap throws>';
          throw new TypeError('get trap');
        },
        ownKeys() {
          throw new TypeError('ownKeys trap');
        },
        getPrototypeOf() {
          throw new TypeError('getPrototypeOf trap');
        },
      },
    ),
);
/** Nested `depth` levels: refused from 65 on (the limit is 64), and thousands deep without a stack overflow. */
const deep = fc.oneof(fc.integer({ min: 60, max: 70 }), fc.integer({ min: 1_000, max: 20_000 })).map((depth) => {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { v };
  return labelled(v as object, `<nested ${depth} levels deep>`);
});
const withToJson = fc
  .constantFrom<() => unknown>(
    () => 'from toJSON',
    () => ({ nested: [1, 'two'] }),
    () => undefined,
    () => '\u0000',
    () => 'a\ud800',
    () => 10n,
    () => {
      throw new Error('toJSON threw');
    },
  )
  .map((toJSON) => labelled({ toJSON }, `<object whose toJSON returns ${String(toJSON).slice(0, 40)}>`));

const instances = fc.constantFrom<() => unknown>(
  () => new Point(),
  () => new Map([[1, 2]]),
  () => new Set([1]),
  () => new Error('boom'),
  () => new Uint8Array(3),
  () => new Date(),
  () => Object.assign(Object.create(null) as object, { plain: true }),
  () => Promise.resolve(1),
  () => /regex/,
);

/** A value of any type for any argument: primitives at their edges, wrong types, odd objects. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(undefined, null, true, false, '', ' ', 'not-a-uuid'),
  hostileString,
  edgeNumber,
  fc.bigInt(),
  fc.string({ maxLength: 3 }).map((s) => Symbol(s)),
  fc.constant(() => 1),
  edgeDate,
  instances.map((make) => make()),
  fc.sparseArray(fc.integer(), { maxLength: 4 }),
  cyclic,
  fc.anything({
    maxDepth: 2,
    withBigInt: true,
    withBoxedValues: true,
    withDate: true,
    withMap: true,
    withSet: true,
    withNullPrototype: true,
    withSparseArray: true,
    withTypedArray: true,
  }),
);

/** Plain JSON the API must store exactly: awkward text, every finite number, nesting within the limit. */
export const jsonPayload: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    edgeNumber.filter(Number.isFinite),
    jsonText,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(jsonText, tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** A payload: plain JSON two times in three, otherwise anything JSON would refuse or change. */
export const payloadArb: fc.Arbitrary<Tagged<unknown>> = fc.oneof(
  { weight: 12, arbitrary: valid(jsonPayload) },
  { weight: 1, arbitrary: valid(fc.constant(undefined)) },
  {
    weight: 6,
    arbitrary: maybe(
      fc.oneof(
        hostileValue,
        deep,
        cyclic,
        throwingGetter,
        throwingProxy,
        withToJson,
        fc.dictionary(hostileString, jsonPayload, { maxKeys: 3 }),
        fc.array(hostileString, { maxLength: 3 }),
        fc.record({ nested: fc.record({ value: hostileValue }) }),
      ),
    ),
  },
);

/** What a stored payload must read back as: what JSON makes of it (undefined at the top is null). */
export const asJson = (payload: unknown): unknown => JSON.parse(JSON.stringify(payload) ?? 'null');

/** A uuid of any version and case, nobody's id. */
export const randomUuid: fc.Arbitrary<string> = fc.uuid().chain((u) => fc.constantFrom(u, u.toUpperCase()));

/** Ids that cannot name a row: shapes known to have leaked a driver error, and anything else. */
export const malformedId: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    'not-a-uuid',
    '',
    42,
    { id: 1 },
    ' 01937c5e-1a2b-7c3d-8e4f-5a6b7c8d9e0f',
    '01937c5e 1a2b 7c3d 8e4f 5a6b7c8d9e0f',
  ),
  fc.uuid().map((u) => `${u} `),
  fc.uuid().map((u) => u.replace(/-/g, '')),
  fc.uuid().map((u) => `{${u}}`),
  fc.uuid().map((u) => `${u}\u0000`),
  hostileValue.filter((v) => typeof v !== 'string' || !/^[0-9a-f-]{36}$/i.test(v)),
);

/** Rows per table of a jobs schema, read on one connection of the test's own. */
export interface RowCounts {
  job: number;
  batch: number;
  dependency: number;
  schedule: number;
}

export class RowCounter {
  private readonly client = new pg.Client({ connectionString: databaseUrl() });

  constructor(private readonly schema: string) {}

  async open(): Promise<void> {
    await this.client.connect();
  }

  async close(): Promise<void> {
    await this.client.end();
  }

  async counts(): Promise<RowCounts> {
    const s = `"${this.schema}"`;
    const { rows } = await this.client.query<RowCounts>(
      `SELECT (SELECT count(*) FROM ${s}.job)::int AS job, (SELECT count(*) FROM ${s}.job_batch)::int AS batch,
              (SELECT count(*) FROM ${s}.job_dependency)::int AS dependency,
              (SELECT count(*) FROM ${s}.recurring_schedule)::int AS schedule`,
    );
    return rows[0]!;
  }

  query<T>(text: string, values: unknown[] = []): Promise<T[]> {
    return this.client.query(text.replaceAll(':S', `"${this.schema}"`), values).then((r) => r.rows as T[]);
  }
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Runs a call, catching what it throws synchronously as well as what it rejects with. */
export async function settle<T>(call: () => T | Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await call() };
  } catch (error) {
    return { ok: false, error };
  }
}

/**
 * A refusal as the project's standard wants it: a JobsError that names the
 * fix. A JobsDatabaseError is a JobsError too, but with the database up it
 * means a driver error got through the call-site checks.
 */
export function assertRefusal(error: unknown, call: string): void {
  const ok = error instanceof JobsError && !(error instanceof JobsDatabaseError) && /Potential fix/.test(error.message);
  if (!ok) {
    const shown =
      error instanceof Error
        ? `${error.name}: ${error.message}\n${error.stack ?? ''}`
        : `a non-Error: ${fc.stringify(error)}`;
    throw new Error(`${call} leaked ${shown}`);
  }
}

/** Fails with the call's name when a count moved other than expected. */
export function assertDelta(call: string, before: RowCounts, after: RowCounts, expected: Partial<RowCounts>): void {
  const want: RowCounts = {
    job: before.job + (expected.job ?? 0),
    batch: before.batch + (expected.batch ?? 0),
    dependency: before.dependency + (expected.dependency ?? 0),
    schedule: before.schedule + (expected.schedule ?? 0),
  };
  if (JSON.stringify(after) !== JSON.stringify(want)) {
    throw new Error(
      `${call}: rows before ${JSON.stringify(before)}, after ${JSON.stringify(after)}, expected ${JSON.stringify(want)}`,
    );
  }
}

/**
 * Runs per property, bounded for a shared 2-core machine. A call that has
 * not settled after 20 s fails its run as a hang (its statements take
 * milliseconds, and even a silent database would end it at the library's
 * 35 s query timeout). Shrinking a hang retries hanging inputs, so the
 * whole property stops at 50 s and reports what it has: without that,
 * Jest's timeout would end the test and the counterexample with it. A
 * passing property takes a few seconds, so the limit only ever cuts a
 * failing one short.
 */
export const RUNS = (numRuns: number) => ({ numRuns, timeout: 20_000, interruptAfterTimeLimit: 50_000 });
/** Jest's limit for a property test: above the 50 s of RUNS plus one last 20 s run. */
export const PROPERTY_TIMEOUT = 90_000;

/**
 * Runs one generated call between two row counts. A refusal must be a
 * proper one that wrote nothing, and is a failure when the input was
 * `sure`; a success goes to `check` with the counts around it.
 */
export async function judge<T>(
  counter: RowCounter,
  tally: Tally,
  name: string,
  sure: boolean,
  call: () => T | Promise<T>,
  check: (value: T, before: RowCounts, after: RowCounts) => Promise<void> | void,
): Promise<void> {
  const before = await counter.counts();
  const out = await settle(call);
  const after = await counter.counts();
  if (!out.ok) {
    tally.refused++;
    assertRefusal(out.error, name);
    assertDelta(`${name} that threw`, before, after, {});
    if (sure) throw new Error(`${name} refused valid input: ${out.error}`);
    return;
  }
  tally.accepted++;
  await check(out.value, before, after);
}

/** One row of a table of known bad calls: a proper refusal whose message matches, and no row written. */
export async function expectRefused(counter: RowCounter, label: string, call: () => unknown, message: RegExp) {
  const before = await counter.counts();
  const out = await settle(call);
  if (out.ok) throw new Error(`${label} succeeded`);
  assertRefusal(out.error, label);
  expect((out.error as Error).message).toMatch(message);
  assertDelta(label, before, await counter.counts(), {});
}

/**
 * Accepted and refused runs of a property. Both must be common: a property
 * whose generators drifted to refusals only would pass without checking a
 * single round trip, and the other way round.
 */
export class Tally {
  accepted = 0;
  refused = 0;

  expectBoth(share = 0.1): void {
    const runs = this.accepted + this.refused;
    expect(this.accepted).toBeGreaterThanOrEqual(runs * share);
    expect(this.refused).toBeGreaterThanOrEqual(runs * share);
  }
}
