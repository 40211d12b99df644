import fc from 'fast-check';
import { Job, type JobHandler } from 'nestjs-durable-jobs';
import {
  asJson,
  edgeDate,
  edgeNumber,
  either,
  hostileString,
  hostileValue,
  INT4_MAX,
  maybe,
  optionsArg,
  payloadArb,
  taggedObject,
  valid,
  validDate,
  validName,
  type RowCounter,
  type Tagged,
} from './hostile-input.js';

/**
 * The jobs and per-job arguments both property files enqueue:
 * what each call is given, and what the stored row must then hold.
 */

@Job('prop-echo')
export class Echo implements JobHandler {
  run(payload: unknown) {
    return payload;
  }
}

@Job('prop-tuned', { queue: 'tuned', priority: 5, maxAttempts: 7, timeout: 1234 })
export class Tuned implements JobHandler {
  run() {}
}

/** Decorated but registered by no module of the app. */
@Job('prop-unregistered')
export class Unregistered implements JobHandler {
  run() {}
}

export class Plain {
  run() {}
}

export const DEFAULTS: Record<
  string,
  { queue: string; priority: number; maxAttempts: number; timeout: number | null }
> = {
  'prop-echo': { queue: 'default', priority: 0, maxAttempts: 3, timeout: null },
  'prop-tuned': { queue: 'tuned', priority: 5, maxAttempts: 7, timeout: 1234 },
  'ext-name-only': { queue: 'default', priority: 0, maxAttempts: 3, timeout: null },
};
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const nameOf = (job: unknown): string =>
  job === Echo ? 'prop-echo' : job === Tuned ? 'prop-tuned' : (job as string);

/** Every app of the property files runs on a ManualClock standing at T0. */
export const T0 = Date.UTC(2026, 5, 1, 12);

export const jobRef: fc.Arbitrary<Tagged<unknown>> = fc.oneof(
  { weight: 10, arbitrary: valid(fc.constantFrom<unknown>(Echo, 'prop-echo', Tuned, 'prop-tuned')) },
  {
    weight: 2,
    arbitrary: maybe(
      fc.constantFrom<unknown>(Unregistered, Plain, 'ext-name-only', 'no-such-job', 'PROP-ECHO', 'prop-echo\u0000'),
    ),
  },
  { weight: 2, arbitrary: maybe(hostileValue) },
);

const timing: fc.Arbitrary<Tagged<Record<string, unknown>>> = fc.oneof(
  { weight: 8, arbitrary: valid(fc.constant({})) },
  { weight: 4, arbitrary: valid(fc.double({ min: 0, max: 1e12, noNaN: true }).map((delay) => ({ delay }))) },
  { weight: 4, arbitrary: valid(validDate.map((runAt) => ({ runAt }))) },
  { weight: 1, arbitrary: maybe(fc.oneof(edgeNumber, hostileValue).map((delay) => ({ delay }))) },
  { weight: 1, arbitrary: maybe(fc.oneof(edgeDate, hostileValue).map((runAt) => ({ runAt }))) },
  { weight: 1, arbitrary: maybe(fc.record({ delay: fc.nat(), runAt: validDate })) },
);

/** Per-job options: each field absent, valid, or hostile; `extra` adds fields of a call's own. */
export function stepOptions(extra: Record<string, fc.Arbitrary<Tagged<unknown>>> = {}): fc.Arbitrary<Tagged<unknown>> {
  const fields = taggedObject({
    queue: either(validName, fc.oneof(hostileString, hostileValue)),
    priority: either(fc.integer({ min: -INT4_MAX, max: INT4_MAX }), fc.oneof(edgeNumber, hostileValue)),
    maxAttempts: either(fc.integer({ min: 1, max: 1_000_000 }), fc.oneof(edgeNumber, hostileValue)),
    timeout: either(fc.integer({ min: 1, max: INT4_MAX }), fc.oneof(edgeNumber, hostileValue)),
    ...extra,
  });
  return optionsArg(
    fc.tuple(fields, timing).map(([f, t]) => ({ value: { ...t.value, ...f.value }, sure: f.sure && t.sure })),
  );
}

/** What the stored row must hold for a job enqueued with these options (at ManualClock time T0). */
export function expected(job: unknown, options: unknown) {
  const o = (options ?? {}) as Record<string, unknown>;
  const name = nameOf(job);
  const d = DEFAULTS[name]!;
  const zero = (n: unknown) => (n === 0 ? 0 : n); // -0 is stored as 0
  const runAt =
    o.runAt !== undefined
      ? (o.runAt as Date).getTime()
      : o.delay !== undefined
        ? new Date(T0 + (o.delay as number)).getTime()
        : T0;
  return {
    name,
    queue: o.queue ?? d.queue,
    priority: zero(o.priority ?? d.priority),
    maxAttempts: zero(o.maxAttempts ?? d.maxAttempts),
    timeout: o.timeout ?? d.timeout,
    runAt,
  };
}

export type Row = Record<string, unknown>;
/** The stored rows of these ids, in their order. */
export async function rowsOf(counter: RowCounter, ids: string[]): Promise<Row[]> {
  const rows = await counter.query<Row>(
    `SELECT id, name, queue, priority, max_attempts, timeout_ms, run_at, state, payload FROM :S.job WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  const byId = new Map(rows.map((r) => [r.id as string, r]));
  return ids.map((id) => byId.get(id) ?? { missing: id });
}

export function expectRow(row: Row, job: unknown, payload: unknown, options: unknown, state = 'queued'): void {
  const e = expected(job, options);
  expect(row).toMatchObject({
    name: e.name,
    queue: e.queue,
    priority: e.priority,
    max_attempts: e.maxAttempts,
    timeout_ms: e.timeout,
    state,
  });
  expect((row.run_at as Date).getTime()).toBe(e.runAt);
  expect(row.payload).toEqual(asJson(payload));
}

/** JSON with object keys sorted: jsonb keeps its own key order. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

/** A stored row as one comparable string, for rows whose order the API does not define (batch members). */
export const signatureOf = (row: Row): string =>
  canonical([
    row.name,
    row.queue,
    row.priority,
    row.max_attempts,
    row.timeout_ms,
    (row.run_at as Date).getTime(),
    row.state,
    row.payload,
  ]);

/** The signature the row of a job given (job, payload, options) must have. */
export function expectedSignature(job: unknown, payload: unknown, options: unknown, state: string): string {
  const e = expected(job, options);
  return canonical([e.name, e.queue, e.priority, e.maxAttempts, e.timeout, e.runAt, state, asJson(payload)]);
}

/** One job of a call: what to run, its payload and its options, each tagged. */
export const jobArgs = fc.record({ job: jobRef, payload: payloadArb, options: stepOptions() });
export type JobArgs = typeof jobArgs extends fc.Arbitrary<infer T> ? T : never;
export const argsSure = (a: JobArgs): boolean => a.job.sure && a.payload.sure && a.options.sure;
/** Jobs of a call; all valid half the time, since a list of mixed ones is almost never all valid. */
export const jobArgsList = (maxLength: number): fc.Arbitrary<JobArgs[]> =>
  fc.oneof(fc.array(jobArgs.filter(argsSure), { maxLength }), fc.array(jobArgs, { minLength: 1, maxLength }));
