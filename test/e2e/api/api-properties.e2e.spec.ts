import type { INestApplication } from '@nestjs/common';
import fc from 'fast-check';
import {
  BatchBuilder,
  Job,
  JobQueue,
  JOBS_DATA_SOURCE,
  JobsMonitor,
  type JobCounts,
  type JobInfo,
  type JobPage,
} from 'nestjs-durable-jobs';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import type { DataSource } from 'typeorm';
import { dropSchemas, uniqueSchema } from '../../support/database.js';
import {
  asJson,
  assertDelta,
  edgeDate,
  edgeNumber,
  expectRefused,
  either,
  hostileString,
  hostileValue,
  INT4_MAX,
  jsonPayload,
  judge,
  LATEST_TIME,
  malformedId,
  maybe,
  optionsArg,
  payloadArb,
  randomUuid,
  RowCounter,
  PROPERTY_TIMEOUT,
  RUNS,
  taggedObject,
  Tally,
  valid,
  validDate,
  validName,
  type Tagged,
} from '../../support/hostile-input.js';
import { startJobsApp } from '../../support/jobs-app.js';
import {
  Echo,
  expected,
  expectRow,
  jobRef,
  rowsOf,
  stepOptions,
  T0,
  Tuned,
  UUID,
} from '../../support/property-jobs.js';
import { waitFor } from '../../support/wait.js';

// Every call of JobQueue and JobsMonitor either succeeds and
// stores (or reads) exactly what it was given, or throws a JobsError naming
// the fix and writes nothing. The worker and the scheduler are off in the
// main app, so only the call under test moves row counts; a second app runs
// a worker over what the first one accepts. Batches, flows and schedules:
// api-properties-workflows.e2e.spec.ts.

const clock = new ManualClock(T0);
const schema = uniqueSchema('props');
const workerSchema = uniqueSchema('propsw');
let app: INestApplication;
let workerApp: INestApplication;
let queue: JobQueue;
let dataSource: DataSource;
const counter = new RowCounter(schema);

beforeAll(async () => {
  app = await startJobsApp(
    schema,
    { clock, worker: { enabled: false }, scheduler: { enabled: false }, externalJobs: ['ext-name-only'] },
    { providers: [Echo, Tuned] },
  );
  workerApp = await startJobsApp(workerSchema, { worker: { pollInterval: 200 } }, { providers: [Echo] });
  queue = app.get(JobQueue);
  dataSource = app.get<DataSource>(JOBS_DATA_SOURCE);
  // Counterexamples print their values; the manager would print all of TypeORM.
  Object.defineProperty(dataSource.manager, fc.toStringMethod, { value: () => '<the DataSource manager>' });
  await counter.open();
});

afterAll(async () => {
  await counter.close();
  await app?.close();
  await workerApp?.close();
  await dropSchemas(schema, workerSchema);
});

