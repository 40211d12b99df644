import { BatchBuilder, Job, JobQueue, JobsMonitor, type JobHandler, type JobsModuleOptions } from 'nestjs-durable-jobs';
import { sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';
import { appFixture } from '../../support/app-fixture.js';

@Job('uh-known', { queue: 'uh-a' })
class Known implements JobHandler<null> {
  run() {}
}

@Job('uh-gone', { queue: 'uh-a' })
class Gone implements JobHandler<null> {
  run() {}
}

@Job('uh-elsewhere', { queue: 'uh-b' })
class Elsewhere implements JobHandler<null> {
  run() {}
}

@Job('uh-legacy', { queue: 'uh-c' })
class Legacy implements JobHandler<null> {
  run() {}
}

const ALL = [Known, Gone, Elsewhere, Legacy];
const { apps, schemas } = appFixture({ closeApps: 'each' });

async function boot(schema: string, options: Partial<JobsModuleOptions>, providers = ALL) {
  const app = await startJobsApp(schema, options, { providers });
  apps.push(app);
  return app;
}

function newSchema(): string {
  const schema = uniqueSchema('unhandled');
  schemas.push(schema);
  return schema;
}

const HOUR = 3_600_000;

describe('jobs no live worker handles', () => {
  it('a worker records its service and the job names it handles', async () => {
    const schema = newSchema();
    await boot(schema, { service: 'billing', worker: { queues: ['uh-a', 'uh-b'] } }, [Known, Elsewhere]);
    const rows = await sql<{ service: string; job_names: string[]; queues: string[] }>(
      `SELECT service, job_names, queues FROM "${schema}".worker`,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.service).toBe('billing');
    expect([...rows[0]!.job_names].sort()).toEqual(['uh-elsewhere', 'uh-known']);
    expect(rows[0]!.queues).toEqual(['uh-a', 'uh-b']);
  });

  it('reports due jobs whose name no live worker handles in their queue, by queue and name', async () => {
    const schema = newSchema();
    // The worker handles uh-known and uh-elsewhere, but serves only uh-a: uh-elsewhere's queue is uh-b.
    await boot(schema, { worker: { queues: ['uh-a'], pollInterval: 100 } }, [Known, Elsewhere]);
    const api = await boot(schema, { worker: { enabled: false } });
    const jobs = api.get(JobQueue);
    const monitor = api.get(JobsMonitor);
    expect(await monitor.unhandledJobs()).toEqual([]);

    const gone = [(await jobs.enqueue(Gone, null)).id, (await jobs.enqueue(Gone, null)).id];
    await jobs.enqueue(Elsewhere, null);
    const known = (await jobs.enqueue(Known, null)).id;
    // Not due: for later, or waiting on a parent.
    await jobs.enqueue(Gone, null, { delay: HOUR });
    await jobs.enqueue(Gone, null, { after: [{ job: gone[0]! }] });
    const oldest = new Date('2024-03-01T00:00:00Z');
    await sql(`UPDATE "${schema}".job SET run_at = $2 WHERE id = $1`, [gone[1], oldest]);

    await waitFor('the handled job to run', async () => (await jobs.get(known))?.state === 'succeeded');
    expect(await monitor.unhandledJobs()).toEqual([
      { name: 'uh-gone', queue: 'uh-a', due: 2, oldestDueAt: oldest },
      { name: 'uh-elsewhere', queue: 'uh-b', due: 1, oldestDueAt: expect.any(Date) },
    ]);
    expect(await monitor.unhandledJobs({ fromPrimary: true })).toHaveLength(2);
  });

  it('a stopped worker no longer handles its names; a live worker of a build without job names handles every name', async () => {
    const schema = newSchema();
    const worker = await boot(schema, { worker: { queues: ['uh-a'], pollInterval: 100 } }, [Known]);
    const api = await boot(schema, { worker: { enabled: false } });
    const jobs = api.get(JobQueue);
    const monitor = api.get(JobsMonitor);
    await worker.close();

    await jobs.enqueue(Known, null);
    await jobs.enqueue(Legacy, null);
    expect((await monitor.unhandledJobs()).map((u) => u.name)).toEqual(['uh-known', 'uh-legacy']);

    // What a worker of a build from before schema version 4 writes: no job_names; it serves uh-c.
    await sql(
      `INSERT INTO "${schema}".worker (id, host, pid, queues, concurrency, started_at, last_heartbeat)
       VALUES ('old-build:1:000000', 'old-build', 1, '{uh-c}', 1, now(), now())`,
    );
    expect((await monitor.unhandledJobs()).map((u) => u.name)).toEqual(['uh-known']);
  });

  it('unhandledJobs.failAfter fails them for good with an UnhandledJobError, settling their dependents and batches', async () => {
    const schema = newSchema();
    const api = await boot(schema, { worker: { enabled: false } });
    const jobs = api.get(JobQueue);
    const lone = (await jobs.enqueue(Gone, null)).id;
    const child = (await jobs.enqueue(Known, null, { after: [{ job: lone }] })).id;
    const { id: batch } = await api.get(BatchBuilder).create('uh-batch').add(Gone, null).dispatch();
    const fresh = (await jobs.enqueue(Gone, null)).id;
    // Due for two hours, except `fresh`, due just now.
    await sql(`UPDATE "${schema}".job SET run_at = now() - interval '2 hours' WHERE name = 'uh-gone' AND id <> $1`, [
      fresh,
    ]);

    const worker = await boot(
      schema,
      { unhandledJobs: { failAfter: HOUR }, worker: { lease: 1_000, pollInterval: 100 } },
      [Known],
    );
    await waitFor('the unhandled job to fail', async () => (await jobs.get(lone))?.state === 'failed');
    const failed = (await jobs.get(lone))!;
    expect(failed.lastError?.name).toBe('UnhandledJobError');
    expect(failed.lastError?.message).toMatch(
      /no live worker handles job name "uh-gone" in queue "uh-a".*unhandledJobs\.failAfter \(3600000 ms\).*deploy a worker whose app registers @Job\('uh-gone'\)/,
    );
    expect(failed.attempt).toBe(0);
    await waitFor('its dependent to settle', async () => (await jobs.get(child))?.state === 'skipped');
    await waitFor('its batch to fail', async () => (await jobs.batchStatus(batch))?.state === 'failed');
    // Due for less than failAfter: it waits on.
    expect((await jobs.get(fresh))?.state).toBe('queued');
    expect((await worker.get(JobsMonitor).unhandledJobs()).map((u) => [u.name, u.due])).toEqual([['uh-gone', 1]]);
  });
});
