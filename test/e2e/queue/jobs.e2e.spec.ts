import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { JobQueue, JobsError, RetentionService } from 'nestjs-durable-jobs';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import { MAX_IMPORT_FILES } from '../../../sample/imports/create-import.dto.js';
import { FlakySync } from '../../../sample/jobs/flaky-sync.job.js';
import { NightlyReport } from '../../../sample/jobs/nightly-report.job.js';
import { SendReceipt } from '../../../sample/jobs/send-receipt.job.js';
import { SlowReport } from '../../../sample/jobs/slow-report.job.js';
import { MAX_ORDER_CENTS } from '../../../sample/orders/create-order.dto.js';
import { Mailer } from '../../../sample/orders/mailer.service.js';
import { Order } from '../../../sample/orders/order.entity.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import {
  DoomedProbe,
  ProbeRecorder,
  ScopedProbe,
  TimeoutProbe,
  UntilAbortedProbe,
  probeProviders,
} from '../../support/probe.jobs.js';
import { startSampleApp } from '../../support/sample-app.js';
import { sleep, waitFor } from '../../support/wait.js';
import { JobWorker } from '../../../lib/worker/job-worker.service.js';

const schema = uniqueSchema('jobs');
const clock = new ManualClock(new Date('2026-11-01T10:00:00Z'));
let app: INestApplication;
let jobs: JobQueue;

const stateOf = async (id: string) => (await jobs.get(id))?.state;
/** The job's onFailure hook ran and its record says so (it runs once the failed outcome is written). */
const hookDone = (id: string) =>
  waitFor(`the onFailure hook of ${id} to be done`, async () => {
    const [row] = await sql<{ failure_hook: string | null }>(
      `SELECT failure_hook FROM "${schema}_jobs".job WHERE id = $1`,
      [id],
    );
    return row?.failure_hook === 'done';
  });
const until = (id: string, state: string) =>
  waitFor(`job ${id} to be ${state}`, async () => (await stateOf(id)) === state);

beforeAll(async () => {
  app = await startSampleApp({
    schema,
    clock,
    // Heartbeats come every third of the lease: every second, so a test that waits for one
    // waits a second. The ManualClock keeps so short a lease from running out on its own.
    // Progress throttled far beyond any test's length: a report after the first of an attempt
    // stays pending until the attempt ends, which is what the last-report test needs.
    worker: { concurrency: 5, pollInterval: 200, lease: 3_000, progressThrottle: 3_600_000 },
    providers: probeProviders(),
  });
  jobs = app.get(JobQueue);
});

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema, `${schema}_jobs`);
});

describe('sample app over HTTP', () => {
  it('POST /orders runs the receipt job; GET /jobs/:id shows it succeeded with one execution', async () => {
    const created = await request(app.getHttpServer())
      .post('/orders')
      .send({ email: 'ada@example.com', totalCents: 1200 })
      .expect(201);
    const { orderId, jobId } = created.body as { orderId: number; jobId: string };
    await until(jobId, 'succeeded');
    const res = await request(app.getHttpServer()).get(`/jobs/${jobId}`).expect(200);
    expect(res.body).toMatchObject({
      id: jobId,
      name: 'send-receipt',
      queue: 'emails',
      state: 'succeeded',
      attempt: 1,
      result: { sentTo: 'ada@example.com' },
    });
    expect(res.body.executions).toHaveLength(1);
    expect(res.body.executions[0]).toMatchObject({ attempt: 1, state: 'succeeded' });
    expect(app.get(Mailer).sent).toContainEqual({ orderId, email: 'ada@example.com' });
  });

  it('GET /jobs/:id of an unknown job is 404; of something that is no job id, a 400 naming the fix', async () => {
    await request(app.getHttpServer()).get('/jobs/00000000-0000-7000-8000-000000000000').expect(404);
    const bad = await request(app.getHttpServer()).get('/jobs/not-a-uuid').expect(400);
    // The sample's own check (JobIdDto) answers before the library is asked.
    expect(bad.body.message).toEqual([
      expect.stringMatching(/^id must be a job id, the jobId that POST \/orders returned/),
    ]);
    await request(app.getHttpServer()).delete('/jobs/not-a-uuid').expect(400);
  });
});

describe('imports over HTTP', () => {
  it('POST /imports dispatches a batch; GET /batches/:id shows it with progress', async () => {
    const res = await request(app.getHttpServer())
      .post('/imports')
      .send({ name: 'october', files: ['a.csv', 'b.csv', 'c.csv'], userId: 7 })
      .expect(201);
    const { batchId } = res.body as { batchId: string };
    await waitFor('the import to succeed', async () => {
      const status = await request(app.getHttpServer()).get(`/batches/${batchId}`).expect(200);
      return status.body.state === 'succeeded';
    });
    const status = await request(app.getHttpServer()).get(`/batches/${batchId}`).expect(200);
    expect(status.body).toMatchObject({ name: 'october', total: 3, succeeded: 3, progress: 1 });
    await request(app.getHttpServer()).get('/batches/00000000-0000-7000-8000-000000000000').expect(404);
    await request(app.getHttpServer()).post('/imports').send({ files: 'a.csv' }).expect(400);
  });
});

