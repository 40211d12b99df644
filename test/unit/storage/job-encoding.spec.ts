import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { isSealed, JobCipher, type ClaimedJob, type NewJob } from '../../../lib/model/index.js';
import {
  dueQueues,
  encodeFlags,
  encodeNewJobColumns,
  encodeNewJobValues,
  encodeOutcomes,
  encodeUniformJobs,
  NEW_JOB_COLUMN_NAMES,
  queueFeatures,
  unnestNewJobs,
  uuidList,
} from '../../../lib/storage/jobs/job-encoding.js';
import { databaseUrl } from '../../support/database.js';

/**
 * The job encoder is pure: values in, array literals and JSON maps out. What the literals mean is
 * PostgreSQL's to say, so one block reads them back through the very unnest() the inserts use, on
 * real PostgreSQL (a plain SELECT: no schema, no table).
 */
const RUN_AT = new Date('2026-03-01T10:00:00.000Z');
const NOW = new Date('2026-03-01T10:00:05.000Z');

let seq = 0;
function newJob(o: Partial<NewJob> = {}): NewJob {
  seq++;
  return {
    id: `01a22d01-0000-7000-8000-${String(seq).padStart(12, '0')}`,
    name: 'invoice',
    queue: 'default',
    payloadJson: `{"n":${seq}}`,
    state: 'queued',
    priority: 0,
    runAt: RUN_AT,
    maxAttempts: 3,
    timeoutMs: null,
    ...o,
  };
}

function claimed(o: Partial<ClaimedJob> = {}): ClaimedJob {
  seq++;
  return {
    id: `01a22d02-0000-7000-8000-${String(seq).padStart(12, '0')}`,
    name: 'invoice',
    queue: 'default',
    payload: {},
    attempt: 1,
    maxAttempts: 3,
    timeoutMs: null,
    batchId: null,
    ...o,
  };
}

const plainCipher = new JobCipher();
const cipher = new JobCipher({ keys: { k1: randomBytes(32).toString('base64') }, current: 'k1' });
const COLUMN_COUNT = NEW_JOB_COLUMN_NAMES.split(', ').length;

describe('unnestNewJobs and NEW_JOB_COLUMN_NAMES', () => {
  it('names the same columns in the same order, each bound to the next parameter from `first`, extras after', () => {
    const text = unnestNewJobs(4, [['key', 'text']]);
    const [, params, alias] = /^unnest\((.*)\) AS t\((.*)\)$/.exec(text)!;
    expect(alias).toBe(`${NEW_JOB_COLUMN_NAMES}, key`);
    const numbers = params!.split(', ').map((p) => Number(/^\$(\d+)::\w+\[\]$/.exec(p)![1]));
    expect(numbers).toEqual(Array.from({ length: COLUMN_COUNT + 1 }, (_, i) => 4 + i));
    expect(params!.split(', ').at(-1)).toBe(`$${4 + COLUMN_COUNT}::text[]`);
    expect(COLUMN_COUNT).toBe(19);
  });
});

