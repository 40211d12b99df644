import { Job, JobQueue, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { appFixture } from '../../support/app-fixture.js';
import { uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor as waitUntil } from '../../support/wait.js';

// ctx.patched() across a deploy: `deployed` stands for the code a worker runs. The old code has two
// steps; the new one asks patched('tax-v2') after the first and takes another path when it is true.
// Each job fails its attempts until the test lets it through, so a job can start under the old code
// and finish under the new.

let deployed: 'old' | 'new' = 'old';
const letThrough = new Set<string>();
const paths = new Map<string, string[]>();
const note = (id: string, what: string) => paths.set(id, [...(paths.get(id) ?? []), what]);

@Job('patch-invoice', { maxAttempts: 20, backoff: { type: 'fixed', delay: 50 } })
class Invoice implements JobHandler<Record<string, never>> {
  async run(_p: unknown, ctx: JobContext): Promise<string> {
    await ctx.step('net', () => 100);
    let total: number;
    if (deployed === 'new' && (await ctx.patched('tax-v2'))) {
      total = await ctx.step('total-v2', () => 125);
      note(ctx.jobId, `new#${ctx.attempt}`);
    } else {
      total = await ctx.step('total', () => 120);
      note(ctx.jobId, `old#${ctx.attempt}`);
    }
    if (!letThrough.has(ctx.jobId)) throw new Error('not yet');
    return `${total}`;
  }
}

@Job('patch-bad', { maxAttempts: 1 })
class BadPatch implements JobHandler<{ name: string }> {
  async run(p: { name: string }, ctx: JobContext): Promise<boolean> {
    return ctx.patched(p.name);
  }
}

const { apps, schemas } = appFixture({ closeApps: 'each' });

describe('ctx.patched()', () => {
  it('keeps a job that recorded steps under the old code on the old path, across attempts; new jobs take the new one', async () => {
    deployed = 'old';
    const schema = uniqueSchema('patched');
    schemas.push(schema);
    const app = await startJobsApp(schema, { worker: { pollInterval: 50 } }, { providers: [Invoice] });
    apps.push(app);
    const jobs = app.get(JobQueue);
    const before = await jobs.enqueue(Invoice, {});
    await waitUntil('an attempt under the old code', () => (paths.get(before.id) ?? []).length >= 1);
    deployed = 'new';
    const atDeploy = paths.get(before.id)!.length;
    await waitUntil('two attempts under the new code', () => paths.get(before.id)!.length >= atDeploy + 2);
    letThrough.add(before.id);
    const after = await jobs.enqueue(Invoice, {});
    letThrough.add(after.id);
    const [b, a] = await Promise.all([
      jobs.waitFor(before.id, { timeout: 30_000 }),
      jobs.waitFor(after.id, { timeout: 30_000 }),
    ]);
    expect(b.result).toBe('120');
    expect(new Set(paths.get(before.id)!.map((p) => p.split('#')[0]))).toEqual(new Set(['old']));
    expect(a.result).toBe('125');
    expect(paths.get(after.id)!.map((p) => p.split('#')[0])).toEqual(['new']);
    // The answer is recorded once, with the job's other steps.
    expect(b.steps.map((s) => s.name)).toEqual(['net', 'total', 'patch:tax-v2']);
    expect(a.steps.map((s) => s.name)).toEqual(['net', 'patch:tax-v2', 'total-v2']);
  });

  it('refuses a name that is empty or too long, as a step name', async () => {
    const schema = uniqueSchema('patched_bad');
    schemas.push(schema);
    const app = await startJobsApp(schema, { worker: { pollInterval: 50 } }, { providers: [BadPatch] });
    apps.push(app);
    const jobs = app.get(JobQueue);
    for (const name of ['', 'x'.repeat(200)]) {
      const { id } = await jobs.enqueue(BadPatch, { name });
      const job = await jobs.waitFor(id, { timeout: 30_000 });
      expect(job.state).toBe('failed');
      expect(job.lastError!.message).toMatch(/ctx\.patched\(.*\) in job "patch-bad"/);
    }
  });
});
