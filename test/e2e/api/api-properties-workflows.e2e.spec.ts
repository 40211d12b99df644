import type { INestApplication } from '@nestjs/common';
import fc from 'fast-check';
import {
  BatchBuilder,
  BatchDraft,
  Cron,
  Job,
  JobQueue,
  JOBS_DATA_SOURCE,
  RecurringSchedules,
  type JobHandler,
  type ScheduleInfo,
} from 'nestjs-durable-jobs';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import type { DataSource } from 'typeorm';
import { dropSchemas, uniqueSchema } from '../../support/database.js';
import {
  asJson,
  assertDelta,
  either,
  expectRefused,
  hostileString,
  hostileValue,
  isStorableName,
  judge as judgeOn,
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
  validName,
  type RowCounts,
  type Tagged,
} from '../../support/hostile-input.js';
import { startJobsApp } from '../../support/jobs-app.js';
import {
  Echo,
  expected,
  expectedSignature,
  expectRow,
  argsSure,
  jobArgs,
  jobArgsList,
  jobRef,
  rowsOf,
  signatureOf,
  stepOptions,
  T0,
  Tuned,
  UUID,
  type Row,
} from '../../support/property-jobs.js';

// Continued from api-properties.e2e.spec.ts: jobs that wait on
// others (enqueue's "after", batches, chains, flows) and recurring
// schedules. Each call either writes exactly the rows it describes, all in
// one go, or throws a JobsError naming the fix and writes nothing.

/** A code-defined schedule, which the dynamic calls may pause but not replace or remove. */
@Cron('0 3 * * *', { name: 'prop-nightly' })
@Job('prop-nightly')
class Nightly implements JobHandler {
  run() {}
}

const TRIGGERS = ['success', 'failure', 'always'] as const;
const clock = new ManualClock(T0);
const schema = uniqueSchema('propwf');
let app: INestApplication;
let queue: JobQueue;
let batches: BatchBuilder;
let dataSource: DataSource;
const counter = new RowCounter(schema);

beforeAll(async () => {
  app = await startJobsApp(
    schema,
    { clock, worker: { enabled: false }, scheduler: { enabled: false } },
    { providers: [Echo, Tuned, Nightly] },
  );
  queue = app.get(JobQueue);
  batches = app.get(BatchBuilder);
  dataSource = app.get<DataSource>(JOBS_DATA_SOURCE);
  Object.defineProperty(dataSource.manager, fc.toStringMethod, { value: () => '<the DataSource manager>' });
  await counter.open();
});

afterAll(async () => {
  await counter.close();
  await app?.close();
  await dropSchemas(schema);
});

/** judge() on this file's counter. */
const judge = <T>(
  tally: Tally,
  name: string,
  sure: boolean,
  call: () => T | Promise<T>,
  check: (value: T, before: RowCounts, after: RowCounts) => Promise<void> | void,
) => judgeOn(counter, tally, name, sure, call, check);

const sorted = (list: string[]) => [...list].sort();
const stateOf = async (table: 'job' | 'job_batch', id: string) =>
  (await counter.query<{ state: string; failed?: number }>(`SELECT * FROM :S.${table} WHERE id = $1`, [id]))[0];