describe('encodeNewJobColumns', () => {
  it('gives one array literal per column, in NEW_JOB_COLUMN_NAMES order, with NULL for null and undefined alike', () => {
    const a = newJob({ groupKey: null, deadline: undefined });
    const b = newJob({ groupKey: 'g', deadline: new Date('2026-03-02T00:00:00.000Z'), uniqueWindow: 60_000 });
    const columns = encodeNewJobColumns([a, b]);
    expect(columns).toHaveLength(COLUMN_COUNT);
    const byName = Object.fromEntries(NEW_JOB_COLUMN_NAMES.split(', ').map((c, i) => [c, columns[i]]));
    expect(byName).toMatchObject({
      id: `{${a.id},${b.id}}`,
      name: '{"invoice","invoice"}',
      state: '{queued,queued}',
      run_at: `{${RUN_AT.toISOString()},${RUN_AT.toISOString()}}`,
      timeout_ms: '{NULL,NULL}',
      group_key: '{NULL,"g"}',
      remaining_dependencies: '{0,0}',
      deadline: '{NULL,2026-03-02T00:00:00.000Z}',
      unique_window: '{NULL,60000}',
      context: '{NULL,NULL}',
    });
  });

  it('escapes backslashes and double quotes inside quoted elements, and nothing else', () => {
    const [, name] = encodeNewJobColumns([newJob({ name: 'a"b\\c,{d}' })]);
    expect(name).toBe('{"a\\"b\\\\c,{d}"}');
  });

  describe('read back by PostgreSQL through the inserts’ unnest()', () => {
    let client: pg.Client;
    beforeAll(async () => {
      client = new pg.Client({ connectionString: databaseUrl() });
      await client.connect();
    });
    afterAll(() => client?.end());

    it('puts every value of every job in its own column, awkward text and nulls included', async () => {
      const awkward = 'quote " backslash \\ comma , brace } NULL ünï';
      const jobs = [
        newJob({
          name: awkward,
          queue: 'q"1',
          payloadJson: JSON.stringify({ text: awkward }),
          state: 'waiting',
          priority: -5,
          timeoutMs: 1500,
          batchId: '01a22d03-0000-7000-8000-000000000001',
          groupKey: 'NULL',
          uniqueKey: 'k\\1',
          remainingDependencies: 2,
          traceContext: { traceparent: '00-abc-def-01' },
          serialKey: 's,1',
          deadline: new Date('2026-04-01T00:00:00.000Z'),
          uniqueWhile: 'queued-or-active',
          uniqueWindow: 3_600_000,
          contextJson: '{"tenant":"t\\"1"}',
        }),
        newJob({}),
      ];
      const { rows } = await client.query(
        `SELECT id::text, name, queue, payload, state, priority, run_at, max_attempts, timeout_ms, batch_id::text,
                group_key, unique_key, remaining_dependencies, trace_context, serial_key, deadline, unique_while,
                unique_window::int, context
           FROM ${unnestNewJobs(1)}`,
        encodeNewJobColumns(jobs),
      );
      expect(rows).toEqual([
        {
          id: jobs[0]!.id,
          name: awkward,
          queue: 'q"1',
          payload: { text: awkward },
          state: 'waiting',
          priority: -5,
          run_at: RUN_AT,
          max_attempts: 3,
          timeout_ms: 1500,
          batch_id: '01a22d03-0000-7000-8000-000000000001',
          group_key: 'NULL',
          unique_key: 'k\\1',
          remaining_dependencies: 2,
          trace_context: { traceparent: '00-abc-def-01' },
          serial_key: 's,1',
          deadline: new Date('2026-04-01T00:00:00.000Z'),
          unique_while: 'queued-or-active',
          unique_window: 3_600_000,
          context: { tenant: 't"1' },
        },
        {
          id: jobs[1]!.id,
          name: 'invoice',
          queue: 'default',
          payload: JSON.parse(jobs[1]!.payloadJson) as unknown,
          state: 'queued',
          priority: 0,
          run_at: RUN_AT,
          max_attempts: 3,
          timeout_ms: null,
          batch_id: null,
          group_key: null,
          unique_key: null,
          remaining_dependencies: 0,
          trace_context: null,
          serial_key: null,
          deadline: null,
          unique_while: null,
          unique_window: null,
          context: null,
        },
      ]);
    });

    it('reads the one-job values (encodeNewJobValues) into the same columns as the arrays', async () => {
      const job = newJob({ groupKey: 'g', uniqueKey: 'u', deadline: RUN_AT, contextJson: '{"a":1}' });
      const cast = NEW_JOB_COLUMN_NAMES.split(', ')
        .map((c, i) => `$${i + 1}::${/::(\w+)\[\]/.exec(unnestNewJobs(1).split(', ')[i]!)![1]} AS ${c}`)
        .join(', ');
      const single = (await client.query(`SELECT ${cast}`, encodeNewJobValues(job))).rows[0];
      const arrays = (await client.query(`SELECT * FROM ${unnestNewJobs(1)}`, encodeNewJobColumns([job]))).rows[0];
      expect(single).toEqual(arrays);
    });
  });
});

