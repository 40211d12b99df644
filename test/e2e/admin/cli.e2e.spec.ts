import { readdirSync } from 'node:fs';
import type { INestApplication } from '@nestjs/common';
import {
  Cron,
  Job,
  JobQueue,
  JobQueues,
  JobsMonitor,
  type JobContext,
  type JobHandler,
  type JobState,
} from 'nestjs-durable-jobs';
import { AdminWork, adminProviders, behaviour } from '../../support/admin.jobs.js';
import { json, runCli } from '../../support/cli-process.js';
import { dropSchemas, jobsConnection, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';
import { ROUTINES } from '../../../lib/storage/routines/routine-catalog.js';

/** Every migration this build ships, by its frozen file's number. */
const VERSIONS = readdirSync(new URL('../../../lib/storage/migrations/', import.meta.url))
  .map((f) => /^(\d{4})-.*(?<!\.down)\.sql$/.exec(f)?.[1])
  .filter((v): v is string => v !== undefined)
  .map(Number)
  .sort((a, b) => a - b);

@Cron('0 0 1 1 *')
@Job('cli-cron', { queue: 'adm' })
class CliCron implements JobHandler<void> {
  run() {}
}

/** The one handler of a second instance, which only the workers test starts: nobody enqueues it. */
@Job('cli-idle', { queue: 'cli-idle' })
class CliIdle implements JobHandler<void> {
  run() {}
}

/** Steps a, b and c, then a failure on its first attempt: a job to retry from a step. */
@Job('cli-stepped', { queue: 'adm', maxAttempts: 1 })
class CliStepped implements JobHandler<void> {
  static readonly calls: string[] = [];

  async run(_: void, ctx: JobContext) {
    for (const name of ['a', 'b', 'c']) await ctx.step(name, () => CliStepped.calls.push(`${name}#${ctx.attempt}`));
    if (ctx.attempt === 1) throw new Error('failed after c');
  }
}

const schema = uniqueSchema('cli');
const fresh = uniqueSchema('cli_fresh');
const HOUR = 3_600_000;
let app: INestApplication;
let jobs: JobQueue;
const stateOf = async (id: string) => (await jobs.get(id))?.state;
const until = (id: string, state: JobState) =>
  waitFor(`job ${id} to be ${state}`, async () => (await stateOf(id)) === state);
const cli = (...args: string[]) => runCli([...args, '--schema', schema]);

beforeAll(async () => {
  app = await startJobsApp(
    schema,
    { worker: { concurrency: 4, pollInterval: 100, queues: ['adm'] } },
    { providers: [...adminProviders, CliCron, CliStepped] },
  );
  jobs = app.get(JobQueue);
});

afterAll(async () => {
  behaviour.releaseAll();
  await app?.close();
  await dropSchemas(schema, fresh);
});

describe('the CLI', () => {
  it('answers bad usage with exit code 2 and the usage, before touching the database', async () => {
    const cases: Array<[string[], RegExp]> = [
      [[], /no command given/],
      [['frobnicate'], /unknown command "frobnicate"/],
      [['list', '--bogus'], /Unknown option '--bogus'/],
      [['list', '--state', 'nope'], /--state must be one of waiting, queued, scheduled, active/],
      [['list', '--limit', 'ten'], /--limit must be a whole number/],
      [['show'], /show needs <id>/],
      [['show', 'not-a-uuid'], /<id> must be an id/],
      [['retry', '--all', '0193a1b2-1a2b-7c3d-8e4f-5a6b7c8d9e0f'], /give <id> or --all, not both/],
      [['retry', '0193a1b2-1a2b-7c3d-8e4f-5a6b7c8d9e0f', '--queue', 'q'], /go with --all/],
      [['retry', '--all', '--reset-steps'], /--reset-steps goes with one <id>, not with --all/],
      [['retry', '--all', '--from-step', 'b'], /--from-step goes with one <id>, not with --all/],
      [
        ['retry', '0193a1b2-1a2b-7c3d-8e4f-5a6b7c8d9e0f', '--from-step', 'b', '--reset-steps'],
        /give --reset-steps \(every step runs again\) or --from-step <name>, not both/,
      ],
      [['purge'], /purge needs at least one of --succeeded-before/],
      [['purge', '--succeeded-before', 'soon'], /--succeeded-before must be an age such as 7d/],
      [['purge', '--succeeded-before', '7d', '--pause', 'slow'], /--pause must be a whole number, got "slow"/],
      [['pause', 'emails'], /pause needs one target: --schedule <name> or --queue <name>/],
    ];
    // The server named here does not exist: none of these may get as far as connecting.
    const runs = await Promise.all(
      cases.map(([args]) => runCli(args, { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' })),
    );
    runs.forEach((run, i) => {
      expect({ args: cases[i]![0], code: run.code }).toEqual({ args: cases[i]![0], code: 2 });
      expect(run.stderr).toMatch(cases[i]![1]);
      expect(run.stderr).toMatch(/Usage: nestjs-durable-jobs/);
      expect(run.stdout).toBe('');
    });
    const noDatabase = await runCli(['stats'], { DATABASE_URL: undefined });
    expect(noDatabase.code).toBe(2);
    expect(noDatabase.stderr).toMatch(/set DATABASE_URL or pass --database-url/);
  });

  it('prints its help with exit code 0', async () => {
    const [all, one] = await Promise.all([runCli(['--help']), runCli(['retry', '--help'])]);
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/^Usage: nestjs-durable-jobs <command> \[options\]/);
    for (const command of [
      'stats',
      'workers',
      'list',
      'show',
      'retry',
      'cancel',
      'purge',
      'schedules',
      'queues',
      'pause',
      'resume',
      'migrate',
    ]) {
      expect(all.stdout).toMatch(new RegExp(`\\n  ${command} `));
    }
    expect(all.stdout).toMatch(/Exit codes: 0 done, 1 refused \(the message says why\), 2 bad usage/);
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(
      /^Usage: nestjs-durable-jobs retry <id> \[--reset-steps \| --from-step <name>\] \| --all/,
    );
  });

  it('migrates a schema without an app, and says what a schema it has not migrated needs', async () => {
    const unmigrated = await runCli(['stats', '--schema', fresh]);
    expect(unmigrated.code).toBe(1);
    expect(unmigrated.stderr).toMatch(
      new RegExp(
        `schema "${fresh}" lacks version\\(s\\) ${VERSIONS.join(', ')} .*Potential fix: .*nestjs-durable-jobs migrate --schema ${fresh}`,
      ),
    );
    expect(json(await runCli(['migrate', '--schema', fresh, '--json']))).toEqual({
      schema: fresh,
      applied: VERSIONS,
      version: VERSIONS.at(-1),
      deferred: [],
      routines: ROUTINES.map((r) => r.name),
    });
    const again = await runCli(['migrate', '--database-url', process.env.DATABASE_URL!, '--schema', fresh]);
    expect(again).toMatchObject({ code: 0, stdout: `schema ${fresh} is up to date (version ${VERSIONS.at(-1)})\n` });
    const bad = await runCli(['migrate', '--schema', 'pg_nope']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/starts with "pg_".*Potential fix: schema: 'jobs'/);
  });

  it('shows stats, lists and shows jobs, as tables or as JSON', async () => {
    behaviour.failing.add('cli-bad');
    const ok = (await jobs.enqueue(AdminWork, { key: 'cli-ok' })).id;
    const bad = (await jobs.enqueue(AdminWork, { key: 'cli-bad' })).id;
    await until(ok, 'succeeded');
    await until(bad, 'failed');

    const [statsJson, statsText, failedJson, failedText, shown, unknown] = await Promise.all([
      cli('stats', '--json'),
      cli('stats', '--since', '1h'),
      cli('list', '--state', 'failed', '--json'),
      cli('list', '--state', 'failed'),
      cli('show', bad),
      cli('show', '0193a1b2-1a2b-7c3d-8e4f-5a6b7c8d9e0f'),
    ]);
    const counts = json<{ total: Record<string, number> }>(statsJson);
    expect(counts.total).toEqual(JSON.parse(JSON.stringify((await app.get(JobsMonitor).counts()).total)));
    expect(statsText.code).toBe(0);
    expect(statsText.stdout).toMatch(
      /^QUEUE +WAITING +QUEUED +SCHEDULED +ACTIVE +SUCCEEDED +FAILED +CANCELLED +SKIPPED\n/,
    );
    expect(statsText.stdout).toMatch(/\nadm +0 +0 +0 +0 +1 +1 +0 +0\n/);
    expect(json<{ jobs: Array<{ id: string }>; next: null }>(failedJson)).toMatchObject({
      jobs: [{ id: bad }],
      next: null,
    });
    expect(failedText.stdout).toMatch(
      new RegExp(
        `^ID +STATE +QUEUE +NAME +ATTEMPT +CREATED +LAST ERROR\\n${bad} +failed +adm +admin-work +1/1 .* cli-bad broke\\n$`,
      ),
    );
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^id +${bad}\\n`));
    expect(shown.stdout).toMatch(/\nstate +failed\n/);
    expect(shown.stdout).toMatch(/\nattempts:\n# +STATE +WORKER .*\n1 +failed /);
    expect(unknown).toMatchObject({ code: 1, stdout: '' });
    expect(unknown.stderr).toMatch(/no such job\. Potential fix: list --id <prefix>/);
  });

  it('retries, cancels, deletes and runs jobs now, one or all; a refusal is exit code 1 with the reason', async () => {
    behaviour.failing.clear();
    const [failed] = json<{ jobs: Array<{ id: string }> }>(await cli('list', '--state', 'failed', '--json')).jobs;
    expect(await cli('retry', failed!.id)).toMatchObject({ code: 0, stdout: `queued ${failed!.id} again\n` });
    await until(failed!.id, 'succeeded');
    const again = await cli('retry', failed!.id);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/the job is "succeeded"; only failed, cancelled or skipped jobs can be retried/);

    const parked = await Promise.all(
      [1, 2, 3].map((i) => jobs.enqueue(AdminWork, { key: `p${i}` }, { queue: 'cli-bulk' })),
    );
    await sql(`UPDATE "${schema}".job SET state = 'failed', completed_at = now() WHERE queue = 'cli-bulk'`);
    const retried = json<{ count: number; ids: string[] }>(
      await cli('retry', '--all', '--queue', 'cli-bulk', '--json'),
    );
    expect(retried.count).toBe(3);
    expect([...retried.ids].sort()).toEqual(parked.map((p) => p.id).sort());
    expect((await cli('cancel', '--all', '--queue', 'cli-bulk', '--state', 'queued')).stdout).toBe(
      'cancelled 3 jobs, asked 0 running to stop\n',
    );

    const later = (await jobs.enqueue(AdminWork, { key: 'cli-later' }, { delay: HOUR })).id;
    const deleteLive = await cli('delete', later);
    expect(deleteLive.code).toBe(1);
    expect(deleteLive.stderr).toMatch(/the job is "queued"; only ended jobs .* can be deleted/);
    expect(json(await cli('run-now', later, '--json'))).toMatchObject({ id: later, queue: 'adm' });
    await until(later, 'succeeded');
    expect(await cli('delete', later)).toMatchObject({ code: 0, stdout: `deleted ${later} (succeeded)\n` });
    expect(await jobs.get(later)).toBeNull();

    const toCancel = (await jobs.enqueue(AdminWork, { key: 'cli-cancel' }, { delay: HOUR })).id;
    expect(await cli('cancel', toCancel)).toMatchObject({ code: 0, stdout: `cancelled ${toCancel}\n` });
    expect(await stateOf(toCancel)).toBe('cancelled');
  });

  it('retries a job from a step with --from-step: that step and the later ones run again; a step it never recorded is exit code 1 naming the ones it did', async () => {
    const { id } = await jobs.enqueue(CliStepped, undefined);
    await until(id, 'failed');
    const unknown = await cli('retry', id, '--from-step', 'd');
    expect(unknown).toMatchObject({ code: 1, stdout: '' });
    expect(unknown.stderr).toMatch(
      /retry\(\S+, \{ fromStep: "d" \}\): the job recorded no step named "d"; it recorded "a", "b", "c", in that order\. Nothing was written\. Potential fix:/,
    );
    expect(await stateOf(id)).toBe('failed');
    expect(json(await cli('retry', id, '--from-step', 'b', '--json'))).toEqual({ id, state: 'queued', fromStep: 'b' });
    await until(id, 'succeeded');
    expect(CliStepped.calls).toEqual(['a#1', 'b#1', 'c#1', 'b#2', 'c#2']);
    expect((await jobs.get(id))!.steps.map((s) => [s.name, s.attempt])).toEqual([
      ['a', 1],
      ['b', 2],
      ['c', 2],
    ]);
  });

  it('lists schedules (the code-defined ones kept), pauses and resumes them, runs one now; refuses to pause a queue', async () => {
    const listed = json<Array<{ name: string; source: string }>>(await cli('schedules', '--json'));
    // Each CLI call above booted JobsModule without this app's @Cron: the row is still there.
    expect(listed).toMatchObject([{ name: 'cli-cron', source: 'code', service: 'nestjs-durable-jobs' }]);
    // The app's service, its build in force and its one live instance; a running service is not forgotten.
    expect((await cli('services')).stdout).toMatch(
      /^SERVICE +BUILD IN FORCE .*\nnestjs-durable-jobs +([0-9a-f]{12}) +\S+ +\1 \(1\) +1 +\d+ *\n$/,
    );
    const refused = await cli('services', 'forget', 'nestjs-durable-jobs');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/1 instance\(s\) of the service are running.*Potential fix: stop them first/);
    expect((await cli('schedules')).stdout).toMatch(
      /^NAME +JOB +CRON .*SERVICE .*\ncli-cron +cli-cron +0 0 1 1 \* +UTC +code +\S+ +no /,
    );
    expect(await cli('pause', '--schedule', 'cli-cron')).toMatchObject({
      code: 0,
      stdout: 'paused schedule cli-cron\n',
    });
    const resumed = await cli('resume', 'schedule', 'cli-cron');
    expect(resumed.stdout).toMatch(/^resumed schedule cli-cron; next run \d{4}-01-01T00:00:00Z\n$/);
    const { jobId } = json<{ jobId: string }>(await cli('run-now', '--schedule', 'cli-cron', '--json'));
    await until(jobId, 'succeeded');
    const unknown = await cli('pause', '--schedule', 'nope');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/RecurringSchedules.pause\('nope'\): no schedule has this name/);
    expect(await cli('pause', '--queue', 'adm')).toMatchObject({ code: 0, stdout: 'paused queue adm\n' });
    const queues = json<Array<{ name: string; paused: boolean }>>(await cli('queues', '--json'));
    expect(queues.find((q) => q.name === 'adm')).toMatchObject({ paused: true });
    expect((await cli('queues')).stdout).toMatch(
      /^QUEUE +SERVICE +PAUSED +CONCURRENCY +RATE LIMIT .*\n(.*\n)*adm +\S+ +yes +- +- /,
    );
    expect(await cli('resume', 'queue', 'adm')).toMatchObject({ code: 0, stdout: 'resumed queue adm\n' });
    // A group's own limit, under its queue.
    await app.get(JobQueues).setGroupLimits('adm', 'tenant-1', { concurrency: 2 });
    expect((await cli('queues')).stdout).toMatch(/\nadm +\S+ +no .*\n {2}group tenant-1 +2 \(runtime\)/);
    const unknownQueue = await cli('pause', '--queue', 'no-such-queue');
    expect(unknownQueue).toMatchObject({ code: 1, stdout: '' });
    expect(unknownQueue.stderr).toMatch(/JobQueues.pause\(\): no queue "no-such-queue"/);
  });

  it('reads batches and throughput, and purges finished jobs by age', async () => {
    const [batches, throughput] = await Promise.all([
      cli('batches', '--json'),
      cli('throughput', '--minutes', '5', '--json'),
    ]);
    expect(json(batches)).toEqual({ batches: [], next: null });
    expect(Object.keys(json<{ queues: object }>(throughput).queues)).toEqual(['adm']);

    const [before] = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".job WHERE state = 'succeeded' AND batch_id IS NULL`,
    );
    expect(before!.n).toBeGreaterThan(0);
    const purged = json<{ jobs: { succeeded: number } }>(await cli('purge', '--succeeded-before', '0s', '--json'));
    expect(purged.jobs.succeeded).toBe(before!.n);
    const text = await cli('purge', '--succeeded-before', '0s', '--cancelled-before', '2000-01-01', '--pause', '5');
    expect(text).toMatchObject({ code: 0, stdout: 'deleted no jobs and 0 batches (0 members) in 0 rounds\n' });
  });

  it("lists workers; one that serves every queue shows queues 'all'", async () => {
    // A second instance whose worker names no queues serves every queue (and claims only cli-idle, never enqueued).
    const everyQueue = await startJobsApp(
      schema,
      { worker: { concurrency: 2, pollInterval: 100 } },
      { providers: [CliIdle] },
    );
    try {
      const [asJson, asText] = await Promise.all([cli('workers', '--json'), cli('workers')]);
      const workers = json<Array<{ queues: string[] | 'all'; concurrency: number; alive: boolean }>>(asJson);
      expect(workers.map((w) => [w.concurrency, w.queues, w.alive]).sort()).toEqual([
        [2, 'all', true],
        [4, ['adm'], true],
      ]);
      expect(asText.code).toBe(0);
      expect(asText.stdout).toMatch(
        /^ID +HOST +PID +QUEUES +RUNNING +SLOTS +CONNECTIONS +STARTED +LAST HEARTBEAT +ALIVE\n/,
      );
      // Connections: open at the last heartbeat, of the instance's maxConnections (10 by default).
      const max = jobsConnection().maxConnections ?? 10;
      expect(asText.stdout).toMatch(new RegExp(` all +0 +2 +\\d+/${max} +\\S+ +\\S+ +yes\n`));
      expect(asText.stdout).toMatch(new RegExp(` adm +\\d+ +4 +\\d+/${max} +\\S+ +\\S+ +yes\n`));
    } finally {
      await everyQueue.close();
    }
  });
});
