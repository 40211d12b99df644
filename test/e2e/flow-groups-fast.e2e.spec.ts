import { Injectable, type INestApplication } from '@nestjs/common';
import { Job, JobQueue, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { dropSchemas, uniqueSchema } from '../support/database.js';
import { startJobsApp } from '../support/jobs-app.js';
import { waitFor } from '../support/wait.js';

/**
 * Groups on one busy instance with jobs that take no time: the worker claims
 * a grouped queue's jobs ahead of its slots in batches (the fewer, larger
 * claims a fast queue needs), and a tenant arriving behind another's backlog
 * must still not wait behind what that worker holds. Holding as much of a
 * grouped queue as of a plain one (100 ms of work), 700-900 of the first
 * tenant's jobs ran first here; holding 30 ms, about 290.
 */
@Injectable()
class Starts {
  /** Each run's tenant, in the order the runs started. */
  readonly tags: string[] = [];
  count(tag: string): number {
    return this.tags.filter((t) => t === tag).length;
  }
}

@Job('gt-fast', { maxAttempts: 1 })
class Fast implements JobHandler<{ tag: string }> {
  constructor(private readonly starts: Starts) {}
  run(p: { tag: string }, _ctx: JobContext): void {
    this.starts.tags.push(p.tag);
  }
}

let app: INestApplication | undefined;
const schema = uniqueSchema('gfast');

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema);
});

it("serve a tenant arriving behind another's backlog of fast jobs within 200 of the other's", async () => {
  app = await startJobsApp(schema, { worker: { concurrency: 10, pollInterval: 100 } }, { providers: [Starts, Fast] });
  const jobs = app.get(JobQueue);
  const starts = app.get(Starts);
  await jobs.enqueueMany(
    Array.from({ length: 30_000 }, () => ({
      job: Fast,
      payload: { tag: 'A' },
      options: { queue: 'busy', group: 'A' },
    })),
  );
  // Long enough under way for the worker to have measured its rate and claimed ahead by it.
  await waitFor('tenant A to be well under way', () => starts.tags.length >= 3_000);
  const mark = starts.tags.length;
  await jobs.enqueueMany(
    Array.from({ length: 20 }, () => ({ job: Fast, payload: { tag: 'B' }, options: { queue: 'busy', group: 'B' } })),
  );
  await waitFor("tenant B's 20 jobs to run", () => starts.count('B') === 20);
  const lastB = starts.tags.lastIndexOf('B');
  const aMeanwhile = starts.tags.slice(mark, lastB).filter((t) => t === 'A').length;
  // Tenant A had not run out: the worker held and claimed its jobs throughout.
  expect(starts.count('A')).toBeLessThan(30_000);
  expect(aMeanwhile).toBeLessThan(200);
});
