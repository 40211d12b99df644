import type { Type } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Job, JobQueue, type JobHandler, type JobsModuleOptions } from 'nestjs-durable-jobs';
import { JobsHealthIndicator, type JobsHealthOptions, type JobsSystemHealthOptions } from 'nestjs-durable-jobs/health';
import { databaseUrl, dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { checkHealth, checkSystemHealth } from '../../support/health-check.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { JobWorker } from '../../../lib/worker/job-worker.service.js';
import { waitFor } from '../../support/wait.js';
import { appFixture } from '../../support/app-fixture.js';

@Job('served', { queue: 'served' })
class Served implements JobHandler<null> {
  run() {}
}

@Job('unserved', { queue: 'unserved' })
class Unserved implements JobHandler<null> {
  run() {}
}

// Each test's apps close when it ends: the suite's test files share the server's connections.
const { apps, schemas } = appFixture({ closeApps: 'each' });

async function boot(schema: string, options: Partial<JobsModuleOptions>, handlers: Type[] = [Served, Unserved]) {
  const app = await startJobsApp(schema, options, {
    imports: [TerminusModule],
    providers: [JobsHealthIndicator, ...handlers],
  });
  apps.push(app);
  const check = (opts: JobsHealthOptions = {}) => checkHealth(app, opts);
  const system = (opts: JobsSystemHealthOptions = {}) => checkSystemHealth(app, opts);
  return { app, check, system };
}

describe('JobsHealthIndicator (terminus)', () => {
  it('readiness stays up while a queue is stranded; the system check is down and names it', async () => {
    const schema = uniqueSchema('health');
    schemas.push(schema);
    // The worker serves "served" only; the API instance runs none.
    const servedOnly = await boot(schema, { worker: { queues: ['served'], pollInterval: 100 } });
    const api = await boot(schema, { worker: { enabled: false } });

    expect(await api.check()).toMatchObject({
      status: 'ok',
      details: { jobs: { status: 'up', queued: 0, active: 0, aliveWorkers: 1, worker: 'disabled' } },
    });
    expect(await servedOnly.check()).toMatchObject({ status: 'ok', details: { jobs: { worker: 'alive' } } });
    expect(await api.system()).toMatchObject({
      status: 'ok',
      details: { 'jobs-system': { status: 'up', stranded: [], unhandled: [] } },
    });

    // Ten jobs for later: nothing is due, so nothing is stranded or over the limit.
    const jobs = api.app.get(JobQueue);
    for (let i = 0; i < 10; i++) await jobs.enqueue(Unserved, null, { delay: 3_600_000 });
    expect(await api.system({ maxQueued: 5 })).toMatchObject({
      status: 'ok',
      details: { 'jobs-system': { status: 'up', scheduled: 10 } },
    });

    // Due work in a queue nobody serves: stuck until an operator acts. Every instance can still serve.
    const due = await jobs.enqueue(Unserved, null);
    expect(await api.check()).toMatchObject({ status: 'ok', details: { jobs: { status: 'up', queued: 1 } } });
    expect(await servedOnly.check()).toMatchObject({ status: 'ok' });
    expect(await api.system()).toMatchObject({
      http: 503,
      status: 'error',
      error: {
        'jobs-system': {
          status: 'down',
          queued: 1,
          stranded: ['unserved'],
          unhandled: [],
          message: 'Jobs are due in "unserved" and no alive worker serves it',
        },
      },
    });

    // A worker for every queue: the backlog is served.
    const everyQueue = await boot(schema, { worker: { concurrency: 1, pollInterval: 100 } });
    await waitFor('the new worker to run the due job', async () => (await jobs.get(due.id))?.state === 'succeeded');
    expect(await api.system()).toMatchObject({
      status: 'ok',
      details: { 'jobs-system': { aliveWorkers: 2, queued: 0 } },
    });
    // Stop both workers: due jobs in "served" now have no one either; the API instance stays ready.
    await servedOnly.app.close();
    await everyQueue.app.close();
    for (let i = 0; i < 3; i++) await jobs.enqueue(Served, null);
    expect(await api.check()).toMatchObject({ status: 'ok', details: { jobs: { aliveWorkers: 0, queued: 3 } } });
    expect(await api.system()).toMatchObject({
      http: 503,
      error: { 'jobs-system': { status: 'down', queued: 3, aliveWorkers: 0, stranded: ['served'] } },
    });
  });

  it('the system check lists due jobs whose name no live worker handles, and is down for them', async () => {
    const schema = uniqueSchema('healthu');
    schemas.push(schema);
    // This worker serves every queue but handles only "served".
    const worker = await boot(schema, { worker: { pollInterval: 100 } }, [Served]);
    const api = await boot(schema, { worker: { enabled: false } });
    const { id } = await api.app.get(JobQueue).enqueue(Unserved, null);
    const [{ run_at: runAt }] = await sql<{ run_at: Date }>(`SELECT run_at FROM "${schema}".job WHERE id = $1`, [id]);

    expect(await worker.check()).toMatchObject({ status: 'ok', details: { jobs: { worker: 'alive', queued: 1 } } });
    expect(await api.system()).toMatchObject({
      http: 503,
      error: {
        'jobs-system': {
          status: 'down',
          stranded: [],
          unhandled: [{ name: 'unserved', queue: 'unserved', due: 1, oldestDueAt: runAt }],
          message: 'Due jobs have no live worker that handles their name: "unserved" in "unserved" (1)',
        },
      },
    });
  });

  it("readiness is down while this instance's worker should run and does not", async () => {
    const schema = uniqueSchema('healthw');
    schemas.push(schema);
    const worker = await boot(schema, { worker: { pollInterval: 100 } });
    expect(await worker.check()).toMatchObject({ status: 'ok', details: { jobs: { worker: 'alive' } } });
    // What a shutdown does first: the worker stops; the app's probe still answers.
    await worker.app.get(JobWorker).stop();
    expect(await worker.check()).toMatchObject({
      http: 503,
      error: { jobs: { status: 'down', worker: 'not running', message: "This instance's jobs worker is not running" } },
    });
  });

  it('degraded (HTTP 200) when more jobs are due than maxQueued', async () => {
    const schema = uniqueSchema('healthq');
    schemas.push(schema);
    // No worker runs here; the row of one on another host says it is alive, so the backlog is served, only large.
    const api = await boot(schema, { worker: { enabled: false } });
    await api.app.get(JobQueue).enqueueMany(Array.from({ length: 6 }, () => ({ job: Served, payload: null })));
    await sql(
      `INSERT INTO "${schema}".worker (id, host, pid, queues, concurrency, started_at, last_heartbeat)
       VALUES ('elsewhere', 'other-host', 1, '{}', 4, now(), now())`,
    );
    expect(await api.check({ maxQueued: 5 })).toMatchObject({
      status: 'degraded',
      details: {
        jobs: { status: 'degraded', queued: 6, aliveWorkers: 1, message: '6 jobs are due, over maxQueued 5' },
      },
    });
    expect(await api.check({ maxQueued: 6 })).toMatchObject({ status: 'ok' });
  });

  it('down when the database stops answering', async () => {
    const schema = uniqueSchema('healthdb');
    const role = `${schema}_role`;
    schemas.push(schema);
    // With a password, so that the check works under password authentication too (the embedded server).
    await sql(`CREATE ROLE ${role} LOGIN PASSWORD 'health-check'`);
    await sql(`GRANT CREATE ON DATABASE ${new URL(databaseUrl()).pathname.slice(1) || 'postgres'} TO ${role}`);
    try {
      const url = new URL(databaseUrl());
      url.username = role;
      url.password = 'health-check';
      const api = await boot(schema, { connection: url.toString(), worker: { enabled: false } });
      expect(await api.check()).toMatchObject({ status: 'ok' });
      // The role may no longer log in, and its sessions are cut: every query of this app now fails.
      await sql(`ALTER ROLE ${role} NOLOGIN`);
      await sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, [role]);
      const result = await api.check({ timeout: 2000 });
      expect(result).toMatchObject({ http: 503, error: { jobs: { status: 'down' } } });
      expect((result as unknown as { error: { jobs: { message: string } } }).error.jobs.message).toMatch(
        /^The jobs database is unreachable: /,
      );
      await api.app.close().catch(() => undefined);
      apps.splice(apps.indexOf(api.app), 1);
    } finally {
      await dropSchemas(schema);
      schemas.splice(schemas.indexOf(schema), 1);
      await sql(`DROP OWNED BY ${role}`);
      await sql(`DROP ROLE ${role}`);
    }
  });
});