describe('JobQueue under generated input', () => {
  it(
    'enqueue (by class and by name) stores exactly what it was given, or throws a JobsError and writes nothing',
    async () => {
      const options = stepOptions({
        manager: fc.oneof(
          { weight: 3, arbitrary: fc.constant(null).map(() => ({ value: dataSource.manager, sure: true })) },
          { weight: 1, arbitrary: maybe(hostileValue) },
        ),
      });
      const tally = new Tally();
      await fc.assert(
        fc.asyncProperty(jobRef, payloadArb, options, (job, payload, opts) =>
          judge(
            counter,
            tally,
            'enqueue()',
            job.sure && payload.sure && opts.sure,
            () => queue.enqueue(job.value as never, payload.value as never, opts.value as never),
            async (out, before, after) => {
              assertDelta('enqueue()', before, after, { job: 1 });
              const info = (await queue.get(out.id)) as JobInfo;
              const e = expected(job.value, opts.value);
              expect(info).toMatchObject({
                id: out.id,
                name: e.name,
                queue: e.queue,
                priority: e.priority,
                maxAttempts: e.maxAttempts,
                state: 'queued',
                attempt: 0,
              });
              expect(info.runAt.getTime()).toBe(e.runAt);
              expect(info.payload).toEqual(asJson(payload.value));
              expectRow((await rowsOf(counter, [out.id]))[0]!, job.value, payload.value, opts.value);
            },
          ),
        ),
        RUNS(300),
      );
      tally.expectBoth();
    },
    PROPERTY_TIMEOUT,
  );

  it(
    'enqueueMany writes every item as given, in order, or throws a JobsError and writes none',
    async () => {
      const item = fc.oneof(
        {
          weight: 8,
          arbitrary: fc
            .tuple(jobRef, payloadArb, stepOptions({ after: maybe(randomUuid) }))
            .map(([job, payload, options]) => ({
              value: { job: job.value, payload: payload.value, options: options.value },
              sure: job.sure && payload.sure && options.sure,
            })),
        },
        { weight: 1, arbitrary: maybe(hostileValue) },
      );
      const goodItem = fc
        .tuple(jsonPayload, fc.constantFrom(Echo, 'prop-tuned'))
        .map(([payload, job]) => ({ job, payload }));
      const items: fc.Arbitrary<Tagged<unknown>> = fc.oneof(
        {
          weight: 8,
          arbitrary: fc
            .array(
              item.filter((i) => i.sure),
              { maxLength: 6 },
            )
            .map((list) => ({ value: list.map((i) => i.value), sure: true })),
        },
        {
          weight: 8,
          arbitrary: fc.array(item, { minLength: 1, maxLength: 6 }).map((list) => ({
            value: list.map((i) => i.value),
            sure: list.every((i) => i.sure),
          })),
        },
        { weight: 2, arbitrary: maybe(fc.constantFrom('items', null, undefined, { length: 2 }, new Set([1]))) },
        // Holes: the items at 1 and 3 are missing, not undefined.
        {
          weight: 1,
          arbitrary: maybe(
            fc.array(goodItem, { minLength: 4, maxLength: 6 }).map((list) => {
              delete list[1];
              delete list[3];
              return list;
            }),
          ),
        },
        // Over 2,000 items the call goes in chunks within one transaction; a bad item late must undo the early chunks.
        {
          weight: 1,
          arbitrary: fc
            .tuple(fc.integer({ min: 2001, max: 2100 }), fc.option(fc.nat(), { nil: undefined }))
            .map(([n, bad]) => {
              const list: unknown[] = Array.from({ length: n }, (_, i) => ({ job: Echo, payload: { i } }));
              if (bad !== undefined) list[bad % n] = { job: Echo, payload: { at: new Date() } };
              return { value: list, sure: bad === undefined };
            }),
        },
      );
      const manyOptions = fc.oneof(
        { weight: 4, arbitrary: valid(fc.constantFrom(undefined, {})) },
        { weight: 2, arbitrary: valid(fc.constant(null).map(() => ({ manager: dataSource.manager }))) },
        { weight: 1, arbitrary: maybe(hostileValue) },
      );
      const tally = new Tally();
      await fc.assert(
        fc.asyncProperty(items, manyOptions, (list, options) =>
          judge(
            counter,
            tally,
            'enqueueMany()',
            list.sure && options.sure,
            () => queue.enqueueMany(list.value as never, options.value as never),
            async (out, before, after) => {
              const given = list.value as Array<{ job: unknown; payload: unknown; options?: Record<string, unknown> }>;
              assertDelta('enqueueMany()', before, after, { job: given.length });
              const ids = out.map((r) => r.id);
              expect(new Set(ids).size).toBe(given.length);
              const rows = await rowsOf(counter, ids);
              for (const [i, row] of rows.entries()) {
                // A dependency cannot be declared here: taking the job without it would run it too early.
                expect(given[i]!.options?.after).toBeUndefined();
                expectRow(row, given[i]!.job, given[i]!.payload, given[i]!.options);
              }
            },
          ),
        ),
        RUNS(150),
      );
      tally.expectBoth();
    },
    PROPERTY_TIMEOUT,
  );

  it(
    'get, cancel and retry act on the job the id names, as its state allows, and refuse anything that is no job id',
    async () => {
      // Jobs in every state these calls meet without a worker: queued, delayed, waiting (chain steps,
      // a batch callback), batch members; cancel and retry then move them between states.
      const pool: string[] = [];
      for (let i = 0; i < 4; i++) pool.push((await queue.enqueue(Echo, { i }, { delay: i * 1000 })).id);
      pool.push(...(await queue.chain().then(Echo, 1).then(Tuned, 2).then(Echo, 3).dispatch()).ids);
      const batch = await app.get(BatchBuilder).create('pool').add(Echo, 1).add(Echo, 2).finally(Echo, 3).dispatch();
      pool.push(...(await queue.batchGraph(batch.id))!.nodes.map((n) => n.id));
      await queue.cancel(pool[0]!);
      const ids = fc.oneof(
        {
          weight: 6,
          arbitrary: fc.tuple(fc.nat(), fc.boolean()).map(([i, upper]) => {
            const id = pool[i % pool.length]!;
            return upper ? id.toUpperCase() : id;
          }),
        },
        { weight: 2, arbitrary: randomUuid },
        { weight: 3, arbitrary: malformedId },
      );
      const stateOf = async (id: string) =>
        (await counter.query<{ state: string }>('SELECT state FROM :S.job WHERE id = $1', [id]))[0]?.state;
      const calls: Record<'get' | 'cancel' | 'retry', (id: never) => Promise<unknown>> = {
        get: (id) => queue.get(id),
        cancel: (id) => queue.cancel(id),
        retry: (id) => queue.retry(id),
      };
      const tally = new Tally();
      await fc.assert(
        fc.asyncProperty(fc.constantFrom('get', 'cancel', 'retry' as const), ids, async (op, id) => {
          const shaped = typeof id === 'string' && UUID.test(id);
          const state = shaped ? await stateOf(id) : undefined;
          const allowed =
            op === 'get'
              ? shaped
              : op === 'cancel'
                ? ['queued', 'waiting'].includes(state!)
                : ['failed', 'cancelled', 'skipped'].includes(state!);
          const call = `${op}(${fc.stringify(id)}) of a job ${state ?? 'that does not exist'}`;
          await judge(
            counter,
            tally,
            call,
            allowed,
            () => calls[op](id as never),
            async (value, before, after) => {
              if (!allowed) throw new Error(`${call} succeeded`);
              assertDelta(call, before, after, {});
              const lower = (id as string).toLowerCase();
              if (op === 'get') expect(value).toEqual(state ? expect.objectContaining({ id: lower, state }) : null);
              if (op === 'cancel') expect(await stateOf(lower)).toBe('cancelled');
              if (op === 'retry') expect(['queued', 'waiting']).toContain(await stateOf(lower));
            },
          );
        }),
        RUNS(300),
      );
      tally.expectBoth();
    },
    PROPERTY_TIMEOUT,
  );
});