describe('encodeUniformJobs', () => {
  it('shares every column but id and payload when the jobs agree on them, null and undefined counting as the same', () => {
    const jobs = [newJob({ groupKey: null, deadline: null }), newJob({}), newJob({ batchId: undefined })];
    const uniform = encodeUniformJobs(jobs)!;
    expect(uniform).toHaveLength(COLUMN_COUNT);
    expect(uniform[0]).toBe(`{${jobs.map((j) => j.id).join(',')}}`);
    expect(uniform[1]).toBe(`{${jobs.map((j) => JSON.stringify(j.payloadJson)).join(',')}}`);
    // Then the shared values, $3..$19: every column but id and payload, in NEW_JOB_COLUMNS' order.
    const payload = NEW_JOB_COLUMN_NAMES.split(', ').indexOf('payload');
    expect(uniform.slice(2)).toEqual(encodeNewJobValues(jobs[0]!).filter((_, i) => i !== 0 && i !== payload));
  });

  const differing: Array<[string, Partial<NewJob>]> = [
    ['name', { name: 'other' }],
    ['queue', { queue: 'other' }],
    ['state', { state: 'waiting' }],
    ['priority', { priority: 1 }],
    ['run time', { runAt: new Date(RUN_AT.getTime() + 1) }],
    ['max attempts', { maxAttempts: 4 }],
    ['timeout', { timeoutMs: 10 }],
    ['batch', { batchId: '01a22d03-0000-7000-8000-000000000009' }],
    ['group', { groupKey: 'g' }],
    ['a unique key', { uniqueKey: 'u' }],
    ['remaining dependencies', { remainingDependencies: 1 }],
    ['a trace context', { traceContext: { traceparent: 'x' } }],
    ['serial key', { serialKey: 's' }],
    ['deadline', { deadline: RUN_AT }],
    ['context', { contextJson: '{}' }],
  ];
  it.each(differing)('gives null when one job differs in its %s', (_, o) => {
    expect(encodeUniformJobs([newJob(), newJob(), newJob(o)])).toBeNull();
  });

  it('compares run times and deadlines by instant, not by Date object', () => {
    const jobs = [
      newJob({ runAt: new Date(RUN_AT.getTime()), deadline: new Date(NOW.getTime()) }),
      newJob({ runAt: new Date(RUN_AT.getTime()), deadline: new Date(NOW.getTime()) }),
    ];
    expect(encodeUniformJobs(jobs)).not.toBeNull();
  });

  it('with `unique`, sends each job’s key as a third array and the shared while and window, and refuses a job without a key or one that replaces', () => {
    const keyed = (key: string, o: Partial<NewJob> = {}) =>
      newJob({ uniqueKey: key, uniqueWhile: 'queued', uniqueWindow: null, ...o });
    const uniform = encodeUniformJobs([keyed('a"1'), keyed('b')], true)!;
    expect(uniform[11]).toBe('{"a\\"1","b"}');
    expect(uniform[16]).toBe('queued');
    expect(uniform[17]).toBeNull();
    expect(encodeUniformJobs([keyed('a'), newJob()], true)).toBeNull();
    expect(encodeUniformJobs([newJob(), keyed('a')], true)).toBeNull();
    expect(encodeUniformJobs([keyed('a'), keyed('b', { uniqueReplace: true })], true)).toBeNull();
    expect(encodeUniformJobs([keyed('a', { uniqueReplace: true }), keyed('b')], true)).toBeNull();
    expect(encodeUniformJobs([keyed('a'), keyed('b', { uniqueWhile: 'until-succeeded' })], true)).toBeNull();
    expect(encodeUniformJobs([keyed('a'), keyed('b', { uniqueWindow: 1000 })], true)).toBeNull();
  });

  it('without `unique`, neither sends nor shares a key, a while or a window', () => {
    const uniform = encodeUniformJobs([newJob({ uniqueWhile: 'queued', uniqueWindow: 5 })])!;
    expect([uniform[11], uniform[16], uniform[17]]).toEqual([null, null, null]);
  });
});

describe('queueFeatures and dueQueues', () => {
  it('names each queue that now holds a group or a serial key once, and ignores empty keys', () => {
    const features = queueFeatures([
      newJob({ queue: 'a', groupKey: 'g1' }),
      newJob({ queue: 'a', groupKey: 'g2' }),
      newJob({ queue: 'b', serialKey: 's' }),
      newJob({ queue: 'c', groupKey: '', serialKey: null }),
      newJob({ queue: 'd', groupKey: 'g', serialKey: 's' }),
    ]);
    expect(features).toEqual({ groups: ['a', 'd'], serial: ['b', 'd'] });
  });

  it('names the queues with a queued job due by now, once each: not later, waiting or skipped ones', () => {
    const later = new Date(NOW.getTime() + 1);
    const due = dueQueues(
      [
        newJob({ queue: 'now', runAt: NOW }),
        newJob({ queue: 'now', runAt: RUN_AT }),
        newJob({ queue: 'later', runAt: later }),
        newJob({ queue: 'waiting', state: 'waiting' }),
        newJob({ queue: 'skipped', state: 'skipped' }),
        newJob({ queue: 'past', runAt: RUN_AT }),
      ],
      NOW,
    );
    expect(due).toEqual(['now', 'past']);
  });
});

