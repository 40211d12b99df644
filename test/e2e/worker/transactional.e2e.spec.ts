import { Module, type INestApplication, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { BatchBuilder, JobEvents, JobQueue, JobsError, type JobEvent } from 'nestjs-durable-jobs';
import {
  JobsTester,
  JobsTestingModule,
  type AttemptReport,
  type JobsTestingOptions,
} from 'nestjs-durable-jobs/testing';
import { STEP_STORAGE, type StepStorage } from '../../../lib/storage/jobs/step-storage.interface.js';
import { dropSchemas, jobsConnection, sql, takeLeaseAway, uniqueSchema } from '../../support/database.js';
import { Invoice, INVOICE_TABLE, Invoicing, Reserving, TxLog } from '../../support/tx.jobs.js';

const LEASE = 30_000;
const outcomes = (reports: AttemptReport[]) => reports.map((r) => r.outcome);

/** Error lines the app logged, so that a test can read what the library said. */
class Captured implements LoggerService {
  readonly errors: string[] = [];
  log(): void {}
  warn(): void {}
  debug(): void {}
  verbose(): void {}
  error(message: unknown): void {
    this.errors.push(String(message));
  }
}

interface TxApp {
  app: INestApplication;
  tester: JobsTester;
  jobs: JobQueue;
  log: TxLog;
  logged: Captured;
  events: JobEvent[];
}

async function startTxApp(options: Omit<JobsTestingOptions, 'schema'>): Promise<TxApp> {
  @Module({ providers: [TxLog, Invoicing, Reserving] })
  class Own {}
  const ref = await Test.createTestingModule({
    imports: [
      JobsTestingModule.forRootAsync({
        useFactory: () => ({ unregisteredJobs: 'ignore' as const, worker: { lease: LEASE }, ...options }),
      }),
      Own,
    ],
  }).compile();
  const logged = new Captured();
  const app = ref.createNestApplication({ logger: logged });
  await app.init();
  const events: JobEvent[] = [];
  app.get(JobEvents).on(['succeeded', 'stalled', 'retrying', 'cancelled'], (e) => void events.push(e));
  return { app, tester: app.get(JobsTester), jobs: app.get(JobQueue), log: app.get(TxLog), logged, events };
}

const fx = uniqueSchema('txfx');
let dataSource: DataSource;
let shared: TxApp;

/** The invoice rows of a job (or of all jobs), as `order@attempt`. */
async function invoices(jobId?: string): Promise<string[]> {
  const rows = await sql<{ order_id: string; attempt: number }>(
    `SELECT order_id, attempt FROM "${fx}".invoice ${jobId ? 'WHERE job_id = $1' : ''} ORDER BY id`,
    jobId ? [jobId] : [],
  );
  return rows.map((r) => `${r.order_id}@${r.attempt}`);
}

beforeAll(async () => {
  await sql(`CREATE SCHEMA "${fx}"`);
  await sql(INVOICE_TABLE(fx));
  // The app's own DataSource, with its entity; the jobs module shares it (the "dataSource" option).
  const { connection, ...pooler } = jobsConnection();
  dataSource = await new DataSource({
    type: 'postgres',
    url: connection,
    schema: fx,
    entities: [Invoice],
  }).initialize();
  shared = await startTxApp({ dataSource, ...pooler });
});

afterAll(async () => {
  await shared?.app.close();
  await dataSource?.destroy();
  await dropSchemas(fx);
});

describe('ctx.transaction() on the DataSource the app shares', () => {
  it("writes the handler's rows and the job's success in one commit, and the worker writes no outcome of its own", async () => {
    const { jobs, tester, events } = shared;
    expect(shared.app.get<StepStorage>(STEP_STORAGE).handlerTransactions).toBe('shared');
    const { id } = await jobs.enqueue(Invoicing, { order: 'plain' });
    const [report] = await tester.drain();
    expect(report).toMatchObject({ outcome: 'succeeded', result: { invoiced: 'plain' } });
    const job = await jobs.get(id);
    expect(job).toMatchObject({ state: 'succeeded', result: { invoiced: 'plain' } });
    expect(job!.executions.map((e) => [e.attempt, e.state])).toEqual([[1, 'succeeded']]);
    expect(await invoices(id)).toEqual(['plain@1']);
    // Events as for any success; a second write of the outcome would have been refused and heard as a stall.
    expect(events.filter((e) => e.job.id === id).map((e) => e.event)).toEqual(['succeeded']);
  });

  it('a progress report still pending lands before the transaction, and the success sets the progress to 1', async () => {
    const { jobs, tester } = shared;
    const { id } = await jobs.enqueue(Invoicing, { order: 'progress', mode: 'progress' });
    expect(outcomes(await tester.drain())).toEqual(['succeeded']);
    expect(await jobs.get(id)).toMatchObject({ state: 'succeeded', progress: 1, progressMessage: 'second' });
  });

  it('an error in the transaction rolls its writes back and fails the attempt as usual; the retry commits once', async () => {
    const { jobs, tester } = shared;
    const { id } = await jobs.enqueue(Invoicing, { order: 'throws', mode: 'throws-once' });
    const [first] = await tester.drain();
    expect(first).toMatchObject({ outcome: 'retry', error: { message: 'tax service down' } });
    expect(await invoices(id)).toEqual([]);
    await tester.advance(1_000);
    expect(outcomes(await tester.drain())).toEqual(['succeeded']);
    expect(await invoices(id)).toEqual(['throws@2']);
  });

  it('a lost fence: another worker took the job while the transaction ran, so its writes roll back and the attempt ends lost', async () => {
    const { jobs, tester, log, events } = shared;
    const { id } = await jobs.enqueue(Invoicing, { order: 'stolen', mode: 'gate' });
    const reached = log.reached('stolen');
    const drained = tester.drain();
    await reached;
    await takeLeaseAway(tester.schema, id);
    log.open('stolen');
    const reports = await drained;
    // Attempt 1 wrote nothing: its insert rolled back with the refused success. The job was queued,
    // so the same drain claimed it again, and attempt 2 committed.
    expect(reports.map((r) => [r.attempt, r.outcome])).toEqual([
      [1, 'lost'],
      [2, 'succeeded'],
    ]);
    expect(await invoices(id)).toEqual(['stolen@2']);
    expect(events.filter((e) => e.job.id === id).map((e) => [e.event, e.job.attempt])).toEqual([
      ['stalled', 1],
      ['succeeded', 2],
    ]);
  });

  it('its connection dies before the success is written: nothing commits outside the transaction, and the retry writes both', async () => {
    const { jobs, tester, log } = shared;
    const { id } = await jobs.enqueue(Invoicing, { order: 'severed', mode: 'connection-dies' });
    const reached = log.reached('severed');
    const drained = tester.drain();
    await reached;
    await sql('SELECT pg_terminate_backend($1)', [log.pids.get('severed')]);
    log.open('severed');
    const [first] = await drained;
    expect(first).toMatchObject({
      outcome: 'retry',
      error: { message: expect.stringMatching(/transaction has ended .*nothing was written outside it/) },
    });
    expect((await jobs.get(id))!.state).toBe('queued');
    expect(await invoices(id)).toEqual([]);
    await tester.advance(1_000);
    expect(outcomes(await tester.drain())).toEqual(['succeeded']);
    expect(await invoices(id)).toEqual(['severed@2']);
  });

  it('a cancel while the transaction runs: no success is written, its rows roll back, the job ends cancelled', async () => {
    const { jobs, tester, log } = shared;
    const { id } = await jobs.enqueue(Invoicing, { order: 'cancelled', mode: 'gate' });
    const reached = log.reached('cancelled');
    const drained = tester.drain();
    await reached;
    await jobs.cancel(id);
    log.open('cancelled');
    expect(outcomes(await drained)).toEqual(['cancelled']);
    expect((await jobs.get(id))!.state).toBe('cancelled');
    expect(await invoices(id)).toEqual([]);
  });

  it('a second ctx.transaction() is refused before any write; an error after the commit is logged and the success stands', async () => {
    const { jobs, tester, log, logged } = shared;
    const twice = await jobs.enqueue(Invoicing, { order: 'twice', mode: 'twice' });
    const after = await jobs.enqueue(Invoicing, { order: 'after', mode: 'throws-after' });
    expect(outcomes(await tester.drain())).toEqual(['succeeded', 'succeeded']);
    const refused = log.caught.get('twice')!;
    expect(refused).toBeInstanceOf(JobsError);
    expect(refused.message).toMatch(
      /ctx\.transaction\(\) in job "tx-invoice" \(\S+\) was called a second time in one attempt\. The first one committed the job's success.*Nothing was written by this call\. Potential fix/,
    );
    expect(await invoices(twice.id)).toEqual(['twice@1']);
    expect((await jobs.get(after.id))!).toMatchObject({ state: 'succeeded', result: { invoiced: 'after' } });
    expect(await invoices(after.id)).toEqual(['after@1']);
    expect(logged.errors).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `Job "tx-invoice" \\(${after.id}\\): the handler threw after ctx\\.transaction\\(\\) had committed the job's success \\(the receipt mailer is down\\)\\. The job stays succeeded`,
        ),
      ),
    );
  });

  it('continuations staged before it are written with the success; one staged after it is refused', async () => {
    const { jobs, tester, log } = shared;
    const parent = await jobs.enqueue(Invoicing, { order: 'parent', mode: 'continue' });
    const late = await jobs.enqueue(Invoicing, { order: 'late', mode: 'continue-after' });
    expect(outcomes(await tester.drain())).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(await invoices()).toEqual(expect.arrayContaining(['parent@1', 'parent-next@1', 'late@1']));
    expect(await invoices()).not.toContain('late-late@1');
    expect(log.caught.get('late')!.message).toMatch(
      /ctx\.continueWith\(\) in job "tx-invoice" \(\S+\): ctx\.transaction\(\) has written this job's success already/,
    );
    const detail = await jobs.get(parent.id);
    expect(detail!.state).toBe('succeeded');
    expect((await jobs.get(late.id))!.state).toBe('succeeded');
  });

  it('in a batch: the members commit their success with their rows, and the batch settles and runs its then job', async () => {
    const { tester, app } = shared;
    const { id: batchId } = await app
      .get(BatchBuilder)
      .create('invoices')
      .add(Invoicing, { order: 'b1' })
      .add(Invoicing, { order: 'b2' })
      .then(Invoicing, { order: 'b-then' })
      .dispatch();
    expect(outcomes(await tester.drain())).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(await shared.jobs.batchStatus(batchId)).toMatchObject({ state: 'succeeded', succeeded: 2, pending: 0 });
    expect(await invoices()).toEqual(expect.arrayContaining(['b1@1', 'b2@1', 'b-then@1']));
  });

  it('a transactional step: its rows and its record commit together, so a crash before its record rolls the rows back', async () => {
    const { jobs, tester, log } = shared;
    tester.dieAfterStep(Reserving, 'reserve');
    const { id } = await jobs.enqueue(Reserving, { order: 'res' });
    expect(outcomes(await tester.drain())).toEqual(['died']);
    expect(await invoices(id)).toEqual([]);
    expect((await jobs.get(id))!.steps).toEqual([]);
    await tester.advance(LEASE + 1);
    expect(outcomes(await tester.drain())).toEqual(['succeeded']);
    expect(log.calls.filter((c) => c.startsWith('res:'))).toEqual(['res:reserve#1', 'res:reserve#2']);
    expect(await invoices(id)).toEqual(['res:reserve@2']);
    expect((await jobs.get(id))!.steps.map((s) => [s.name, s.attempt])).toEqual([['reserve', 2]]);
  });

  it('a transactional step inside ctx.transaction() joins it and rolls back with it; the steps before it stay done', async () => {
    const { jobs, tester, log } = shared;
    const { id } = await jobs.enqueue(Reserving, { order: 'join', joined: true });
    expect(outcomes(await tester.drain())).toEqual(['retry']);
    expect(await invoices(id)).toEqual(['join:reserve@1']);
    expect((await jobs.get(id))!.steps.map((s) => s.name)).toEqual(['reserve']);
    await tester.advance(1_000);
    expect(outcomes(await tester.drain())).toEqual(['succeeded']);
    expect(log.calls.filter((c) => c.startsWith('join:'))).toEqual([
      'join:reserve#1',
      'join:ledger#1',
      'join:ledger#2',
    ]);
    expect(log.managers.get('join#1')).toBe(true);
    expect(await invoices(id)).toEqual(['join:reserve@1', 'join:ledger@2', 'join:final@2']);
    const job = await jobs.get(id);
    expect(job!.steps.map((s) => [s.name, s.attempt])).toEqual([
      ['reserve', 1],
      ['ledger', 2],
    ]);
    expect(job!.result).toBe('booked');
  });
});

describe('ctx.transaction() without a shared DataSource', () => {
  it("gives a manager on the module's own connection", async () => {
    const own = await startTxApp(jobsConnection());
    try {
      expect(own.app.get<StepStorage>(STEP_STORAGE).handlerTransactions).toBe('own');
      const { id } = await own.jobs.enqueue(Invoicing, { order: 'own', mode: 'raw', table: `"${fx}".invoice` });
      expect(outcomes(await own.tester.drain())).toEqual(['succeeded']);
      expect(await invoices(id)).toEqual(['own@1']);
      expect((await own.jobs.get(id))!.result).toEqual({ invoiced: 'own' });
    } finally {
      await own.app.close();
    }
  });
});