describe('JobsMonitor under generated filters', () => {
  const STATES = ['waiting', 'queued', 'scheduled', 'active', 'succeeded', 'failed', 'cancelled', 'skipped'] as const;
  const FINISHED = ['succeeded', 'failed', 'cancelled', 'skipped'] as const;

  it(
    'counts, workers and jobs answer what the rows say, or throw a JobsError naming the filter',
    async () => {
      const monitor = app.get(JobsMonitor);
      // Rows of its own in several states and queues, so the test needs no other to run first.
      const own = await queue.enqueueMany([
        { job: Echo, payload: 1 },
        { job: Tuned, payload: 2 },
        { job: Echo, payload: 3, options: { delay: 60_000 } },
      ]);
      await queue.cancel(own[0]!.id);
      const known = (await counter.query<{ id: string }>('SELECT id FROM :S.job ORDER BY id LIMIT 50')).map(
        (r) => r.id,
      );
      const badState = fc.oneof(
        fc.constantFrom<unknown>('done', 'fail\u0000ed', ['failed', 'nope'], [['failed']], ['failed', null], 'FAILED'),
        hostileValue,
      );
      const countsArg = optionsArg(
        taggedObject({
          since: either(validDate, fc.oneof(edgeDate, hostileValue)),
          finished: either(fc.boolean(), hostileValue),
        }),
      );
      const workersArg = optionsArg(
        taggedObject({ stoppedWithin: either(fc.nat(), fc.oneof(edgeNumber, hostileValue), 2) }),
      );
      const jobsArg = optionsArg(
        taggedObject({
          state: either(fc.oneof(fc.constantFrom(...STATES), fc.subarray([...STATES])), badState),
          queue: either(
            fc.oneof(fc.constantFrom('default', 'tuned'), validName),
            fc.oneof(hostileString, hostileValue),
          ),
          name: either(
            fc.constantFrom('prop-echo', 'prop-tuned', 'ext-name-only'),
            fc.oneof(hostileString, hostileValue),
          ),
          limit: either(fc.integer({ min: 1, max: 500 }), fc.oneof(edgeNumber, hostileValue)),
          before: either(fc.oneof(fc.constantFrom(...known), randomUuid), malformedId),
        }),
      );
      const call = fc.oneof(
        countsArg.map((a) => ({ op: 'counts' as const, ...a })),
        workersArg.map((a) => ({ op: 'workers' as const, ...a })),
        jobsArg.map((a) => ({ op: 'jobs' as const, ...a })),
      );
      const tally = new Tally();
      await fc.assert(
        fc.asyncProperty(call, ({ op, value, sure }) =>
          judge<unknown>(
            counter,
            tally,
            `JobsMonitor.${op}()`,
            sure,
            () => monitor[op](value as never),
            async (result, before, after) => {
              assertDelta(`JobsMonitor.${op}()`, before, after, {});
              const o = (value ?? {}) as Record<string, unknown>;
              if (op === 'counts') {
                const counts = result as JobCounts;
                const since = (o.since as Date | undefined)?.getTime() ?? T0 - 86_400_000;
                expect(counts.since.getTime()).toBe(since);
                const rows = await counter.query<{ state: string; due: boolean; recent: boolean; n: number }>(
                  'SELECT state, run_at <= $1 AS due, created_at >= $2 AS recent, count(*)::int AS n FROM :S.job GROUP BY 1, 2, 3',
                  // Within PostgreSQL's range: no job was created before 1970 or after 9999 either.
                  [new Date(T0), new Date(Math.min(Math.max(since, 0), LATEST_TIME))],
                );
                const sum = (f: (r: (typeof rows)[number]) => boolean) => rows.filter(f).reduce((n, r) => n + r.n, 0);
                expect(counts.total.queued).toBe(sum((r) => r.state === 'queued' && r.due));
                expect(counts.total.scheduled).toBe(sum((r) => r.state === 'queued' && !r.due));
                expect(counts.total.waiting).toBe(sum((r) => r.state === 'waiting'));
                for (const state of FINISHED) {
                  expect(counts.total[state]).toBe(
                    o.finished === false ? 0 : sum((r) => r.state === state && r.recent),
                  );
                }
              }
              // This app runs no worker: none has ever registered.
              if (op === 'workers') expect(result).toEqual([]);
              if (op === 'jobs') {
                const page = result as JobPage;
                const limit = (o.limit as number | undefined) ?? 50;
                const states = o.state === undefined ? null : [o.state].flat();
                // A list state as counts() reads it: 'queued' is due by the clock, 'scheduled' queued for later.
                const ids = await counter.query<{ id: string }>(
                  `SELECT id FROM :S.job
                    WHERE ($1::text[] IS NULL OR CASE WHEN state <> 'queued' THEN state = ANY($1)
                                                      WHEN run_at <= $6 THEN 'queued' = ANY($1)
                                                      ELSE 'scheduled' = ANY($1) END)
                      AND ($2::text IS NULL OR queue = $2) AND ($3::text IS NULL OR name = $3)
                      AND ($4::uuid IS NULL OR id < $4) ORDER BY id DESC LIMIT $5`,
                  [states, o.queue ?? null, o.name ?? null, o.before ?? null, limit + 1, new Date(T0)],
                );
                expect(page.jobs.map((j) => j.id)).toEqual(ids.slice(0, limit).map((r) => r.id));
                expect(page.next).toBe(ids.length > limit ? ids[limit - 1]!.id : null);
              }
            },
          ),
        ),
        RUNS(250),
      );
      tally.expectBoth();
    },
    PROPERTY_TIMEOUT,
  );
});