describe('jobs that wait on others, under generated input', () => {
  it(
    'enqueue with "after" writes the job and one dependency per parent, in the state the parents decide',
    async () => {
      // Parents in each state a child can meet: live, cancelled, a running and a settled batch.
      const live = (await queue.enqueue(Echo, 'live')).id;
      const cancelled = (await queue.enqueue(Echo, 'cancelled')).id;
      await queue.cancel(cancelled);
      const running = (await batches.create('running').add(Echo, 1).dispatch()).id;
      const settled = (await batches.create('empty').dispatch()).id;
      const cased = (id: string) => fc.constantFrom(id, id.toUpperCase());
      const parent = fc.oneof(
        fc.record({ job: fc.oneof(cased(live), cased(cancelled)), on: fc.option(fc.constantFrom(...TRIGGERS)) }),
        fc.record({ batch: fc.oneof(cased(running), cased(settled)), on: fc.option(fc.constantFrom(...TRIGGERS)) }),
      );
      const clean = (p: Record<string, unknown>) => (p.on === null ? { ...p, on: undefined } : p);
      const after: fc.Arbitrary<Tagged<unknown>> = fc.oneof(
        { weight: 3, arbitrary: valid(fc.oneof(cased(live), cased(cancelled))) },
        {
          weight: 6,
          arbitrary: valid(fc.array(parent.map(clean), { minLength: 1, maxLength: 4 })),
        },
        {
          weight: 4,
          arbitrary: maybe(
            fc.oneof(
              hostileValue,
              malformedId,
              randomUuid,
              fc.constantFrom<unknown>([], [5], ['x'], [null], [{ job: 10n }], [{ job: live, on: 'sometimes' }]),
              fc.constant(null).map(() => [{ job: live, on: Object.create(null) as object }]),
              fc.array(
                fc.oneof(parent, fc.record({ job: randomUuid }), fc.record({ batch: randomUuid }), hostileValue),
                {
                  minLength: 1,
                  maxLength: 3,
                },
              ),
            ),
          ),
        },
      );
      const tally = new Tally();
      await fc.assert(
        fc.asyncProperty(after, payloadArb, stepOptions(), async (a, payload, options) => {
          const o =
            options.value === undefined
              ? { after: a.value }
              : options.value && typeof options.value === 'object'
                ? { ...options.value, after: a.value }
                : options.value;
          const sure = a.sure && payload.sure && options.sure;
          await judge(
            tally,
            'enqueue({ after })',
            sure,
            () => queue.enqueue(Echo, payload.value, o as never),
            async (value, before, after) => {
              // "after: undefined" is no "after" at all.
              const list = (
                a.value === undefined ? [] : typeof a.value === 'string' ? [{ job: a.value }] : a.value
              ) as Array<Record<string, string>>;
              assertDelta('enqueue({ after })', before, after, { job: 1, dependency: list.length });
              // The child waits while a parent is unsettled; then runs if every trigger was met, else is skipped.
              // (Enqueueing the child changes no parent's state, so reading them now reads them as the call did.)
              let open = 0;
              let met = true;
              for (const p of list) {
                const on = p.on ?? 'success';
                let outcome: string | null;
                if (p.job) {
                  const s = (await stateOf('job', p.job))!.state;
                  outcome = ['queued', 'waiting', 'active'].includes(s) ? null : s;
                } else {
                  const b = (await stateOf('job_batch', p.batch!))!;
                  outcome = b.state !== 'executing' ? b.state : on === 'failure' && b.failed! > 0 ? 'failed' : null;
                }
                if (outcome === null) open++;
                else met &&= on === 'always' || outcome === (on === 'success' ? 'succeeded' : 'failed');
              }
              const row = (await rowsOf(counter, [value.id]))[0]!;
              expectRow(row, Echo, payload.value, o, open > 0 ? 'waiting' : met ? 'queued' : 'skipped');
            },
          );
        }),
        RUNS(200),
      );
      tally.expectBoth();
    },
    PROPERTY_TIMEOUT,
  );

  it(
    'a batch is written whole at dispatch (members, callbacks, their dependencies) or not at all',
    async () => {
      const kinds = fc.constantFrom('add', 'add', 'then', 'catch', 'finally');
      const ops = jobArgsList(5).chain((list) =>
        fc.tuple(...list.map((args) => kinds.map((kind) => ({ kind, ...args })))),
      );
      const draft = fc.record({
        name: fc.oneof(
          { weight: 6, arbitrary: valid(fc.option(validName, { nil: undefined })) },
          { weight: 1, arbitrary: maybe(fc.oneof(hostileString, hostileValue)) },
        ),
        ops,
        allowFailures: fc.boolean(),
        dispatch: optionsArg(taggedObject({ manager: valid(fc.constant(null).map(() => dataSource.manager)) })),
        // After dispatch, the draft must refuse to be used again rather than lose what is added.
        then: fc.constantFrom('nothing', 'dispatch', 'add', 'finally'),
      });
      const tally = new Tally();
      await fc.assert(
        fc.asyncProperty(draft, async (d) => {
          const sure = d.name.sure && d.dispatch.sure && d.ops.every(argsSure);
          let built: ReturnType<BatchBuilder['create']> | undefined;
          let dispatched = false;
          await judge(
            tally,
            'batch.dispatch()',
            sure,
            () => {
              built = batches.create(d.name.value as never);
              if (d.allowFailures) built.allowFailures();
              for (const o of d.ops)
                built[o.kind as 'add'](o.job.value as never, o.payload.value as never, o.options.value as never);
              return built.dispatch(d.dispatch.value as never);
            },
            async ({ id }, before, after) => {
              dispatched = true;
              const members = d.ops.filter((o) => o.kind === 'add');
              const callbacks = d.ops.filter((o) => o.kind !== 'add');
              assertDelta('batch.dispatch()', before, after, {
                batch: 1,
                job: d.ops.length,
                dependency: callbacks.length,
              });
              expect(await queue.batchStatus(id)).toMatchObject({
                id,
                name: d.name.value ?? null,
                total: members.length,
                pending: members.length,
                state: members.length ? 'executing' : 'succeeded',
              });
              const [batchRow] = await counter.query<Row>('SELECT options FROM :S.job_batch WHERE id = $1', [id]);
              expect(batchRow!.options).toEqual({ allowFailures: d.allowFailures });
              const memberRows = await rowsOf(
                counter,
                (await queue.batchMembers(id, { take: 10_000 })).map((m) => m.id),
              );
              expect(sorted(memberRows.map(signatureOf))).toEqual(
                sorted(members.map((m) => expectedSignature(m.job.value, m.payload.value, m.options.value, 'queued'))),
              );
              // An empty batch has already succeeded: its callbacks are decided at once.
              const callbackState = (kind: string) =>
                members.length ? 'waiting' : kind === 'catch' ? 'skipped' : 'queued';
              const graph = (await queue.batchGraph(id))!;
              const callbackRows = await rowsOf(
                counter,
                graph.nodes.filter((n) => n.role !== 'member').map((n) => n.id),
              );
              expect(sorted(callbackRows.map(signatureOf))).toEqual(
                sorted(
                  callbacks.map((c) =>
                    expectedSignature(c.job.value, c.payload.value, c.options.value, callbackState(c.kind)),
                  ),
                ),
              );
            },
          );
          if (!dispatched || d.then === 'nothing') return;
          const again = built!;
          await judge<unknown>(
            tally,
            `batch.${d.then}() after dispatch()`,
            false,
            () =>
              d.then === 'dispatch' ? again.dispatch() : d.then === 'add' ? again.add(Echo, 1) : again.finally(Echo, 1),
            () => {
              throw new Error(`batch.${d.then}() after dispatch() was accepted`);
            },
          );
        }),
        RUNS(200),
      );
      tally.expectBoth();
    },
    PROPERTY_TIMEOUT,
  );

  it(
    'batchStatus, batchMembers, batchGraph, cancelBatch and deleteBatch act on the batch the id names, as its state allows',
    async () => {
      const pool: string[] = [];
      for (let i = 0; i < 4; i++) {
        pool.push((await batches.create(`pool-${i}`).add(Echo, i).add(Tuned, i).finally(Echo, 'done').dispatch()).id);
      }
      pool.push((await batches.create('pool-empty').then(Echo, 'then').dispatch()).id);
      const ids = fc.oneof(
        {
          weight: 6,
          arbitrary: fc
            .tuple(fc.nat(), fc.boolean())
            .map(([i, up]) => (up ? pool[i % pool.length]!.toUpperCase() : pool[i % pool.length]!)),
        },
        { weight: 1, arbitrary: randomUuid },
        { weight: 2, arbitrary: malformedId },
      );
      const STATES = ['waiting', 'queued', 'active', 'succeeded', 'failed', 'cancelled', 'skipped'] as const;
      const membersOptions = optionsArg(
        taggedObject({
          state: either(fc.constantFrom(...STATES), fc.oneof(fc.constantFrom('done', ['queued']), hostileValue)),
          skip: either(fc.nat(5), fc.oneof(fc.constantFrom(-1, 0.5, 2 ** 31, 1e300, NaN), hostileValue)),
          take: either(
            fc.integer({ min: 1, max: 10_000 }),
            fc.oneof(fc.constantFrom(0, 10_001, 1.5, -1), hostileValue),
          ),
        }),
      );
      const op = fc.oneof(
        fc
          .constantFrom('batchStatus', 'batchGraph', 'cancelBatch', 'deleteBatch')
          .map((name) => ({ name, options: { value: undefined as unknown, sure: true } })),
        membersOptions.map((options) => ({ name: 'batchMembers', options })),
      );
      const tally = new Tally();
      await fc.assert(
        fc.asyncProperty(op, ids, async ({ name, options }, id) => {
          const shaped = typeof id === 'string' && UUID.test(id);
          const batch = shaped ? await stateOf('job_batch', id) : undefined;
          const lower = shaped ? id.toLowerCase() : '';
          const members = (
            await counter.query<{ id: string }>('SELECT id FROM :S.job WHERE batch_id = $1', [lower || null])
          ).map((r) => r.id);
          const deps = (
            await counter.query<{ n: number }>(
              'SELECT count(*)::int AS n FROM :S.job_dependency WHERE parent_batch_id = $1 OR child_id = ANY($2) OR parent_job_id = ANY($2)',
              [lower || null, members],
            )
          )[0]!.n;
          const allowed =
            name === 'cancelBatch'
              ? batch?.state === 'executing'
              : name === 'deleteBatch'
                ? !!batch && batch.state !== 'executing'
                : shaped;
          const call = `${name}(${fc.stringify(id)}) of a batch ${batch?.state ?? 'that does not exist'}`;
          await judge<unknown>(
            tally,
            call,
            allowed && options.sure,
            () =>
              (queue[name as 'batchMembers'] as (id: unknown, o?: unknown) => Promise<unknown>).call(
                queue,
                id,
                options.value,
              ),
            async (value, before, after) => {
              if (!allowed) throw new Error(`${call} succeeded`);
              assertDelta(
                call,
                before,
                after,
                name === 'deleteBatch' ? { batch: -1, job: -members.length, dependency: -deps } : {},
              );
              if (name === 'batchStatus')
                expect(value).toEqual(batch ? expect.objectContaining({ id: lower, state: batch.state }) : null);
              if (name === 'batchGraph')
                expect((value as { nodes?: unknown[] } | null)?.nodes?.length).toBe(
                  batch ? members.length + 1 : undefined,
                );
              if (name === 'cancelBatch') expect((await stateOf('job_batch', lower))!.state).not.toBe('executing');
              if (name === 'deleteBatch') expect(await queue.batchStatus(lower)).toBeNull();
              if (name === 'batchMembers') {
                const o = (options.value ?? {}) as { state?: string; skip?: number; take?: number };
                const rows = await counter.query<{ id: string }>(
                  'SELECT id FROM :S.job WHERE batch_id = $1 AND ($2::text IS NULL OR state = $2) ORDER BY created_at, id OFFSET $3 LIMIT $4',
                  [lower, o.state ?? null, o.skip ?? 0, o.take ?? 100],
                );
                expect((value as Array<{ id: string }>).map((m) => m.id)).toEqual(rows.map((r) => r.id));
              }
            },
          );
        }),
        RUNS(250),
      );
      tally.expectBoth();
    },
    PROPERTY_TIMEOUT,
  );

  it(
    'chain() and flow() write every step and edge in one statement, or nothing',
    async () => {
      const step = fc.oneof({ weight: 3, arbitrary: jobArgs.filter(argsSure) }, { weight: 1, arbitrary: jobArgs });
      const KEYS = ['a', 'b', 'c', 'd', 'e'];
      // A DAG by construction: each step waits only on steps added before it.
      const edge = (k: string) =>
        fc.oneof(fc.constant<unknown>(k), fc.record({ key: fc.constant(k), on: fc.constantFrom(...TRIGGERS) }));
      const dag = fc.integer({ min: 0, max: 5 }).chain((n) =>
        fc.tuple(
          ...KEYS.slice(0, n).map((key, i) =>
            fc.record({
              key: valid(fc.constant<unknown>(key)),
              after: fc.oneof(
                { weight: 5, arbitrary: valid(fc.subarray(KEYS.slice(0, i)).chain((ks) => fc.tuple(...ks.map(edge)))) },
                {
                  weight: 1,
                  arbitrary: maybe(
                    fc.oneof(
                      fc.array(
                        fc.oneof(
                          fc.constantFrom<unknown>(...KEYS, 'zz', '', null, 5, { key: 'a', on: 'never' }),
                          hostileValue,
                        ),
                        { maxLength: 3 },
                      ),
                      hostileValue,
                    ),
                  ),
                },
              ),
              step,
            }),
          ),
        ),
      );
      const node = fc.record({
        key: maybe(fc.oneof(fc.constantFrom<unknown>(...KEYS), hostileValue)),
        after: valid(fc.constant([])),
        step,
      });
      const flow = fc.oneof({ weight: 4, arbitrary: dag }, { weight: 1, arbitrary: fc.array(node, { maxLength: 4 }) });
      const chain = jobArgsList(4);
      const tally = new Tally();
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            flow.map((nodes) => ({ nodes })),
            chain.map((steps) => ({ steps })),
          ),
          async (input) => {
            if ('steps' in input) {
              const { steps } = input;
              const sure = steps.every(argsSure);
              await judge(
                tally,
                'chain().dispatch()',
                sure,
                () => {
                  const c = queue.chain();
                  for (const s of steps)
                    c.then(s.job.value as never, s.payload.value as never, s.options.value as never);
                  return c.dispatch();
                },
                async ({ ids }, before, after) => {
                  assertDelta('chain().dispatch()', before, after, {
                    job: steps.length,
                    dependency: Math.max(steps.length - 1, 0),
                  });
                  for (const [i, row] of (await rowsOf(counter, ids)).entries()) {
                    expectRow(
                      row,
                      steps[i]!.job.value,
                      steps[i]!.payload.value,
                      steps[i]!.options.value,
                      i ? 'waiting' : 'queued',
                    );
                  }
                },
              );
              return;
            }
            const { nodes } = input;
            const sure = nodes.every(
              (n) => n.key.sure && n.after.sure && n.step.job.sure && n.step.payload.sure && n.step.options.sure,
            );
            const optionsOf = (n: (typeof nodes)[number]) => {
              const o = n.step.options.value;
              if (o === undefined) return { after: n.after.value };
              return o && typeof o === 'object' ? { ...o, after: n.after.value } : o;
            };
            await judge(
              tally,
              'flow().dispatch()',
              sure,
              () => {
                const f = queue.flow();
                for (const n of nodes)
                  f.add(
                    n.key.value as never,
                    n.step.job.value as never,
                    n.step.payload.value as never,
                    optionsOf(n) as never,
                  );
                return f.dispatch();
              },
              async ({ ids }, before, after) => {
                // `after` left out (undefined) is a step with nothing to wait on.
                const edges = nodes.map((n) => ((n.after.value as unknown[] | undefined) ?? []).length);
                // A flow is written with its batch record.
                assertDelta('flow().dispatch()', before, after, {
                  batch: 1,
                  job: nodes.length,
                  dependency: edges.reduce((a, b) => a + b, 0),
                });
                expect(Object.keys(ids).sort()).toEqual(nodes.map((n) => n.key.value as string).sort());
                for (const [i, n] of nodes.entries()) {
                  const row = (await rowsOf(counter, [ids[n.key.value as string]!]))[0]!;
                  expectRow(row, n.step.job.value, n.step.payload.value, optionsOf(n), edges[i] ? 'waiting' : 'queued');
                }
              },
            );
          },
        ),
        RUNS(200),
      );
      tally.expectBoth();
    },
    PROPERTY_TIMEOUT,
  );
});