describe('the sample validates every body, param and query it takes', () => {
  const long = 'x'.repeat(10_000);
  const unknownId = '00000000-0000-7000-8000-000000000000';
  const TOTAL = /^totalCents must be a whole number of cents from 0 to 100000000, such as 1250 for 12\.50/;
  const EMAIL = /^email must be an email address of at most 254 characters, such as ada@example\.com/;
  const FILES = /^files must be a list of 1 to 100 file names, each 1 to 200 printable characters/;
  const IMPORT_NAME = /^name must be 1 to 200 printable characters, such as "import-october"/;
  const USER = /^userId must be a whole number from 1 to 2147483647, such as 7/;
  const JOB_ID = /^id must be a job id, the jobId that POST \/orders returned \(a UUID/;
  const BATCH_ID = /^id must be a batch id, the batchId that POST \/imports returned \(a UUID/;
  const STATE =
    /^state must be one or more of waiting, queued, scheduled, active, succeeded, failed, cancelled, skipped, such as/;
  const LIMIT = /^limit must be a whole number from 1 to 500, given once, such as limit=50/;
  const QUEUE = /^queue must be a queue's name, given once \(1 to 200 printable characters\), such as queue=emails/;
  const JOB_NAME = /^name must be a job's name, given once \(1 to 200 printable characters\)/;
  const BEFORE = /^before must be the "next" of the previous page, given once \(a job id, a UUID\)/;
  const SINCE = /^since must be an ISO 8601 date or time, such as since=2026-11-01/;
  const SCHEDULE = /^name must be a schedule's name as GET \/schedules lists it/;
  const extra = (field: string) => new RegExp(`^property ${field.replace(/[[\]]/g, '\\$&')} should not exist$`, 'm');

  interface Hostile {
    label: string;
    method: 'get' | 'post' | 'delete';
    path: string;
    body?: unknown;
    /** Sent as it is, under this content type (malformed JSON, a form). */
    raw?: [type: string, text: string];
    status?: number;
    /** Matched against each line of the message (Nest's ValidationPipe sends a list). */
    message: RegExp;
  }
  const order = (label: string, body: unknown, message: RegExp): Hostile => ({
    label: `POST /orders, ${label}`,
    method: 'post',
    path: '/orders',
    body,
    message,
  });
  const rawOrder = (label: string, type: string, text: string, message: RegExp, status = 400): Hostile => ({
    label: `POST /orders, ${label}`,
    method: 'post',
    path: '/orders',
    raw: [type, text],
    message,
    status,
  });
  const anImport = (label: string, body: unknown, message: RegExp): Hostile => ({
    label: `POST /imports, ${label}`,
    method: 'post',
    path: '/imports',
    body,
    message,
  });
  const get = (path: string, label: string, message: RegExp, status = 400): Hostile => ({
    label: `GET ${path.length > 80 ? `${path.slice(0, 40)}…` : path}, ${label}`,
    method: 'get',
    path,
    message,
    status,
  });
  const ok = { email: 'ada@example.com' };

  const cases: Hostile[] = [
    // The issue's three: each was a 500 (a driver error from the int column).
    order('totalCents "abc"', { ...ok, totalCents: 'abc' }, TOTAL),
    order('totalCents 1.5', { ...ok, totalCents: 1.5 }, TOTAL),
    order('totalCents 1e30', { ...ok, totalCents: 1e30 }, TOTAL),
    order('totalCents -1', { ...ok, totalCents: -1 }, TOTAL),
    order('totalCents one over the bound', { ...ok, totalCents: MAX_ORDER_CENTS + 1 }, TOTAL),
    order('totalCents a numeric string', { ...ok, totalCents: '1200' }, TOTAL),
    order('totalCents an array', { ...ok, totalCents: [1200] }, TOTAL),
    order('totalCents an object', { ...ok, totalCents: { cents: 1200 } }, TOTAL),
    order('totalCents a boolean', { ...ok, totalCents: true }, TOTAL),
    order('no email', { totalCents: 1200 }, EMAIL),
    order('an empty body', {}, EMAIL),
    order('email not an address', { email: 'ada' }, EMAIL),
    order('email with a NUL', { email: 'ada\u0000@example.com' }, EMAIL),
    // Was a 500: the email check's encodeURI threw on it.
    order('email with a lone surrogate', { email: 'lone\ud800@b.c' }, EMAIL),
    order('email with a lone surrogate in its domain', { email: 'ada@b\udc00.c' }, EMAIL),
    order('email of 10,000 characters', { email: `${long}@example.com` }, EMAIL),
    order('email an array', { email: ['ada@example.com'] }, EMAIL),
    order('email a number', { email: 42 }, EMAIL),
    order('a field the order does not have', { ...ok, admin: true }, extra('admin')),
    order('a JSON array for a body', [ok], EMAIL),
    rawOrder('malformed JSON', 'application/json', '{"email":', /JSON/),
    rawOrder('a JSON string for a body', 'application/json', '"ada@example.com"', /is not valid JSON/),
    rawOrder(
      'a form with totalCents "abc"',
      'application/x-www-form-urlencoded',
      'email=a%40b.co&totalCents=abc',
      TOTAL,
    ),
    rawOrder('plain text', 'text/plain', 'ada@example.com', EMAIL),
    // Not a 400: the body parser's own limit (100 kB) answers 413, which is the status for it.
    rawOrder(
      'a body over 100 kB',
      'application/json',
      JSON.stringify({ email: 'x'.repeat(200_000) }),
      /too large/,
      413,
    ),

    anImport('no files', {}, FILES),
    anImport('files a string', { files: 'a.csv' }, FILES),
    anImport('files empty', { files: [] }, FILES),
    anImport('a file name that is a number', { files: ['a.csv', 1] }, FILES),
    anImport('a file name that is empty', { files: [''] }, FILES),
    anImport('a file name of blanks', { files: ['   '] }, FILES),
    anImport('a file name with a NUL', { files: ['a\u0000.csv'] }, FILES),
    anImport('a file name with a control character', { files: ['a\u0007.csv'] }, FILES),
    anImport('a file name of 10,000 characters', { files: [long] }, FILES),
    anImport('a nested array', { files: [['a.csv']] }, FILES),
    anImport(
      'one file more than the bound',
      { files: Array.from({ length: MAX_IMPORT_FILES + 1 }, (_, i) => `${i}.csv`) },
      FILES,
    ),
    anImport('name empty', { name: '', files: ['a.csv'] }, IMPORT_NAME),
    anImport('name a number', { name: 5, files: ['a.csv'] }, IMPORT_NAME),
    anImport('name with a NUL', { name: 'oct\u0000ober', files: ['a.csv'] }, IMPORT_NAME),
    anImport('name of 10,000 characters', { name: long, files: ['a.csv'] }, IMPORT_NAME),
    anImport('userId "abc"', { files: ['a.csv'], userId: 'abc' }, USER),
    anImport('userId 1.5', { files: ['a.csv'], userId: 1.5 }, USER),
    anImport('userId 1e30', { files: ['a.csv'], userId: 1e30 }, USER),
    anImport('userId 0', { files: ['a.csv'], userId: 0 }, USER),
    anImport('userId -1', { files: ['a.csv'], userId: -1 }, USER),
    anImport('a field the import does not have', { files: ['a.csv'], priority: 10 }, extra('priority')),

    get('/jobs/not-a-uuid', 'not a UUID', JOB_ID),
    get('/jobs/%00', 'a NUL', JOB_ID),
    get(`/jobs/${long}`, '10,000 characters', JOB_ID),
    get(`/jobs/${unknownId}`, 'an unknown id', /^No job 00000000-0000-7000-8000-000000000000$/, 404),
    { label: 'DELETE /jobs/not-a-uuid, not a UUID', method: 'delete', path: '/jobs/not-a-uuid', message: JOB_ID },
    {
      label: 'POST /jobs/not-a-uuid/retry, not a UUID',
      method: 'post',
      path: '/jobs/not-a-uuid/retry',
      message: JOB_ID,
    },
    {
      label: 'POST /jobs/<unknown>/retry, an unknown id',
      method: 'post',
      path: `/jobs/${unknownId}/retry`,
      status: 404,
      message: /^retry\(00000000-0000-7000-8000-000000000000\): no such job\. Potential fix/,
    },
    { label: 'DELETE /jobs/%00, a NUL', method: 'delete', path: '/jobs/%00', message: JOB_ID },
    {
      label: 'DELETE /jobs/<unknown>, an unknown id',
      method: 'delete',
      path: `/jobs/${unknownId}`,
      status: 404,
      message: /^cancel\(00000000-0000-7000-8000-000000000000\): no such job\. Potential fix/,
    },
    get('/batches/abc', 'not a UUID', BATCH_ID),
    get('/batches/%00', 'a NUL', BATCH_ID),
    get(`/batches/${unknownId}`, 'an unknown id', /^No batch /, 404),

    get('/jobs?state=finished', 'an unknown state', STATE),
    get('/jobs?state=failed,finished', 'an unknown state in a list', STATE),
    get('/jobs?state=failed&state=finished', 'an unknown state repeated', STATE),
    get('/jobs?state=', 'an empty state', STATE),
    get('/jobs?state=failed,', 'an empty state in a list', STATE),
    get('/jobs?state=%00', 'a NUL state', STATE),
    get(`/jobs?state=${long}`, 'a state of 10,000 characters', STATE),
    get('/jobs?state[x]=failed', 'a bracketed key', extra('state[x]')),
    get('/jobs?limit=abc', 'limit "abc"', LIMIT),
    get('/jobs?limit=1.5', 'limit 1.5', LIMIT),
    get('/jobs?limit=1e30', 'limit 1e30', LIMIT),
    get('/jobs?limit=-1', 'limit -1', LIMIT),
    get('/jobs?limit=0', 'limit 0', LIMIT),
    get('/jobs?limit=501', 'limit over 500', LIMIT),
    get('/jobs?limit=', 'limit empty', LIMIT),
    get('/jobs?limit=1&limit=2', 'limit repeated', LIMIT),
    get('/jobs?queue=%00', 'a NUL queue', QUEUE),
    get(`/jobs?queue=${long}`, 'a queue of 10,000 characters', QUEUE),
    get('/jobs?queue=emails&queue=imports', 'queue repeated', QUEUE),
    get('/jobs?queue=', 'queue empty', QUEUE),
    get('/jobs?name=%00', 'a NUL name', JOB_NAME),
    get('/jobs?name=a&name=b', 'name repeated', JOB_NAME),
    get('/jobs?before=abc', 'before not a UUID', BEFORE),
    get(`/jobs?before=${unknownId}&before=${unknownId}`, 'before repeated', BEFORE),
    get('/jobs?status=failed', 'a parameter it does not take', extra('status')),

    get('/stats?since=abc', 'since "abc"', SINCE),
    // Date.parse takes "1" for 2001-01-01: only ISO 8601 passes.
    get('/stats?since=1', 'since "1"', SINCE),
    get('/stats?since=2026-02-30', 'since a day that does not exist', SINCE),
    get('/stats?since=%00', 'a NUL since', SINCE),
    get(`/stats?since=${long}`, 'since of 10,000 characters', SINCE),
    get('/stats?since=2026-11-01&since=2026-11-02', 'since repeated', SINCE),
    get('/stats?from=2026-11-01', 'a parameter it does not take', extra('from')),

    ...(['pause', 'resume'] as const).flatMap((action): Hostile[] => [
      { label: `POST /schedules/%00/${action}`, method: 'post', path: `/schedules/%00/${action}`, message: SCHEDULE },
      { label: `POST /schedules/%20/${action}`, method: 'post', path: `/schedules/%20/${action}`, message: SCHEDULE },
      {
        label: `POST /schedules/<10,000 characters>/${action}`,
        method: 'post',
        path: `/schedules/${long}/${action}`,
        message: SCHEDULE,
      },
      {
        label: `POST /schedules/no-such-schedule/${action}, an unknown name`,
        method: 'post',
        path: `/schedules/no-such-schedule/${action}`,
        status: 404,
        message: new RegExp(
          `^RecurringSchedules\\.${action}\\('no-such-schedule'\\): no schedule has this name\\. Potential fix`,
        ),
      },
    ]),
  ];

  /** What a bad request must not have written: orders, import jobs. */
  const written = async () =>
    (
      await sql<{ orders: number; imports: number }>(
        `SELECT (SELECT count(*)::int FROM "${schema}".sample_order) AS orders,
                (SELECT count(*)::int FROM "${schema}_jobs".job WHERE name = 'import-file') AS imports`,
      )
    )[0];

  it.each(cases)('$label', async ({ method, path, body, raw, status = 400, message }) => {
    const before = await written();
    let req = request(app.getHttpServer())[method](path);
    if (raw) req = req.set('content-type', raw[0]).send(raw[1]);
    else if (body !== undefined) req = req.send(body as object);
    const res = await req;
    expect(res.status).toBe(status);
    const lines: unknown[] = [res.body.message].flat();
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.some((line) => typeof line === 'string' && message.test(line))).toBe(true);
    expect(await written()).toEqual(before);
  });

  it('valid requests still work: the bounds, both forms of a list of states, paging, since, schedules by name', async () => {
    const http = app.getHttpServer();
    for (const totalCents of [0, MAX_ORDER_CENTS, undefined]) {
      const { body } = await request(http)
        .post('/orders')
        .send({ email: 'bounds@example.com', totalCents })
        .expect(201);
      const [row] = await sql<{ totalCents: number }>(
        `SELECT "totalCents" FROM "${schema}".sample_order WHERE id = $1`,
        [body.orderId],
      );
      expect(row!.totalCents).toBe(totalCents ?? 0);
    }
    const imported = await request(http)
      .post('/imports')
      .send({ name: 'import-ö-😀', files: ['x.csv'], userId: 2_147_483_647 })
      .expect(201);
    await request(http).get(`/batches/${imported.body.batchId}`).expect(200);

    const failed = await jobs.enqueue(DoomedProbe, { permanent: true });
    const queued = await jobs.enqueue(FlakySync, { account: 'listed' }, { delay: 60_000 });
    await until(failed.id, 'failed');
    const repeated = await request(http).get('/jobs?state=failed&state=scheduled&limit=500').expect(200);
    const comma = await request(http).get('/jobs?state=failed,scheduled&limit=500').expect(200);
    expect(comma.body).toEqual(repeated.body);
    const listed = repeated.body.jobs as Array<{ id: string; state: string }>;
    expect(listed.map((j) => j.id)).toEqual(expect.arrayContaining([failed.id, queued.id]));
    // "scheduled" is a queued job due later, as GET /stats counts it: list and count agree.
    expect(new Set(listed.map((j) => j.state))).toEqual(new Set(['failed', 'queued']));
    const scheduled = await request(http).get('/jobs?state=scheduled&limit=500').expect(200);
    const counted = await request(http).get('/stats').expect(200);
    expect(scheduled.body.jobs.map((j: { id: string }) => j.id)).toContain(queued.id);
    expect(scheduled.body.jobs).toHaveLength(counted.body.total.scheduled);
    const due = await request(http).get('/jobs?state=queued&limit=500').expect(200);
    expect(due.body.jobs.map((j: { id: string }) => j.id)).not.toContain(queued.id);

    // The worker names no queues: it serves every one, and /workers says so.
    const workers = (await request(http).get('/workers').expect(200)).body as Array<{ queues: unknown }>;
    expect(workers).toContainEqual(expect.objectContaining({ alive: true, queues: 'all' }));
    for (const w of workers) expect(w.queues === 'all' || (Array.isArray(w.queues) && w.queues.length > 0)).toBe(true);

    const first = await request(http).get('/jobs?limit=1').expect(200);
    expect(first.body.jobs).toHaveLength(1);
    const second = await request(http).get(`/jobs?limit=1&before=${first.body.next}`).expect(200);
    expect(second.body.jobs).toHaveLength(1);
    expect(second.body.jobs[0].id).not.toBe(first.body.jobs[0].id);
    const receipts = await request(http).get('/jobs?queue=emails&name=send-receipt').expect(200);
    expect(receipts.body.jobs.length).toBeGreaterThan(0);
    for (const job of receipts.body.jobs) expect(job).toMatchObject({ queue: 'emails', name: 'send-receipt' });

    const since = new Date(clock.now().getTime() + 60_000).toISOString();
    const stats = await request(http).get(`/stats?since=${since}`).expect(200);
    expect(stats.body.since).toBe(since);
    expect(stats.body.total.succeeded).toBe(0); // nothing was created after `since`
    await request(http).get('/stats?since=2026-11-01').expect(200);

    const paused = await request(http).post('/schedules/nightly-report/pause').expect(200);
    expect(paused.body).toMatchObject({ name: 'nightly-report', paused: true });
    const resumed = await request(http).post('/schedules/nightly-report/resume').expect(200);
    expect(resumed.body).toMatchObject({ name: 'nightly-report', paused: false });

    await request(http).delete(`/jobs/${queued.id}`).expect(202);
    expect(await stateOf(queued.id)).toBe('cancelled');
  });

  it('the nightly report sums orders past the int range, as orders within the bound can add up to', async () => {
    // 22 orders at the bound make 2.2 billion cents: past int4, where the sum used to overflow.
    await sql(
      `INSERT INTO "${schema}".sample_order (email, "totalCents") SELECT 'big@example.com', $1 FROM generate_series(1, 22)`,
      [MAX_ORDER_CENTS],
    );
    const [expected] = await sql<{ orders: number; total: string }>(
      `SELECT count(*)::int AS orders, sum("totalCents")::text AS total FROM "${schema}".sample_order`,
    );
    expect(Number(expected!.total)).toBeGreaterThan(2 ** 31);
    const { id } = await jobs.enqueue(NightlyReport, null);
    // Its first attempt's end, whichever it is: a failed one would wait for a backoff the ManualClock never reaches.
    const job = await waitFor(`the first attempt of nightly report ${id} to end`, async () => {
      const info = await jobs.get(id);
      return info?.executions.some((e) => e.state !== 'active') ? info : null;
    });
    expect(job.lastError).toBeNull();
    expect(job.state).toBe('succeeded');
    expect(job.result).toEqual({ orders: expected!.orders, totalCents: Number(expected!.total) });
  });
});

describe('transactional enqueue', () => {
  it('a rolled-back transaction leaves no job; a committed one runs', async () => {
    const ds = app.get(DataSource);
    let rolledBackId = '';
    await expect(
      ds.transaction(async (manager) => {
        const order = await manager.save(manager.create(Order, { email: 'gone@example.com', totalCents: 1 }));
        rolledBackId = (await jobs.enqueue(SendReceipt, { orderId: order.id }, { manager })).id;
        throw new Error('payment declined');
      }),
    ).rejects.toThrow('payment declined');
    expect(rolledBackId).not.toBe('');
    expect(await jobs.get(rolledBackId)).toBeNull();

    const committedId = await ds.transaction(async (manager) => {
      const order = await manager.save(manager.create(Order, { email: 'kept@example.com', totalCents: 2 }));
      return (await jobs.enqueue(SendReceipt, { orderId: order.id }, { manager })).id;
    });
    await until(committedId, 'succeeded');
  });
});

describe('retries and failures', () => {
  it('the flaky job succeeds at attempt 3 after backoff delays measured on the clock', async () => {
    const { id } = await jobs.enqueue(FlakySync, { account: 'acme' });
    // A running attempt also shows as an execution (state 'active'): wait for the failed one.
    const failedAttempts = async () => (await jobs.get(id))?.executions.filter((e) => e.state === 'failed').length;
    await waitFor('attempt 1 to fail', async () => (await failedAttempts()) === 1);
    let job = (await jobs.get(id))!;
    expect(job.state).toBe('queued');
    // A job that is to retry shows why its last attempt failed.
    expect(job.lastError?.message).toContain('attempt 1');
    expect(job.runAt.getTime() - clock.now().getTime()).toBe(1_000);
    // Not before the backoff has passed on the clock.
    clock.advance(999);
    await sleep(400);
    expect((await jobs.get(id))!.executions).toHaveLength(1);
    clock.advance(1);
    await waitFor('attempt 2 to fail', async () => (await failedAttempts()) === 2);
    job = (await jobs.get(id))!;
    expect(job.runAt.getTime() - clock.now().getTime()).toBe(2_000);
    clock.advance(2_000);
    await until(id, 'succeeded');
    job = (await jobs.get(id))!;
    expect(job.attempt).toBe(3);
    expect(job.executions.map((e) => [e.attempt, e.state])).toEqual([
      [1, 'failed'],
      [2, 'failed'],
      [3, 'succeeded'],
    ]);
    expect(job.executions[0]!.error?.message).toContain('attempt 1');
    // Once it succeeded, the earlier errors are its attempts', not the job's.
    expect(job.executions[1]!.error?.message).toContain('attempt 2');
    expect(job.lastError).toBeNull();
    const res = await request(app.getHttpServer()).get(`/jobs/${id}`).expect(200);
    expect(res.body).toMatchObject({ state: 'succeeded', lastError: null });
  });

  it('a PermanentJobError fails the job at once; onFailure runs once', async () => {
    const recorder = app.get(ProbeRecorder);
    const { id } = await jobs.enqueue(DoomedProbe, { permanent: true });
    await until(id, 'failed');
    const job = (await jobs.get(id))!;
    expect(job.attempt).toBe(1);
    expect(job.lastError).toMatchObject({ name: 'PermanentJobError', message: 'the record is gone' });
    expect(job.executions.map((e) => e.state)).toEqual(['failed']);
    await hookDone(id);
    expect(recorder.failures.get(id)).toBe(1);
    // Run by the worker that failed it, right after the outcome: with the error as thrown.
    expect(recorder.failureSeen.get(id)).toEqual({ error: 'PermanentJobError', aborted: false });
  });

  it('used-up attempts fail the job; onFailure runs exactly once', async () => {
    const recorder = app.get(ProbeRecorder);
    const { id } = await jobs.enqueue(DoomedProbe, {});
    await until(id, 'failed');
    const job = (await jobs.get(id))!;
    expect(job.attempt).toBe(3);
    expect(job.executions.map((e) => [e.attempt, e.state])).toEqual([
      [1, 'failed'],
      [2, 'failed'],
      [3, 'failed'],
    ]);
    expect(recorder.attempts.get(id)).toEqual([1, 2, 3]);
    await hookDone(id);
    expect(recorder.failures.get(id)).toBe(1);
  });

  it('a timeout fails the attempt and aborts the signal', async () => {
    const recorder = app.get(ProbeRecorder);
    const { id } = await jobs.enqueue(TimeoutProbe, {});
    await until(id, 'failed');
    const job = (await jobs.get(id))!;
    expect(job.lastError).toMatchObject({ name: 'JobTimeoutError' });
    expect(job.lastError!.message).toContain('200 ms');
    expect(recorder.aborts.get(id)).toBe('JobTimeoutError');
  });

  it('retry() requeues a failed job with fresh attempts; other states are refused', async () => {
    const { id } = await jobs.enqueue(DoomedProbe, { permanent: true });
    await until(id, 'failed');
    // The sample's route, which DELETE /jobs/:id's refusal of a finished job points to.
    const cancelFailed = await request(app.getHttpServer()).delete(`/jobs/${id}`).expect(400);
    expect(cancelFailed.body.message).toMatch(/use retry\(\) to run a finished job again/);
    const retried = await request(app.getHttpServer()).post(`/jobs/${id}/retry`).expect(200);
    expect(retried.body).toEqual({ id, retried: true });
    // retry() has queued it when it returns; "failed" with attempt 2 can only be the retried run's end.
    // (Counting executions included the attempt still running, which then read "active".)
    await waitFor('the retried job to fail again', async () => {
      const retried = await jobs.get(id);
      return retried?.state === 'failed' && retried.attempt === 2;
    });
    const job = (await jobs.get(id))!;
    expect(job.executions.map((e) => [e.attempt, e.state])).toEqual([
      [1, 'failed'],
      [2, 'failed'],
    ]);
    expect(job.maxAttempts).toBe(4);
    const queued = await jobs.enqueue(FlakySync, { account: 'x' }, { delay: 60_000 });
    await expect(jobs.retry(queued.id)).rejects.toThrow(
      /the job is "queued"; only failed, cancelled or skipped jobs can be retried/,
    );
    const refused = await request(app.getHttpServer()).post(`/jobs/${queued.id}/retry`).expect(400);
    expect(refused.body.message).toMatch(/the job is "queued"; only failed, cancelled or skipped jobs can be retried/);
    await expect(jobs.retry('00000000-0000-7000-8000-000000000000')).rejects.toThrow(/no such job/);
    await jobs.cancel(queued.id);
  });
});

describe('handlers and DI', () => {
  it('a handler with request-scoped dependencies gets a fresh DI sub-tree per run', async () => {
    const first = await jobs.enqueue(ScopedProbe, {});
    const second = await jobs.enqueue(ScopedProbe, {});
    await until(first.id, 'succeeded');
    await until(second.id, 'succeeded');
    const a = (await jobs.get(first.id))!.result as { serial: number; sameJob: boolean };
    const b = (await jobs.get(second.id))!.result as { serial: number; sameJob: boolean };
    expect(a.sameJob).toBe(true);
    expect(b.sameJob).toBe(true);
    expect(a.serial).not.toBe(b.serial);
  });

  it('progress is stored while running and set to 1 on success', async () => {
    const { id } = await jobs.enqueue(SlowReport, { steps: 4, stepMs: 150 });
    const seen = await waitFor('progress between 0 and 1', async () => {
      const job = await jobs.get(id);
      return job && job.progress !== null && job.progress > 0 && job.progress < 1 ? job : null;
    });
    expect(seen.progressMessage).toMatch(/step \d of 4/);
    await until(id, 'succeeded');
    expect((await jobs.get(id))!.progress).toBe(1);
  });

  it('the last progress report before the handler returns is written before its outcome', async () => {
    // The first report is written at once; the throttle holds the others until the attempt ends.
    const { id } = await jobs.enqueue(SlowReport, { steps: 3, stepMs: 5 });
    await until(id, 'succeeded');
    expect(await jobs.get(id)).toMatchObject({ progress: 1, progressMessage: 'step 3 of 3' });
  });
});

describe('cancellation', () => {
  it('cancels a queued job at once', async () => {
    const { id } = await jobs.enqueue(SlowReport, { steps: 1, stepMs: 1 }, { delay: 60_000 });
    await request(app.getHttpServer()).delete(`/jobs/${id}`).expect(202);
    expect(await stateOf(id)).toBe('cancelled');
    await request(app.getHttpServer()).delete(`/jobs/${id}`).expect(400);
  });

  it('cancels a running job: its signal aborts and it ends cancelled', async () => {
    const recorder = app.get(ProbeRecorder);
    const { id } = await jobs.enqueue(UntilAbortedProbe, {});
    await waitFor('the job to start', () => recorder.attempts.get(id)?.length === 1);
    await jobs.cancel(id);
    await until(id, 'cancelled');
    // The signal aborts before the outcome is written: by now the handler has seen it.
    expect(recorder.aborts.get(id)).toBe('JobCancelledError');
    const job = (await jobs.get(id))!;
    expect(job.executions.map((e) => e.state)).toEqual(['cancelled']);
    await expect(jobs.cancel(id)).rejects.toThrow(/already ended "cancelled"/);
    // A cancelled job can be run again, and cancelled again while it runs.
    recorder.aborts.delete(id);
    await jobs.retry(id);
    await waitFor('the job to start again', () => recorder.attempts.get(id)?.length === 2);
    await jobs.cancel(id);
    await until(id, 'cancelled');
    expect(recorder.aborts.get(id)).toBe('JobCancelledError');
  });
});

describe('retention', () => {
  it('prunes succeeded jobs after 7 days and failed ones after 30, measured on the clock', async () => {
    const ok = await jobs.enqueue(FlakySync, { account: 'old' }, { maxAttempts: 1 });
    const bad = await jobs.enqueue(DoomedProbe, { permanent: true });
    await until(bad.id, 'failed');
    const { id: fresh } = await jobs.enqueue(FlakySync, { account: 'fresh' }, { delay: 90 * 86_400_000 });
    await waitFor('the flaky job to fail', async () => (await stateOf(ok.id)) === 'failed');
    const good = await jobs.enqueue(SlowReport, { steps: 1, stepMs: 1 });
    await until(good.id, 'succeeded');
    const retention = app.get(RetentionService);
    clock.advance(6 * 86_400_000);
    await retention.prune();
    expect(await jobs.get(good.id)).not.toBeNull();
    clock.advance(2 * 86_400_000);
    await retention.prune();
    expect(await jobs.get(good.id)).toBeNull();
    expect(await jobs.get(bad.id)).not.toBeNull();
    // A job made long ago that has not finished is never pruned.
    expect(await stateOf(fresh)).not.toBeUndefined();
    clock.advance(23 * 86_400_000);
    await retention.prune();
    expect(await jobs.get(bad.id)).toBeNull();
    expect(await jobs.get(ok.id)).toBeNull();
    expect(await jobs.get(fresh)).not.toBeNull();
    await jobs.cancel(fresh);
  });

  it('prunes the rows of workers stopped or silent for 7 days; a live worker whose row went registers again', async () => {
    const workers = async () => (await sql<{ id: string }>(`SELECT id FROM "${schema}_jobs".worker`)).map((w) => w.id);
    const own = app.get(JobWorker).id;
    const now = clock.now().getTime();
    await sql(
      `INSERT INTO "${schema}_jobs".worker (id, host, pid, queues, concurrency, started_at, last_heartbeat, stopped_at)
       VALUES ('stopped-8d', 'h', 1, '{}', 1, $1, $1, $1), ('silent-8d', 'h', 2, '{}', 1, $1, $1, NULL),
              ('stopped-6d', 'h', 3, '{}', 1, $2, $2, $2)`,
      [new Date(now - 8 * 86_400_000), new Date(now - 6 * 86_400_000)],
    );
    await app.get(RetentionService).prune();
    const left = await workers();
    expect(left).toContain('stopped-6d');
    expect(left).not.toContain('stopped-8d');
    expect(left).not.toContain('silent-8d');
    // A live worker whose row went (a clock that jumped past its last beat): its next beat,
    // every third of the lease, brings the row back.
    await sql(`DELETE FROM "${schema}_jobs".worker WHERE id = $1`, [own]);
    await waitFor('the worker to register again', async () => (await workers()).includes(own));
  });
});

describe('errors at the call site', () => {
  const cases: Array<[string, () => Promise<unknown>, RegExp]> = [
    [
      'a function in the payload',
      () => jobs.enqueue('flaky-sync', { account: 'a', fn: () => 1 } as never),
      /flaky-sync.*not JSON-serialisable at \$\.fn \(a function\)/,
    ],
    ['a BigInt', () => jobs.enqueue(FlakySync, { account: 10n } as never), /flaky-sync.*\$\.account \(a BigInt\)/],
    [
      'a cycle',
      () => {
        const p: Record<string, unknown> = { account: 'a' };
        p.self = p;
        return jobs.enqueue('flaky-sync', p as never);
      },
      /circular reference/,
    ],
    [
      'an oversized payload',
      () => jobs.enqueue(FlakySync, { account: 'x'.repeat(300 * 1024) }),
      /flaky-sync.*over maxPayloadBytes \(262144\)/,
    ],
    ['an unknown job name', () => jobs.enqueue('no-such-job', {}), /Unknown job "no-such-job".*Potential fix/],
    [
      'a negative delay',
      () => jobs.enqueue(FlakySync, { account: 'a' }, { delay: -5 }),
      /flaky-sync.*"delay" must be a number of milliseconds >= 0/,
    ],
    [
      'an invalid date',
      () => jobs.enqueue(FlakySync, { account: 'a' }, { runAt: new Date('nope') }),
      /flaky-sync.*"runAt" must be a valid Date/,
    ],
    ['a class that is not a job', () => jobs.enqueue(Order as never, {}), /Order is not a job handler/],
  ];
  it.each(cases)('%s throws a JobsError and writes nothing', async (_label, call, message) => {
    const before = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}_jobs".job`);
    const error = await call().then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(JobsError);
    expect((error as Error).message).toMatch(message);
    const after = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}_jobs".job`);
    expect(after[0]!.n).toBe(before[0]!.n);
  });

  it('enqueueMany writes all jobs in one statement, or none when one is bad', async () => {
    const before = (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}_jobs".job`))[0]!.n;
    await expect(
      jobs.enqueueMany([
        { job: FlakySync, payload: { account: 'a' }, options: { delay: 60_000 } },
        { job: 'no-such-job', payload: {} },
      ]),
    ).rejects.toThrow(JobsError);
    expect((await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}_jobs".job`))[0]!.n).toBe(before);
    const ids = await jobs.enqueueMany([
      { job: FlakySync, payload: { account: 'a' }, options: { delay: 60_000 } },
      { job: FlakySync, payload: { account: 'b' }, options: { delay: 60_000 } },
    ]);
    expect(ids).toHaveLength(2);
    for (const { id } of ids) expect(await stateOf(id)).toBe('queued');
    for (const { id } of ids) await jobs.cancel(id);
  });
});
