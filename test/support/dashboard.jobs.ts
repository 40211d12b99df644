import type { INestApplication } from '@nestjs/common';
import {
  BatchBuilder,
  Job,
  JobQueue,
  PermanentJobError,
  RecurringSchedules,
  type JobContext,
  type JobHandler,
} from 'nestjs-durable-jobs';
import { waitFor } from './wait.js';

/** Markup that would run if the page ever put a value in as HTML. */
export const HOSTILE = '<img src=x onerror="window.pwned = true">';

/** Whether Fragile jobs fail: they do until a test says otherwise, so a retry can succeed. */
export const fragile = { failing: true };

/** Fails for good (its message carries markup) while `fragile.failing`; succeeds once it is cleared. */
@Job('dash-fragile', { queue: 'dash-ops', maxAttempts: 1 })
export class Fragile implements JobHandler<{ note: string }> {
  run(payload: { note: string }): { ok: true; note: string } {
    if (fragile.failing) throw new PermanentJobError(`${HOSTILE} broke on ${payload.note.length} characters`);
    return { ok: true, note: payload.note };
  }
}

/** A step of a batch or flow; reports progress and succeeds. */
@Job('dash-step', { queue: 'dash-flow', maxAttempts: 2 })
export class Step implements JobHandler<{ n: number }> {
  async run({ n }: { n: number }, ctx: JobContext): Promise<number> {
    await ctx.progress(1, `step ${n} done`);
    return n * 2;
  }
}

/** What a batch's callbacks run. */
@Job('dash-notify', { queue: 'dash-flow' })
export class Notify implements JobHandler<{ what: string }> {
  run(): void {}
}

export const dashboardProviders = [Fragile, Step, Notify];

export interface DashboardSeed {
  failedId: string;
  batchId: string;
  delayedId: string;
  flow: Record<string, string>;
  schedule: string;
}

/**
 * A little of everything the dashboard shows: a failed job with a hostile
 * payload, a settled batch with then/finally callbacks, a three-step flow,
 * a job due in an hour and a dynamic schedule. Waits until the work ran.
 */
export async function seedDashboard(app: INestApplication): Promise<DashboardSeed> {
  const jobs = app.get(JobQueue);
  fragile.failing = true;
  const failedId = (await jobs.enqueue(Fragile, { note: HOSTILE })).id;
  const batch = await app
    .get(BatchBuilder)
    .create('dash-import')
    .add(Step, { n: 1 })
    .add(Step, { n: 2 })
    .add(Step, { n: 3 })
    .then(Notify, { what: 'done' })
    .finally(Notify, { what: 'cleanup' })
    .dispatch();
  const flow = await jobs
    .flow()
    .add('fetch', Step, { n: 10 })
    .add('parse', Step, { n: 11 }, { after: ['fetch'] })
    .add('alert', Notify, { what: 'fetch failed' }, { after: [{ key: 'fetch', on: 'failure' }] })
    .dispatch();
  const delayedId = (await jobs.enqueue(Step, { n: 99 }, { delay: 3_600_000 })).id;
  const schedule = 'dash-hourly';
  await app.get(RecurringSchedules).upsert(schedule, Notify, '0 * * * *', { payload: { what: 'tick' } });
  await waitFor('the seeded jobs to run', async () => {
    const [failed, status, parsed] = await Promise.all([
      jobs.get(failedId),
      jobs.batchStatus(batch.id),
      jobs.get(flow.ids.parse!),
    ]);
    return failed?.state === 'failed' && status?.state === 'succeeded' && parsed?.state === 'succeeded';
  });
  return { failedId, batchId: batch.id, delayedId, flow: flow.ids, schedule };
}