describe('RecurringSchedules under generated input', () => {
  it(
    'upsert, pause, resume, remove, get and list do what the stored schedules allow, or throw a JobsError',
    async () => {
      const names = fc.oneof(
        {
          weight: 6,
          arbitrary: valid(fc.constantFrom('s-a', 's-b', 's-c', ' spaced name ', 'q"uo\'te', 'prop-nightly')),
        },
        { weight: 1, arbitrary: valid(validName) },
        { weight: 2, arbitrary: maybe(fc.oneof(hostileString, hostileValue)) },
      );
      const cron = either(
        fc.constantFrom('0 3 * * *', '*/10 * * * * *', ' 15 14 1 * * ', '0 9 * * mon-fri', '0 0 29 2 *'),
        fc.oneof(
          fc.constantFrom(
            '0 0 31 2 *',
            '',
            '   ',
            'garbage',
            '61 * * * *',
            '* * * * * * *',
            '0 3 * * *\u0000',
            '0 3 * * *\t',
          ),
          hostileString,
          hostileValue,
        ),
      );
      const ZONES: Record<string, string> = {
        UTC: 'UTC',
        'Europe/Berlin': 'Europe/Berlin',
        'america/new_york': 'America/New_York',
        'Etc/GMT-2': 'Etc/GMT-2',
      };
      // UTC offsets are refused on every Node version, though Node 22 and 24 accept some in Intl.
      const OFFSETS = ['+02:00', '-0500', '+02', 'UTC+2', '+05:30'];
      const options = optionsArg(
        taggedObject({
          timeZone: either(
            fc.constantFrom(...Object.keys(ZONES)),
            fc.oneof(fc.constantFrom('local', 'Mars/Olympus', 'UTC\u0000', ...OFFSETS), hostileValue),
            2,
          ),
          payload: payloadArb,
          catchUp: either(
            fc.constantFrom('latest', 'all', 'none'),
            fc.oneof(fc.constantFrom('LATEST', 'some'), hostileValue),
            2,
          ),
          overlap: either(fc.constantFrom('allow', 'skip'), fc.oneof(fc.constantFrom('deny'), hostileValue), 2),
        }),
      );
      const call = fc.oneof(
        {
          weight: 3,
          arbitrary: fc.record({ op: fc.constant('upsert' as const), name: names, job: jobRef, cron, options }),
        },
        { weight: 3, arbitrary: fc.record({ op: fc.constantFrom('pause', 'resume', 'remove', 'get'), name: names }) },
        { weight: 1, arbitrary: fc.record({ op: fc.constant('list' as const) }) },
      );
      const schedules = app.get(RecurringSchedules);
      // Only a storable name can name a row (and PostgreSQL refuses to even compare with NUL).
      const rowOf = async (name: unknown) =>
        isStorableName(name)
          ? (
              await counter.query<{ source: string; paused: boolean }>(
                'SELECT * FROM :S.recurring_schedule WHERE name = $1',
                [name],
              )
            )[0]
          : undefined;
      const tally = new Tally();
      await fc.assert(
        fc.asyncProperty(call, async (c) => {
          const name = 'name' in c ? c.name.value : undefined;
          const row = await rowOf(name);
          const nameOk = isStorableName(name);
          if (c.op === 'upsert') {
            const sure = nameOk && c.job.sure && c.cron.sure && c.options.sure && row?.source !== 'code';
            const o = (c.options.value ?? {}) as Record<string, unknown>;
            await judge(
              tally,
              'upsert()',
              sure,
              () =>
                schedules.upsert(name as never, c.job.value as never, c.cron.value as never, c.options.value as never),
              async (info, before, after) => {
                if (!nameOk || row?.source === 'code') throw new Error(`upsert(${fc.stringify(name)}) succeeded`);
                assertDelta('upsert()', before, after, { schedule: row ? 0 : 1 });
                const expectedInfo = {
                  name,
                  jobName: expected(c.job.value, {}).name,
                  cron: (c.cron.value as string).trim(),
                  timeZone: ZONES[(o.timeZone as string | undefined) ?? 'UTC'],
                  payload: asJson(o.payload),
                  source: 'dynamic',
                  catchUp: o.catchUp ?? 'latest',
                  overlap: o.overlap ?? 'allow',
                };
                expect(info).toMatchObject(expectedInfo);
                expect(await schedules.get(name as string)).toMatchObject(expectedInfo);
              },
            );
            return;
          }
          if (c.op === 'list') {
            await judge(
              tally,
              'list()',
              true,
              () => schedules.list(),
              async (list, before, after) => {
                assertDelta('list()', before, after, {});
                expect(list).toHaveLength(before.schedule);
              },
            );
            return;
          }
          const allowed = c.op === 'get' || (c.op === 'remove' ? row?.source !== 'code' : !!row);
          const where = `${c.op}(${fc.stringify(name)}) of a schedule ${row ? row.source : 'that does not exist'}`;
          await judge<unknown>(
            tally,
            where,
            nameOk && allowed,
            () => schedules[c.op](name as never),
            async (value, before, after) => {
              if (!nameOk || !allowed) throw new Error(`${where} succeeded`);
              const removed = c.op === 'remove' && !!row;
              assertDelta(where, before, after, { schedule: removed ? -1 : 0 });
              if (c.op === 'remove') expect(value).toBe(removed);
              if (c.op === 'get')
                expect(value).toEqual(row ? expect.objectContaining({ name, source: row.source }) : null);
              if (c.op === 'pause' || c.op === 'resume') expect((await rowOf(name))!.paused).toBe(c.op === 'pause');
            },
          );
        }),
        RUNS(250),
      );
      tally.expectBoth();
      // Not one tick ran: the scheduler is off, so every job row above came from the calls under test.
      expect((await schedules.list()).find((x: ScheduleInfo) => x.name === 'prop-nightly')).toMatchObject({
        source: 'code',
      });
    },
    PROPERTY_TIMEOUT,
  );
});

