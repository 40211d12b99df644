import { existsSync } from 'node:fs';
import { Module, type INestApplication } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { chromium } from 'playwright-core';
import {
  BatchBuilder,
  Job,
  JobQueue,
  JobsAdmin,
  JobsDatabaseError,
  JobsError,
  JobsModule,
  JobsMonitor,
  type JobContext,
  type JobHandler,
  type JobsModuleOptions,
} from 'nestjs-durable-jobs';
import { JobsDashboardModule } from 'nestjs-durable-jobs/dashboard';
import { JobsHealthIndicator, type JobsHealthOptions } from 'nestjs-durable-jobs/health';
import { json, runCli } from '../../support/cli-process.js';
import { uniqueSchema } from '../../support/database.js';
import { checkHealth, checkSystemHealth } from '../../support/health-check.js';
import { startStandbyPair, type StandbyPair } from '../../support/standby.js';
import { sleep, waitFor } from '../../support/wait.js';

/**
 * Monitoring from a real hot standby: the test starts its own primary and a
 * streaming replica of it (pg_basebackup -R) from the machine's PostgreSQL
 * binaries. Where that cannot be done, beforeAll fails saying why.
 * Pausing the standby's replay (pg_wal_replay_pause) is what makes reads
 * from it observable: the primary moves on, the replica's view does not.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Fails at its first attempt, succeeds at the next. */
@Job('replica-flaky', { queue: 'replica', maxAttempts: 1 })
class Flaky implements JobHandler<{ tag: string }> {
  static runs = 0;
  run(_: { tag: string }, ctx: JobContext) {
    Flaky.runs++;
    if (ctx.attempt === 1 && Flaky.runs === 1) throw new Error('first run fails');
  }
}

@Job('replica-noop', { queue: 'replica' })
class Noop implements JobHandler<{ n: number }> {
  run() {}
}

let pair: StandbyPair;
let app: INestApplication;
let origin: string;
const schema = uniqueSchema('replica');

async function bootApp(options: Partial<JobsModuleOptions>): Promise<INestApplication> {
  @Module({ imports: [TerminusModule], providers: [JobsHealthIndicator, Flaky, Noop] })
  class Own {}
  const ref = await Test.createTestingModule({
    imports: [
      JobsModule.forRoot({ connection: pair.primaryUrl, schema, unregisteredJobs: 'ignore', ...options }),
      JobsDashboardModule.register({ path: 'jobs', public: true }),
      Own,
    ],
  }).compile();
  const nest = ref.createNestApplication({ logger: process.env.TEST_LOGS ? undefined : false });
  await nest.init();
  return nest;
}

