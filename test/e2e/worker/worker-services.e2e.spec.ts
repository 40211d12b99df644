import type { INestApplication } from '@nestjs/common';
import { Job, JobQueue, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { JobRescuer } from '../../../lib/worker/job-rescuer.service.js';
import { JobWorker } from '../../../lib/worker/job-worker.service.js';
import { LeaseKeeper } from '../../../lib/worker/lease-keeper.service.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

/** The worker's helpers, each on its own: LeaseKeeper and JobRescuer. */
const schema = uniqueSchema('wsvc');
const apps: INestApplication[] = [];
const failures: string[] = [];
const releases = new Map<string, () => void>();

@Job('svc-long', { maxAttempts: 3 })
class Long implements JobHandler<{ ms: number }> {
  async run(p: { ms: number }, ctx: JobContext): Promise<number> {
    await new Promise((r) => setTimeout(r, p.ms));
    return ctx.attempt;
  }
}

@Job('svc-held', { maxAttempts: 1 })
class Held implements JobHandler<Record<string, never>> {
  async run(_: Record<string, never>, ctx: JobContext): Promise<void> {
    await new Promise<void>((resolve) => releases.set(ctx.jobId, resolve));
  }
  onFailure(_: unknown, error: Error, ctx: JobContext): void {
    failures.push(`${ctx.jobId}:${error.name}`);
  }
}

async function boot(lease: number): Promise<INestApplication> {
  const app = await startJobsApp(schema, { worker: { lease, pollInterval: 50 } }, { providers: [Long, Held] });
  apps.push(app);
  return app;
}

afterAll(async () => {
  for (const r of releases.values()) r();
  for (const app of apps) await app.close().catch(() => undefined);
  await dropSchemas(schema);
});

describe('LeaseKeeper', () => {
  it('keeps a job running for three leases alive while another instance rescues every half lease', async () => {
    const runner = await boot(1_000);
    const rescuer = await boot(1_000);
    const { id } = await runner.get(JobQueue).enqueue(Long, { ms: 3_000 });
    await waitFor(
      'the job to succeed',
      async () => (await runner.get(JobQueue).get(id))?.state === 'succeeded',
      20_000,
    );
    const job = (await rescuer.get(JobQueue).get(id))!;
    // One attempt, never interrupted: every renewal landed before the lease ran out.
    expect(job.attempt).toBe(1);
    expect(job.result).toBe(1);
    expect(job.executions.map((e) => e.state)).toEqual(['succeeded']);
  });

  it('registers the worker again when retention removed its row', async () => {
    const app = apps[0]!;
    const worker = app.get(JobWorker);
    await sql(`DELETE FROM "${schema}".worker WHERE id = $1`, [worker.id]);
    await app.get(LeaseKeeper).renew();
    const [row] = await sql<{ stopped_at: Date | null }>(`SELECT stopped_at FROM "${schema}".worker WHERE id = $1`, [
      worker.id,
    ]);
    expect(row).toEqual({ stopped_at: null });
  });
});

describe('JobRescuer', () => {
  it('takes back a job whose worker vanished, recording the attempt interrupted; out of attempts, it fails it and runs onFailure once', async () => {
    const app = apps[1]!;
    const jobs = app.get(JobQueue);
    const retried = await jobs.enqueue(Long, { ms: 0 }, { delay: 3_600_000 });
    const spent = await jobs.enqueue(Held, {}, { delay: 3_600_000 });
    // A claim by a worker that then died: active, leased to it, the lease already out.
    await sql(
      `UPDATE "${schema}".job SET state = 'active', attempt = attempt + 1, worker_id = 'vanished', run_at = now(),
              started_at = now(), lease_expires_at = now() - interval '1 second' WHERE id = ANY($1::uuid[])`,
      [[retried.id, spent.id]],
    );
    await app.get(JobRescuer).rescue();
    await waitFor('the rescued job to run again', async () => (await jobs.get(retried.id))?.state === 'succeeded');
    const again = (await jobs.get(retried.id))!;
    expect(again.result).toBe(2);
    expect(again.executions.map((e) => [e.attempt, e.state, e.workerId])).toEqual([
      [1, 'interrupted', 'vanished'],
      [2, 'succeeded', expect.any(String)],
    ]);
    expect(again.executions[0]!.error?.name).toBe('LeaseLostError');

    const failed = (await jobs.get(spent.id))!;
    expect(failed).toMatchObject({ state: 'failed', lastError: { name: 'LeaseLostError' } });
    await app.get(JobRescuer).rescue();
    await apps[0]!.get(JobRescuer).rescue();
    expect(failures).toEqual([`${spent.id}:LeaseLostError`]);
  });
});

describe('FailureHooks', () => {
  it("runs a hook its worker held but never ran (it died after the outcome), once, and leaves other services' hooks", async () => {
    const app = apps[1]!;
    const jobs = app.get(JobQueue);
    const orphaned = await jobs.enqueue(Held, {}, { delay: 3_600_000 });
    const foreign = await jobs.enqueue(Held, {}, { delay: 3_600_000 });
    // Cleared before the hook is orphaned: both instances' rescue timers sweep every half lease and
    // may run it before the test's own passes (cleared after, that run's record was lost: a flake).
    failures.length = 0;
    await sql(
      `UPDATE "${schema}".job SET state = 'failed', attempt = 1, completed_at = now(), failure_hook = 'running',
              hook_worker_id = 'vanished', hook_lease_expires_at = now() - interval '1 second',
              last_error = '{"name": "PermanentJobError", "message": "gone", "stack": "PermanentJobError: gone"}'
        WHERE id = $1`,
      [orphaned.id],
    );
    // A job of a name no instance here handles: another service's sweep runs its hook.
    await sql(
      `UPDATE "${schema}".job SET name = 'svc-elsewhere', state = 'failed', completed_at = now(), failure_hook = 'pending'
        WHERE id = $1`,
      [foreign.id],
    );
    await Promise.all([app.get(JobRescuer).rescue(), apps[0]!.get(JobRescuer).rescue()]);
    await waitFor('the hook to be recorded done', async () => {
      const [row] = await sql<{ failure_hook: string }>(`SELECT failure_hook FROM "${schema}".job WHERE id = $1`, [
        orphaned.id,
      ]);
      return row?.failure_hook === 'done';
    });
    await Promise.all([app.get(JobRescuer).rescue(), apps[0]!.get(JobRescuer).rescue()]);
    expect(failures).toEqual([`${orphaned.id}:PermanentJobError`]);
    const [other] = await sql<{ failure_hook: string }>(`SELECT failure_hook FROM "${schema}".job WHERE id = $1`, [
      foreign.id,
    ]);
    expect(other!.failure_hook).toBe('pending');
  });
});
