/**
 * The errors the library throws at a caller are JobsErrors naming the thing
 * and the fix, also where they come from below the call-site checks (the
 * environment, the driver, storage). Each is provoked here without a
 * database; the ones that need one are in the e2e files (faults, transactional).
 */
import { writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DataSource } from 'typeorm';
import {
  databaseCall,
  JobsDatabaseError,
  JobsError,
  StorageFailure,
  toDatabaseError,
  type ClaimedJob,
} from '../../lib/model/index.js';
import { startEmbeddedPostgres } from '../../lib/storage/embedded/embedded-postgres.js';
import { JobsConnection } from '../../lib/storage/connection/jobs-connection.js';
import { resolveTimeouts } from '../../lib/storage/sql/timeouts.js';
import { pgPoolOf } from '../../lib/storage/sql/pg-driver.js';
import { jobContext, type ContextHost } from '../../lib/worker/attempt-context.js';
import type { RunnerDeps } from '../../lib/worker/runner-deps.js';

describe('a database failure below a public call', () => {
  it('is a JobsDatabaseError on its own, its reason the cause', () => {
    const failure = new StorageFailure('no database connection within 10 ms (timeouts.connect)');
    expect(failure).toBeInstanceOf(JobsDatabaseError);
    expect(failure).toBeInstanceOf(JobsError);
    expect(failure.name).toBe('JobsDatabaseError');
    expect(failure.message).toMatch(
      /^The jobs database: the database call failed \(no database connection within 10 ms \(timeouts\.connect\)\)\. Potential fix: /,
    );
    expect((failure.cause as Error).message).toBe('no database connection within 10 ms (timeouts.connect)');
  });

  it('takes the name of the public call it reaches', async () => {
    const failure = new StorageFailure('the keys kept changing hands');
    const error = await databaseCall('enqueue(SendReceipt)', () => Promise.reject(failure)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobsDatabaseError);
    expect((error as Error).message).toMatch(
      /^enqueue\(SendReceipt\): the database call failed \(the keys kept changing hands\)\. Potential fix: /,
    );
    expect((error as Error).cause).toBe(failure.cause);
  });

  it('leaves any other JobsError as it is, and wraps what the driver threw', () => {
    const misuse = new JobsError('enqueue(X): bad. Potential fix: a good one.');
    expect(toDatabaseError('enqueue(X)', misuse)).toBe(misuse);
    const driver = Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
    const wrapped = toDatabaseError('JobsAdmin.purge()', driver);
    expect(wrapped).toBeInstanceOf(JobsDatabaseError);
    expect(wrapped.message).toMatch(/^JobsAdmin\.purge\(\): the database call failed \(Connection terminated/);
    expect(wrapped.cause).toBe(driver);
  });
});

describe('pgPoolOf', () => {
  it('refuses a DataSource without a pg pool with a JobsError naming its state and the fix', () => {
    const dataSource = new DataSource({ type: 'postgres', url: 'postgres://nobody@127.0.0.1:1/none' });
    expect(() => pgPoolOf(dataSource)).toThrow(JobsError);
    expect(() => pgPoolOf(dataSource)).toThrow(
      /the DataSource \(type "postgres", not initialized\) has no pg pool\. Potential fix: pass an initialized DataSource/,
    );
  });
});

describe('JobsConnection.open', () => {
  it('fails the start on a server that refuses the connection with a JobsDatabaseError, the driver error its cause', async () => {
    // Port 1: nothing listens there, so the refusal is immediate.
    const error = await JobsConnection.open({
      connection: 'postgres://nobody@127.0.0.1:1/none',
      schema: 'jobs',
      migrationsRun: false,
      timeouts: resolveTimeouts({ connect: 2_000 }),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobsDatabaseError);
    expect((error as Error).message).toMatch(
      /^JobsModule: connecting to PostgreSQL: the database call failed \(.*ECONNREFUSED.*\)\. Potential fix: check that PostgreSQL is reachable/,
    );
    expect((error as Error).cause).toMatchObject({ code: 'ECONNREFUSED' });
  });
});

describe('startEmbeddedPostgres', () => {
  let root: string;
  beforeAll(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'jobs-errors-'));
  });
  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('refuses a dataDir it cannot create with a JobsError naming the folder and the fix, the cause kept', async () => {
    const file = path.join(root, 'a-file');
    writeFileSync(file, 'not a folder');
    const dataDir = path.join(file, 'data');
    const error = await startEmbeddedPostgres({ dataDir, logger: { log: () => undefined } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobsError);
    expect((error as Error).message).toContain(`The embedded PostgreSQL in ${dataDir} did not start: `);
    expect((error as Error).message).toMatch(/Potential fix: let this process create and write .*pass another dataDir/);
    expect((error as Error).cause).toMatchObject({ code: 'ENOTDIR' });
  });
});

describe('ctx.progress()', () => {
  const job = { id: '0193a1b2-1a2b-7c3d-8e4f-5a6b7c8d9e0f', name: 'import-file', queue: 'default' } as ClaimedJob;
  // Refusals come before anything is recorded: deps is never reached.
  const host = { job, deps: {} as RunnerDeps, hasEnded: false } as ContextHost;

  it.each([[1.5], [-0.1], [Number.NaN], ['0.5']])(
    'refuses %p with a JobsError naming the job and the fix',
    async (value) => {
      const ctx = jobContext(host);
      const refused = ctx.progress(value as number);
      await expect(refused).rejects.toThrow(JobsError);
      await expect(refused).rejects.toThrow(
        /^ctx\.progress\(\) in job "import-file" \(0193a1b2-[^)]+\): progress is a fraction from 0 to 1, got .*Potential fix: ctx\.progress\(done \/ total\)/,
      );
    },
  );
});