/** Replay pauses between records; a request is only a request until the standby reports it paused. */
async function pause(): Promise<void> {
  await pair.onReplica('SELECT pg_wal_replay_pause()');
  await waitFor('replay to pause', async () => {
    const [row] = await pair.onReplica<{ state: string }>('SELECT pg_get_wal_replay_pause_state() AS state');
    return row?.state === 'paused';
  });
}
const resume = () => pair.onReplica('SELECT pg_wal_replay_resume()');
const http = async (method: 'GET' | 'POST', path: string) => {
  const res = await fetch(`${origin}/jobs/${path}`, {
    method,
    headers: method === 'POST' ? { origin, 'content-type': 'application/json' } : {},
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : null };
};
const health = (opts: JobsHealthOptions) => checkHealth(app, opts);

beforeAll(async () => {
  pair = await startStandbyPair();
  app = await bootApp({
    monitoring: { replica: pair.replicaUrl },
    worker: { pollInterval: 50, queues: ['replica'] },
    externalJobs: { 'nobody-serves': { queue: 'nobody' } },
  });
  await app.listen(0, '127.0.0.1');
  origin = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  await pair.caughtUp();
}, 120_000);

afterAll(async () => {
  await app?.close();
  await pair?.stop();
});

afterEach(async () => {
  // A failed test must not leave the next one reading a frozen replica.
  await resume().catch(() => undefined);
});

describe('monitoring.replica: reads from a real hot standby', () => {
  it('reads go to the replica and actions to the primary; the replica refuses writes', async () => {
    await expect(pair.onReplica(`INSERT INTO "${schema}".worker (id) VALUES ('x')`)).rejects.toThrow(/read-only/);
    await pause();
    const queue = app.get(JobQueue);
    const { id } = await queue.enqueue(Noop, { n: 1 }, { delay: 3_600_000 });
    const admin = app.get(JobsAdmin);
    const monitor = app.get(JobsMonitor);
    // The primary has it; the frozen replica does not, so every operator read went there.
    expect(await queue.get(id)).toMatchObject({ id, state: 'queued' });
    expect(await admin.get(id)).toBeNull();
    expect(await admin.detail(id)).toBeNull();
    expect((await admin.search({ queue: 'replica' })).jobs.map((j) => j.id)).not.toContain(id);
    expect((await monitor.jobs({ queue: 'replica' })).jobs.map((j) => j.id)).not.toContain(id);
    expect((await monitor.counts()).queues.replica?.scheduled ?? 0).toBe(0);
    expect((await monitor.counts({ fromPrimary: true })).queues.replica?.scheduled).toBe(1);
    expect((await admin.listQueues()).find((q) => q.name === 'replica')?.scheduled ?? 0).toBe(0);
    expect((await http('GET', `api/jobs/${id}`)).status).toBe(404);
    // An action on it still works: it runs on the primary, which the standby could not have taken.
    expect((await http('POST', `api/jobs/${id}/run-now`)).status).toBe(200);
    await waitFor('the job to run on the primary', async () => (await queue.get(id))?.state === 'succeeded');
    await resume();
    await pair.caughtUp();
    expect(await admin.get(id)).toMatchObject({ id, state: 'succeeded' });
    expect((await http('GET', `api/jobs/${id}`)).body).toMatchObject({ id, state: 'succeeded' });
  }, 60_000);

  it("a batch's status, members and graph are read from the replica too", async () => {
    await pause();
    const queue = app.get(JobQueue);
    const admin = app.get(JobsAdmin);
    const batch = await app
      .get(BatchBuilder)
      .create('replica-batch')
      .add(Noop, { n: 5 })
      .add(Noop, { n: 6 })
      .dispatch();
    // The primary has it; the frozen replica does not, so each of JobsAdmin's batch reads went there.
    expect(await queue.batchStatus(batch.id)).toMatchObject({ id: batch.id, total: 2 });
    const members = (await queue.batchMembers(batch.id)).map((m) => m.id).sort();
    expect(members).toHaveLength(2);
    expect(await admin.batchStatus(batch.id)).toBeNull();
    expect(await admin.batchMembers(batch.id)).toEqual([]);
    expect(await admin.batchGraph(batch.id)).toBeNull();
    await waitFor(
      'the batch to run on the primary',
      async () => (await queue.batchStatus(batch.id))?.state === 'succeeded',
    );
    await resume();
    await pair.caughtUp();
    expect(await admin.batchStatus(batch.id)).toMatchObject({ id: batch.id, state: 'succeeded', total: 2 });
    expect((await admin.batchMembers(batch.id)).map((m) => m.id).sort()).toEqual(members);
    expect((await admin.batchGraph(batch.id))?.nodes.map((n) => n.id).sort()).toEqual(members);
  }, 60_000);

  it('an action on a job seen on a lagging replica is checked on the primary and refused once the job moved on', async () => {
    Flaky.runs = 0;
    const queue = app.get(JobQueue);
    const admin = app.get(JobsAdmin);
    const { id } = await queue.enqueue(Flaky, { tag: 'a' });
    await waitFor('the first run to fail', async () => (await queue.get(id))?.state === 'failed');
    await pair.caughtUp();
    await pause();
    // Operator A retries on the primary and the job succeeds; operator B still reads "failed" on the replica.
    await queue.retry(id);
    await waitFor('the retry to succeed', async () => (await queue.get(id))?.state === 'succeeded');
    expect(await admin.get(id)).toMatchObject({ state: 'failed' });
    const retry = await http('POST', `api/jobs/${id}/retry`);
    expect(retry.status).toBe(400);
    expect(String(retry.body?.message)).toMatch(/the job is "succeeded"; only failed, cancelled or skipped/);
    await expect(admin.delete(id)).resolves.toEqual({ id, state: 'succeeded' });
    await sleep(300);
    expect(Flaky.runs).toBe(2);
  }, 60_000);

  it('replicaLag(), the dashboard, the CLI and the health check report the lag', async () => {
    const monitor = app.get(JobsMonitor);
    await pair.caughtUp();
    // A heartbeat may land between two reads; caught up, the replica reads 0 behind soon enough.
    await waitFor('the lag to read 0', async () => {
      const lag = await monitor.replicaLag();
      return lag?.standby && lag.bytes === 0 && lag.ms === 0 && !lag.replayPaused;
    });
    expect(await health({ maxReplicaLag: 5_000 })).toMatchObject({
      status: 'ok',
      details: { jobs: { replicaLagMs: expect.any(Number) } },
    });
    await pause();
    const { id: unseen } = await app.get(JobQueue).enqueue(Noop, { n: 2 }, { delay: 3_600_000 });
    await sleep(1_200);
    const lag = (await monitor.replicaLag())!;
    expect(lag.standby).toBe(true);
    expect(lag.replayPaused).toBe(true);
    expect(lag.bytes).toBeGreaterThan(0);
    expect(lag.ms).toBeGreaterThanOrEqual(1_000);
    const degraded = (await health({ maxReplicaLag: 500 })) as {
      status: string;
      details: { jobs: Record<string, unknown> };
    };
    expect(degraded.status).toBe('degraded');
    expect(degraded.details.jobs.message).toMatch(
      /monitoring replica is \d+ ms behind the primary \(its replay is paused\), over maxReplicaLag 500 ms/,
    );
    expect((await http('GET', 'api/replica')).body).toMatchObject({ source: 'replica', lag: { replayPaused: true } });
    const cli = await runCli(['replica', '--json', '--schema', schema, '--replica-url', pair.replicaUrl], {
      DATABASE_URL: pair.primaryUrl,
    });
    expect(json(cli)).toMatchObject({ source: 'replica', lag: { standby: true, replayPaused: true } });
    // The CLI's read commands read the replica too: the job the primary has is not listed yet.
    const primaryEnv = { DATABASE_URL: pair.primaryUrl };
    const listed = (replica: string[]) =>
      runCli(['list', '--json', '--schema', schema, '--queue', 'replica', ...replica], primaryEnv).then((run) =>
        json<{ jobs: Array<{ id: string }> }>(run).jobs.map((j) => j.id),
      );
    expect(await listed(['--replica-url', pair.replicaUrl])).not.toContain(unseen);
    expect(await listed([])).toContain(unseen);
    const text = await runCli(['replica', '--schema', schema], {
      DATABASE_URL: pair.primaryUrl,
      JOBS_REPLICA_URL: pair.replicaUrl,
    });
    expect(text.stdout).toMatch(
      /reads go to the replica: \d+ ms behind the primary \(\d+ bytes of WAL to replay\); its replay is paused/,
    );
    // The page shows it in its header, in a real browser.
    if (!existsSync(CHROMIUM))
      throw new Error(`No Chromium at ${CHROMIUM}. Potential fix: apt-get install -y chromium.`);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      await page.goto(`${origin}/jobs`);
      const header = page.locator('#replica');
      await header.waitFor({ state: 'visible' });
      expect(await header.textContent()).toMatch(/^Replica · [\d.]+ (ms|s|min \d+ s) behind · replay paused$/);
      await resume();
      await pair.caughtUp();
      // No longer paused: up to date, or behind by what was written since the last replay.
      await page.waitForFunction(() =>
        /^Replica · (up to date|\d+ ms behind)$/.test(document.querySelector('#replica')?.textContent ?? ''),
      );
    } finally {
      await browser.close();
    }
    expect(await health({ maxReplicaLag: 5_000 })).toMatchObject({ status: 'ok' });
  }, 90_000);

  it('the health check reads the primary: a due job the replica has not seen still strands its queue', async () => {
    await pause();
    await app.get(JobQueue).enqueue('nobody-serves', { n: 3 });
    expect(await checkSystemHealth(app, {})).toMatchObject({
      http: 503,
      details: { 'jobs-system': { status: 'down', stranded: ['nobody'] } },
    });
    await resume();
    await app.get(JobsAdmin).cancelAll({ queue: 'nobody' });
  }, 30_000);

  it('refuses at boot a replica that is the primary or lacks the schema, and any value that is not a source', async () => {
    const refusal = (o: Partial<JobsModuleOptions>) =>
      bootApp({ worker: { enabled: false }, scheduler: { enabled: false }, ...o }).then(
        (booted) => booted.close().then(() => new Error('booted')),
        (error: unknown) => error as Error,
      );
    for (const [replica, message] of [
      [42, /"monitoring.replica" must be a DataSource, a postgres URL or TypeORM postgres options, got 42/],
      ['', /"monitoring.replica" is an empty string/],
      [{ url: undefined }, /"monitoring.replica.url" is undefined \(is REPLICA_URL set\?\)/],
    ] as const) {
      const error = await refusal({ monitoring: { replica: replica as never } });
      expect(error).toBeInstanceOf(JobsError);
      expect(error.message).toMatch(message);
    }
    const primary = new DataSource({ type: 'postgres', url: pair.primaryUrl });
    await primary.initialize();
    try {
      const same = await refusal({ connection: undefined, dataSource: primary, monitoring: { replica: primary } });
      expect(same.message).toMatch(/"monitoring.replica" is the module's own DataSource/);
    } finally {
      await primary.destroy();
    }
    // With replay paused, a schema the primary creates at this boot is not on the replica yet.
    await pause();
    const lacking = await refusal({ schema: uniqueSchema('replica_new'), monitoring: { replica: pair.replicaUrl } });
    expect(lacking).toBeInstanceOf(JobsError);
    expect(lacking.message).toMatch(/"monitoring.replica" has no schema "t_replica_new_\w+" of job tables/);
  }, 60_000);

  it('a replica that stops answering degrades the health check and fails reads with a JobsDatabaseError', async () => {
    // Every write refused on the standby is in its log: only the test's own INSERT of the first test is.
    expect(pair.replicaLogLines(/cannot execute .* in a read-only transaction/)).toEqual([
      expect.stringContaining('cannot execute INSERT in a read-only transaction'),
    ]);
    await pair.stopReplica();
    const degraded = (await health({ maxReplicaLag: 1_000, timeout: 2_000 })) as {
      status: string;
      details: { jobs: Record<string, unknown> };
    };
    expect(degraded.status).toBe('degraded');
    expect(degraded.details.jobs.message).toMatch(/^The monitoring replica did not answer: /);
    await expect(app.get(JobsAdmin).search({})).rejects.toBeInstanceOf(JobsDatabaseError);
    // Jobs still run: the worker works on the primary only.
    const { id } = await app.get(JobQueue).enqueue(Noop, { n: 4 });
    await waitFor(
      'a job to run with the replica down',
      async () => (await app.get(JobQueue).get(id))?.state === 'succeeded',
    );
  }, 60_000);
});
