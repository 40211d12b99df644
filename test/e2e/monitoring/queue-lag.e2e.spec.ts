import type { INestApplication } from '@nestjs/common';
import { Job, JobQueue, JobsError, JobsMonitor, type JobHandler } from 'nestjs-durable-jobs';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';

@Job('lag-first', { queue: 'lag-a' })
class LagFirst implements JobHandler<{ i: number }> {
  run() {}
}

@Job('lag-second', { queue: 'lag-b' })
class LagSecond implements JobHandler<{ i: number }> {
  run() {}
}

@Job('lag-idle', { queue: 'lag-c' })
class LagIdle implements JobHandler<{ i: number }> {
  run() {}
}

const schema = uniqueSchema('queuelag');
let app: INestApplication;
let monitor: JobsMonitor;
let jobs: JobQueue;

describe('JobsMonitor.queueLag()', () => {
  beforeAll(async () => {
    // No worker: what is enqueued stays queued, so the backlog is exactly what the test wrote.
    app = await startJobsApp(schema, { worker: { enabled: false } }, { providers: [LagFirst, LagSecond, LagIdle] });
    monitor = app.get(JobsMonitor);
    jobs = app.get(JobQueue);
  });

  afterAll(async () => {
    await app?.close();
    await dropSchemas(schema);
  });

  it('lists no queue while nothing is due', async () => {
    await jobs.enqueue(LagIdle, { i: 0 }, { delay: 3_600_000 });
    expect(await monitor.queueLag()).toEqual([]);
  });

  it('counts each queue’s due jobs and dates its oldest, leaving out jobs due later and waiting ones', async () => {
    const a = [];
    for (let i = 0; i < 3; i++) a.push((await jobs.enqueue(LagFirst, { i })).id);
    const b = (await jobs.enqueue(LagSecond, { i: 0 })).id;
    // A job waiting on a parent is not due, whatever its run_at.
    await jobs.enqueue(LagSecond, { i: 1 }, { after: [{ job: b }] });
    await jobs.enqueue(LagSecond, { i: 2 }, { delay: 3_600_000 });
    const oldestA = new Date('2020-01-01T00:00:00Z');
    const oldestB = new Date('2021-06-01T12:00:00Z');
    await sql(`UPDATE "${schema}".job SET run_at = $2 WHERE id = $1`, [a[1], oldestA]);
    await sql(`UPDATE "${schema}".job SET run_at = $2 WHERE id = $1`, [b, oldestB]);

    expect(await monitor.queueLag()).toEqual([
      { queue: 'lag-a', due: 3, oldestDueAt: oldestA },
      { queue: 'lag-b', due: 1, oldestDueAt: oldestB },
    ]);
    expect(await monitor.queueLag({ fromPrimary: true })).toEqual(await monitor.queueLag());
  });

  it('stops counting a job once it is no longer queued', async () => {
    const [row] = await sql<{ id: string }>(
      `SELECT id FROM "${schema}".job WHERE queue = 'lag-b' AND state = 'queued' AND run_at < now()`,
    );
    await jobs.cancel(row!.id);
    expect((await monitor.queueLag()).map((l) => l.queue)).toEqual(['lag-a']);
  });

  it('rejects an unknown option with a JobsError naming it', async () => {
    await expect(monitor.queueLag({ fromPrimry: true } as never)).rejects.toThrow(JobsError);
    await expect(monitor.queueLag({ fromPrimary: 'yes' } as never)).rejects.toThrow(
      /"fromPrimary" must be true or false/,
    );
  });
});
