import type { INestApplication } from '@nestjs/common';
import { JobQueue } from 'nestjs-durable-jobs';
import type { ClaimRequest } from '../../../lib/storage/jobs/claim/claim-storage.interface.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { flowProviders, Work } from '../../support/flow.jobs.js';
import { workerStorage } from '../../support/job-storage.js';
import { startJobsApp } from '../../support/jobs-app.js';

/**
 * The claims return each job's due time as ms since the epoch rather than a
 * timestamptz; the worker makes the Date its start observers read
 * (`AttemptStarted.job.runAt`, the metrics' start wait). Both claims must
 * give the row's run_at to the millisecond.
 */
let app: INestApplication | undefined;
const schema = uniqueSchema('claimdue');

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema);
});

beforeAll(async () => {
  app = await startJobsApp(schema, { worker: { enabled: false } }, { providers: flowProviders(schema) });
});

async function enqueueDue(queue: string, runAt: Date, group?: string): Promise<string> {
  const { id } = await app!.get(JobQueue).enqueue(Work, {}, { queue, runAt, group });
  return id;
}

function request(queue: string): ClaimRequest {
  return { workerId: 'w', queue, names: ['fc-work'], limit: 5, now: new Date(), leaseMs: 30_000 };
}

/** The row's run_at as the database holds it, to the millisecond. */
async function storedRunAt(id: string): Promise<number> {
  const [row] = await sql<{ ms: string }>(
    `SELECT floor(date_part('epoch', run_at) * 1000)::bigint AS ms FROM "${schema}".job WHERE id = $1`,
    [id],
  );
  return Number(row!.ms);
}

it('gives a job claimed by the plain claim its run_at as a Date, to the millisecond', async () => {
  const due = new Date(Date.now() - 86_400_000 - 123);
  const id = await enqueueDue('due-plain', due);
  const [job] = await workerStorage(app!).claims.claim(request('due-plain'));
  expect(job!.id).toBe(id);
  expect(job!.runAt).toBeInstanceOf(Date);
  expect(job!.runAt!.getTime()).toBe(due.getTime());
  expect(job!.runAt!.getTime()).toBe(await storedRunAt(id));
});

it('gives a job claimed by the controlled claim its run_at as a Date, to the millisecond', async () => {
  const due = new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678));
  // A job of a group: its queue is claimed by the controlled claim.
  const id = await enqueueDue('due-controlled', due, 'tenant-1');
  const { jobs } = await workerStorage(app!).claims.claimControlled(request('due-controlled'));
  expect(jobs.map((j) => j.id)).toEqual([id]);
  expect(jobs[0]!.runAt).toBeInstanceOf(Date);
  expect(jobs[0]!.runAt!.toISOString()).toBe('2026-01-02T03:04:05.678Z');
  expect(jobs[0]!.runAt!.getTime()).toBe(await storedRunAt(id));
});