describe('encodeFlags and uuidList', () => {
  it('writes one t or f per row, in order, and ids unquoted', () => {
    expect(encodeFlags([1, 2, 3, 4], (n) => n % 2 === 0)).toBe('{f,t,f,t}');
    expect(encodeFlags([], () => true)).toBe('{}');
    expect(uuidList(['a', 'b'])).toBe('{a,b}');
  });
});

describe('encodeOutcomes', () => {
  const error = (message: string, stack?: string) => ({ name: 'Error', message, ...(stack ? { stack } : {}) });

  it('lists successes with their attempts as JSON keyed by id, results only where there is one', () => {
    const a = claimed({ attempt: 2 });
    const b = claimed({ attempt: 1 });
    const c = claimed({ attempt: 5 });
    const out = encodeOutcomes(
      [
        { job: a, outcome: { kind: 'succeeded', result: { total: 3 } } },
        { job: b, outcome: { kind: 'succeeded', result: null } },
        { job: c, outcome: { kind: 'succeeded', result: undefined } },
      ],
      plainCipher,
      1024,
    );
    expect(out.succeededIds).toEqual([a.id, b.id, c.id]);
    expect(JSON.parse(out.succeededAttempts)).toEqual({ [a.id]: 2, [b.id]: 1, [c.id]: 5 });
    expect(out.results).toEqual({ [a.id]: { total: 3 } });
    expect(out).toMatchObject({ traces: null, successors: null, failedIds: [], failures: {} });
    expect(encodeOutcomes([], plainCipher, 1024).succeededAttempts).toBe('{}');
  });

  it('maps each success that a job claimed ahead followed to its successor, and only those', () => {
    const a = claimed();
    const b = claimed();
    const out = encodeOutcomes(
      [
        { job: a, outcome: { kind: 'succeeded', result: null }, successor: 'next-1' },
        { job: b, outcome: { kind: 'succeeded', result: null } },
      ],
      plainCipher,
      1024,
    );
    expect(out.successors).toEqual({ [a.id]: 'next-1' });
  });

  it('traces the successes that had a span as trace/span/start ms, and no others', () => {
    const at = new Date('2026-03-01T10:00:01.234Z');
    const traced = claimed({ started: { at, traceId: 't'.repeat(32), spanId: 's'.repeat(16) } });
    const untraced = claimed({ started: { at, traceId: null, spanId: null } });
    const out = encodeOutcomes(
      [
        { job: traced, outcome: { kind: 'succeeded', result: null } },
        { job: untraced, outcome: { kind: 'succeeded', result: null } },
      ],
      plainCipher,
      1024,
    );
    expect(out.traces).toEqual({ [traced.id]: `${'t'.repeat(32)}/${'s'.repeat(16)}/${at.getTime()}` });
  });

  it('writes a retry back to the queue, a failure with its hook state, a cancel, and a snooze that gives its attempt back', () => {
    const claimedAt = new Date('2026-03-01T09:59:59.000Z');
    const at = new Date('2026-03-01T10:00:00.000Z');
    const retry = claimed({ attempt: 1, claimedAt, started: { at, traceId: 'T', spanId: 'S' } });
    const failed = claimed({ attempt: 3 });
    const hooked = claimed({ attempt: 3, claimedAt });
    const cancelled = claimed({ attempt: 2 });
    const snoozed = claimed({ attempt: 2, started: { at, traceId: null, spanId: null } });
    const until = new Date('2026-03-01T11:00:00.000Z');
    const out = encodeOutcomes(
      [
        { job: retry, outcome: { kind: 'retry', error: error('boom'), retryAt: until } },
        { job: failed, outcome: { kind: 'failed', error: error('dead'), hook: false } },
        { job: hooked, outcome: { kind: 'failed', error: error('dead'), hook: true } },
        { job: cancelled, outcome: { kind: 'cancelled', error: error('stop') } },
        { job: snoozed, outcome: { kind: 'snoozed', until, reason: null } },
      ],
      plainCipher,
      1024,
    );
    expect(out.succeededIds).toEqual([]);
    expect(out.failedIds).toEqual([retry.id, failed.id, hooked.id, cancelled.id, snoozed.id]);
    expect(out.failures).toEqual({
      [retry.id]: {
        attempt: 1,
        state: 'queued',
        exec_state: 'failed',
        error: error('boom'),
        run_at: until.toISOString(),
        hook: null,
        run: { claimed: claimedAt.toISOString(), started: at.toISOString(), trace: 'T', span: 'S' },
      },
      [failed.id]: {
        attempt: 3,
        state: 'failed',
        exec_state: 'failed',
        error: error('dead'),
        run_at: null,
        hook: 'done',
        run: undefined,
      },
      [hooked.id]: {
        attempt: 3,
        state: 'failed',
        exec_state: 'failed',
        error: error('dead'),
        run_at: null,
        hook: 'running',
        run: { claimed: claimedAt.toISOString() },
      },
      [cancelled.id]: {
        attempt: 2,
        state: 'cancelled',
        exec_state: 'cancelled',
        error: error('stop'),
        run_at: null,
        hook: null,
        run: undefined,
      },
      [snoozed.id]: {
        attempt: 2,
        state: 'queued',
        exec_state: 'snoozed',
        error: { name: 'SnoozeJob', message: `snoozed until ${until.toISOString()}` },
        run_at: until.toISOString(),
        hook: null,
        extra: true,
        run: { started: at.toISOString() },
      },
    });
  });

  it('cuts each error’s message and stack to maxErrorBytes of UTF-8, and a snooze’s reason too', () => {
    const job = claimed();
    const snoozed = claimed();
    const long = 'é'.repeat(400); // 800 bytes
    const out = encodeOutcomes(
      [
        { job, outcome: { kind: 'failed', error: error(long, long), hook: false } },
        { job: snoozed, outcome: { kind: 'snoozed', until: NOW, reason: long } },
      ],
      plainCipher,
      300,
    );
    const stored = (out.failures[job.id] as { error: { message: string; stack: string } }).error;
    for (const text of [stored.message, stored.stack]) {
      expect(Buffer.byteLength(text)).toBeLessThanOrEqual(300);
      expect(text).toMatch(/^é+… \[cut \d+ bytes\]$/);
    }
    const reason = (out.failures[snoozed.id] as { error: { message: string } }).error.message;
    expect(Buffer.byteLength(reason)).toBeLessThanOrEqual(300);
    // Short enough: untouched.
    const short = encodeOutcomes([{ job, outcome: { kind: 'cancelled', error: error('ok') } }], plainCipher, 300);
    expect((short.failures[job.id] as { error: unknown }).error).toEqual(error('ok'));
  });

  it('seals an encrypted job’s result and error, bounding the plaintext first, and leaves a plain job’s in the clear', () => {
    const secret = claimed({ encrypted: true });
    const failing = claimed({ encrypted: true });
    const plain = claimed();
    const long = 'x'.repeat(1000);
    const out = encodeOutcomes(
      [
        { job: secret, outcome: { kind: 'succeeded', result: { card: '4111' } } },
        { job: plain, outcome: { kind: 'succeeded', result: { card: 'none' } } },
        { job: failing, outcome: { kind: 'failed', error: error(long, 'at secret()'), hook: false } },
      ],
      cipher,
      300,
    );
    const sealed = out.results[secret.id];
    expect(isSealed(sealed)).toBe(true);
    expect(sealed).not.toContain('4111');
    expect(cipher.openValue(sealed, 'result')).toEqual({ card: '4111' });
    expect(out.results[plain.id]).toEqual({ card: 'none' });
    const stored = (out.failures[failing.id] as { error: { name: string; message: string; stack: string } }).error;
    expect(isSealed(stored.message) && isSealed(stored.stack)).toBe(true);
    expect(stored.name).toBe('Error');
    const opened = cipher.revealError(stored);
    expect(opened.stack).toBe('at secret()');
    expect(Buffer.byteLength(opened.message)).toBeLessThanOrEqual(300);
    expect(opened.message).toMatch(/^x+… \[cut \d+ bytes\]$/);
  });
});