describe('hostile input to workflows, schedules and drafts is a JobsError naming the field, and writes nothing', () => {
  const uuid = '01937c5e-1a2b-7c3d-8e4f-5a6b7c8d9e0f';
  const nullProto = () => Object.create(null) as object;
  /** The list with a hole at index 1: an entry missing, not an undefined one. */
  function withHole<T>(list: T[]): T[] {
    delete list[1];
    return list;
  }
  let dispatched: BatchDraft;
  beforeAll(async () => {
    dispatched = batches.create('done');
    await dispatched.dispatch();
  });
  const cases: Array<[string, () => unknown, RegExp]> = [
    // Each of these threw a TypeError from building the message ('in' on a primitive, JSON.stringify, String()).
    [
      'after: [5]',
      () => queue.enqueue(Echo, {}, { after: [5] as never }),
      /"after" entry 0 is not \{ job: id \} or \{ batch: id \}.*got 5/,
    ],
    ["after: ['x']", () => queue.enqueue(Echo, {}, { after: ['x'] as never }), /"after" entry 0 .*got the string "x"/],
    [
      'after: [{ job: 10n }]',
      () => queue.enqueue(Echo, {}, { after: [{ job: 10n }] as never }),
      /"after" entry 0 .*got job the BigInt 10n/,
    ],
    [
      'after with a null-prototype "on"',
      () => queue.enqueue(Echo, {}, { after: [{ job: uuid, on: nullProto() }] as never }),
      /"on" of "after" entry 0 must be 'success', 'failure', 'any-failure' or 'always', got an object/,
    ],
    [
      'after: []',
      () => queue.enqueue(Echo, {}, { after: [] }),
      /"after" must be a job id or a non-empty list.*got an array \(0 items\)/,
    ],
    [
      'upsert with timeZone 10n',
      () => app.get(RecurringSchedules).upsert('tz', Echo, '0 3 * * *', { timeZone: 10n as never }),
      /time zone the BigInt 10n is not a valid IANA time zone/,
    ],
    [
      'upsert with a null-prototype catchUp',
      () => app.get(RecurringSchedules).upsert('cu', Echo, '0 3 * * *', { catchUp: nullProto() as never }),
      /catchUp must be one of 'latest', 'all', 'none', got an object/,
    ],
    [
      'upsert with a null-prototype overlap',
      () => app.get(RecurringSchedules).upsert('ov', Echo, '0 3 * * *', { overlap: nullProto() as never }),
      /overlap must be 'allow' or 'skip', got an object/,
    ],
    [
      "upsert of the code-defined 'prop-nightly'",
      () => app.get(RecurringSchedules).upsert('prop-nightly', Echo, '0 3 * * *'),
      /a code-defined schedule \(@Cron\) has this name/,
    ],
    [
      'a flow step whose "after" has a hole',
      () =>
        queue
          .flow()
          .add('a', Echo, 1)
          .add('b', Echo, 2, { after: withHole(['a', 'a']) })
          .dispatch(),
      /flow\(\)\.add\('b'\): "after" entry 1 is undefined\. Each entry is a step key/,
    ],
    [
      'enqueue with an "after" that has a hole',
      () => queue.enqueue(Echo, {}, { after: withHole([{ job: uuid }, { job: uuid }]) }),
      /"after" entry 1 is not \{ job: id \} or \{ batch: id \}.*got undefined/,
    ],
    // These were accepted and lost: the job never written, the dependency or the transaction ignored.
    [
      'add() to a dispatched batch',
      () => dispatched.add(Echo, 1),
      /batch "done"\.add\(\): the batch was already dispatched, so this would be lost/,
    ],
    [
      'a batch member whose "after" is an id, not a list',
      () =>
        batches
          .create()
          .add(Echo, 1, { after: uuid } as never)
          .dispatch(),
      /batch\.add\(Echo\): "after" must be an array of step keys, \{ key, on \}, \{ job, on \} or \{ batch, on \}, got the string/,
    ],
    [
      'a flow step with "manager"',
      () =>
        queue
          .flow()
          .add('a', Echo, 1, { manager: dataSource.manager } as never)
          .dispatch(),
      /"manager" is not taken per job here, and the job would be written outside your transaction/,
    ],
    // These hung: awaiting a draft called its then() with the promise's resolve and reject.
    [
      'await chain().then(…) without dispatch()',
      async () => {
        const draft: unknown = queue.chain().then(Echo, 1);
        return await (draft as Promise<unknown>);
      },
      /chain\(\) was awaited .*Potential fix: await chain\.dispatch\(\)/,
    ],
    [
      'await batches.create().add(…) without dispatch()',
      async () => {
        const draft: unknown = batches.create('b').add(Echo, 1);
        return await (draft as Promise<unknown>);
      },
      /batch "b" was awaited .*Potential fix: await batch\.dispatch\(\)/,
    ],
  ];

  it.each(cases)('%s throws a JobsError naming the field and the fix, and writes nothing', (label, call, message) =>
    expectRefused(counter, label, call, message),
  );

  it('takes a parent id in any case (it was "does not exist" in upper case)', async () => {
    const parent = await queue.enqueue(Echo, 'parent');
    const child = await queue.enqueue(Echo, 'child', { after: parent.id.toUpperCase() });
    expect(await queue.get(child.id)).toMatchObject({ state: 'waiting' });
  });
});
