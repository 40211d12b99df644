import type { INestApplication } from '@nestjs/common';
import { workerStorage } from '../../support/job-storage.js';
import { JobQueue } from 'nestjs-durable-jobs';
import { type ClaimRequest } from '../../../lib/storage/jobs/claim/claim-storage.interface.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { flowProviders, Work } from '../../support/flow.jobs.js';
import { startJobsApp } from '../../support/jobs-app.js';

/**
 * The grouped claim itself, read off the storage: which groups a claim
 * serves and in what order. A claim of up to 20 jobs takes one job of each
 * group in rotation; a larger one takes up to four of each of a quarter as
 * many groups; the queue's jobs of no group take their turns as one more
 * group; and a group holding more than its share of the queue's running
 * jobs comes last.
 */
let app: INestApplication | undefined;
const schema = uniqueSchema('fcgclaim');

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema);
});

it('serves the groups in rotation, one job a group for a small claim and up to four for a large one', async () => {
  app = await startJobsApp(schema, { worker: { enabled: false } }, { providers: flowProviders(schema) });
  const storage = workerStorage(app);
  const groups = Array.from({ length: 30 }, (_, g) => `g${String(g).padStart(2, '0')}`);
  await app
    .get(JobQueue)
    .enqueueMany([
      ...groups.flatMap((group) =>
        Array.from({ length: 5 }, () => ({ job: Work, payload: {}, options: { queue: 'tenants', group } })),
      ),
      ...Array.from({ length: 5 }, () => ({ job: Work, payload: {}, options: { queue: 'tenants' } })),
    ]);
  const groupOf = new Map(
    (await sql<{ id: string; g: string | null }>(`SELECT id, group_key AS g FROM "${schema}".job`)).map((r) => [
      r.id,
      r.g ?? '-',
    ]),
  );
  const claim = async (limit: number): Promise<string[]> => {
    const request: ClaimRequest = {
      workerId: 'w',
      queue: 'tenants',
      names: ['fc-work'],
      limit,
      now: new Date(),
      leaseMs: 30_000,
    };
    const { jobs } = await storage.claims.claimControlled(request);
    return jobs.map((j) => groupOf.get(j.id)!);
  };

  // Ten: the plain jobs' turn, then one job of each of the first nine groups.
  expect(await claim(10)).toEqual(['-', ...groups.slice(0, 9)]);
  // Forty: twenty groups from where the rotation stood, two jobs each, turn by turn.
  const forty = await claim(40);
  const next20 = groups.slice(9, 29);
  expect(forty).toEqual(['-', ...next20, '-', ...next20.slice(0, 18)]);
  // The next claim goes on after the last group served (g26): g27 and g28, which got one job where the
  // groups before them got two, come first, and the rotation wraps around to g00.
  expect(await claim(5)).toEqual(['-', 'g27', 'g28', 'g29', 'g00']);

  // A group holding at least two running jobs and more than half of the queue's comes after the
  // others: g01, next in the rotation, holds both of the queue's running jobs.
  await sql(`UPDATE "${schema}".job SET state = 'succeeded', lease_expires_at = NULL WHERE state = 'active'`);
  await sql(
    `UPDATE "${schema}".job SET state = 'active', worker_id = 'w', lease_expires_at = now() + interval '1 minute'
      WHERE id IN (SELECT id FROM "${schema}".job WHERE group_key = 'g01' AND state = 'queued' LIMIT 2)`,
  );
  expect(await claim(8)).toEqual(['-', ...groups.slice(2, 9)]);
});