describe('a running worker', () => {
  it(
    'runs whatever enqueue accepted and hands its handler the payload as JSON makes it',
    async () => {
      const jobs = workerApp.get(JobQueue);
      const options = fc.record(
        { queue: validName, priority: fc.integer({ min: -INT4_MAX, max: INT4_MAX }) },
        { requiredKeys: [] },
      );
      await fc.assert(
        fc.asyncProperty(jsonPayload, options, async (payload, opts) => {
          const { id } = await jobs.enqueue(Echo, payload, opts);
          const done = await waitFor(`job ${id} to succeed`, async () => {
            const info = await jobs.get(id);
            return info?.state === 'succeeded' ? info : null;
          });
          expect(done).toMatchObject({ queue: opts.queue ?? 'default', attempt: 1 });
          expect(done.result).toEqual(asJson(payload));
        }),
        RUNS(40),
      );
    },
    PROPERTY_TIMEOUT,
  );
});

describe('hostile input to enqueue and the admin calls is a JobsError naming the field, and writes nothing', () => {
  const uuid = '01937c5e-1a2b-7c3d-8e4f-5a6b7c8d9e0f';
  let deep: unknown = 'leaf';
  for (let i = 0; i < 5_000; i++) deep = { deep };
  const getter = Object.defineProperty({ id: 1 }, 'total', {
    enumerable: true,
    get: () => {
      throw new TypeError("Cannot read properties of undefined (reading 'price')");
    },
  });
  /** The list with a hole at index 1: an item missing, not an undefined one. */
  function withHole<T>(list: T[]): T[] {
    delete list[1];
    return list;
  }
  const cases: Array<[string, () => unknown, RegExp]> = [
    ['get("not-a-uuid")', () => queue.get('not-a-uuid'), /get\(\): the string "not-a-uuid" is not a job id/],
    ["cancel('')", () => queue.cancel(''), /cancel\(\): an empty string is not a job id/],
    ['retry(42)', () => queue.retry(42 as never), /retry\(\): 42 is not a job id/],
    ['get({ id: 1 })', () => queue.get({ id: 1 } as never), /get\(\): an object is not a job id/],
    [
      'cancel(an id with a space before it)',
      () => queue.cancel(` ${uuid}`),
      /cancel\(\): the string " 01937c5e.*" is not a job id/,
    ],
    [
      'retry(an id with spaces for dashes)',
      () => queue.retry(uuid.replace(/-/g, ' ')),
      /retry\(\): the string "01937c5e 1a2b.*" is not a job id/,
    ],
    [
      'a payload with NUL in a string',
      () => queue.enqueue(Echo, { note: 'a\u0000b' }),
      /"prop-echo".*at \$\.note \(a NUL character at index 1\)/,
    ],
    [
      'a payload with NUL in a key',
      () => queue.enqueue(Echo, { ['k\u0000']: 1 }),
      /at \$\["k\\u0000"\] \(its key holds a NUL character/,
    ],
    [
      'a payload with a lone surrogate',
      () => queue.enqueue(Echo, { s: 'x\ud800' }),
      /at \$\.s \(a lone UTF-16 surrogate at index 1\)/,
    ],
    [
      'a payload with a sparse array',
      () => queue.enqueue(Echo, { list: withHole([1, 2, 3]) }),
      /at \$\.list\[1\] \(a hole in a sparse array/,
    ],
    ['a payload nested 5,000 deep', () => queue.enqueue(Echo, deep), /\(nested deeper than 64 levels\)/],
    [
      'a payload with a throwing getter',
      () => queue.enqueue(Echo, getter),
      /at \$\.total \(reading it threw: Cannot read properties/,
    ],
    [
      'priority 2^31',
      () => queue.enqueue(Echo, {}, { priority: 2 ** 31 }),
      /"priority" must be an integer from -2147483647 to 2147483647, got 2147483648/,
    ],
    [
      'maxAttempts 1e300',
      () => queue.enqueue(Echo, {}, { maxAttempts: 1e300 }),
      /"maxAttempts" must be an integer from 1 to 1000000, got 1e\+300/,
    ],
    [
      'timeout 2^31',
      () => queue.enqueue(Echo, {}, { timeout: 2 ** 31 }),
      /"timeout" must be an integer from 1 to 2147483647, got 2147483648/,
    ],
    [
      'delay 1e16',
      () => queue.enqueue(Echo, {}, { delay: 1e16 }),
      /"delay" must be a number of milliseconds >= 0 that ends before the year 10000, got 10000000000000000/,
    ],
    [
      'runAt in the year 10000',
      () => queue.enqueue(Echo, {}, { runAt: new Date(LATEST_TIME + 1) }),
      /"runAt" \+010000-01-01T00:00:00\.000Z is outside 1970-01-01 to 9999-12-31/,
    ],
    [
      'runAt before 1970',
      () => queue.enqueue(Echo, {}, { runAt: new Date(-1) }),
      /"runAt" 1969-12-31T23:59:59\.999Z is outside/,
    ],
    [
      'options null',
      () => queue.enqueue(Echo, {}, null as never),
      /enqueue\(Echo\): the options must be an object, got null/,
    ],
    [
      'a queue of 9,000 characters',
      () => queue.enqueue(Echo, {}, { queue: 'q'.repeat(9000) }),
      /"queue" is 9000 characters long; the limit is 200/,
    ],
    [
      'a queue with NUL',
      () => queue.enqueue(Echo, {}, { queue: 'a\u0000b' }),
      /"queue" holds a control character \(\\u0000\) at index 1/,
    ],
    [
      "enqueueMany('items')",
      () => queue.enqueueMany('items' as never),
      /enqueueMany\(\): the items must be an array, got the string "items"/,
    ],
    ['enqueueMany(null)', () => queue.enqueueMany(null as never), /the items must be an array, got null/],
    [
      'enqueueMany({ length: 2 })',
      () => queue.enqueueMany({ length: 2 } as never),
      /the items must be an array, got an object/,
    ],
    // Found by these properties: a TypeError from the rows of the holes.
    [
      'enqueueMany with a hole',
      () =>
        queue.enqueueMany(
          withHole([
            { job: Echo, payload: 1 },
            { job: Echo, payload: 2 },
            { job: Echo, payload: 3 },
          ]) as never,
        ),
      /enqueueMany\(\): item 1 has no "job" \(got undefined\)/,
    ],
    // Found by these properties: "after" on an item was ignored, and the job ran without waiting.
    [
      'enqueueMany with "after" on an item',
      () => queue.enqueueMany([{ job: Echo, payload: 1, options: { after: uuid } as never }]),
      /enqueue\('prop-echo'\): "after" is not taken per job here/,
    ],
    ['a job name with NUL', () => queue.enqueue('prop\u0000echo', {}), /Unknown job "prop.echo"/],
    [
      '@Job with NUL in its name',
      () => Job('bad\u0000name')(class Bad {}),
      /@Job\(\) on class Bad: "name" holds a control character \(\\u0000\)/,
    ],
    [
      "monitor.jobs({ queue: ['a'] })",
      () => app.get(JobsMonitor).jobs({ queue: ['a'] as never }),
      /JobsMonitor\.jobs\(\): "queue" must be a non-empty string, got an array \(1 items\)/,
    ],
    [
      'monitor.jobs({ name: NUL })',
      () => app.get(JobsMonitor).jobs({ name: 'a\u0000' }),
      /"name" holds a control character/,
    ],
    [
      "monitor.jobs({ state: ['failed', 'nope'] })",
      () => app.get(JobsMonitor).jobs({ state: ['failed', 'nope' as never] }),
      /unknown state "nope"/,
    ],
    [
      'monitor.jobs({ state: NUL })',
      () => app.get(JobsMonitor).jobs({ state: 'fail\u0000ed' as never }),
      /unknown state "fail\\u0000ed"/,
    ],
    // Found while reading for this test: the job was written outside the ended transaction.
    [
      'a manager whose transaction has ended',
      async () => {
        let ended: unknown;
        await dataSource.transaction(async (manager) => {
          ended = manager;
        });
        return queue.enqueue(Echo, {}, { manager: ended as never });
      },
      /enqueue\(Echo\): "manager" belongs to a transaction that has already ended/,
    ],
    // Found by these properties: any value but false counted finished jobs.
    [
      "monitor.counts({ finished: 'no' })",
      () => app.get(JobsMonitor).counts({ finished: 'no' as never }),
      /"finished" must be true or false, got the string "no"/,
    ],
  ];

  it.each(cases)('%s throws a JobsError naming the field and the fix, and writes nothing', (label, call, message) =>
    expectRefused(counter, label, call, message),
  );

  it('refuses no valid input these properties found refused: a backslash and "u0000" as text, a week-old worker window', async () => {
    // The payload check searched the JSON text for an escaped NUL, and found it in "\\u0000".
    const text = { path: 'C:\\u0000\\ud800', json: JSON.stringify('\u0000') };
    const { id } = await queue.enqueue(Echo, text);
    expect((await queue.get(id))!.payload).toEqual(text);
    // A window reaching before 1970 went to PostgreSQL as a date it refuses (a JobsDatabaseError).
    await expect(app.get(JobsMonitor).workers({ stoppedWithin: 1e300 })).resolves.toEqual([]);
    await expect(app.get(JobsMonitor).workers({ stoppedWithin: 3e14 })).resolves.toEqual([]);
  });
});
