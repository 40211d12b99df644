/**
 * Several services on one schema, each a real app in its own process: each owns the schedules
 * and limits its code declares, and a rolling deploy of one service keeps its newest release's.
 */
import { AppProcess } from '../../support/app-process.js';
import { json, runCli } from '../../support/cli-process.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { waitFor } from '../../support/wait.js';

const schemas: string[] = [];
const running = new Set<AppProcess>();

afterAll(async () => {
  for (const app of running) app.killGroup();
  await dropSchemas(...schemas);
});

function newSchema(prefix: string): string {
  const schema = uniqueSchema(prefix);
  schemas.push(schema);
  return schema;
}

async function start(schema: string, service: string, env: Record<string, string> = {}): Promise<AppProcess> {
  const app = new AppProcess(
    process.execPath,
    ['--import', './test/support/register-swc.mjs', 'test/support/service-app.ts'],
    { CHILD_SCHEMA: schema, SERVICE: service, ...env },
  );
  running.add(app);
  await app.line(/^ready$/, 30_000);
  return app;
}

/** What a process manager does: SIGTERM; Nest's shutdown hooks close the app, then end it with the signal. */
async function stop(app: AppProcess): Promise<void> {
  process.kill(app.pid, 'SIGTERM');
  const exit = await app.exited;
  running.delete(app);
  expect(exit).toEqual({ code: null, signal: 'SIGTERM' });
  expect(app.stderr).toBe('');
}

async function restart(schema: string, app: AppProcess, service: string, env: Record<string, string> = {}) {
  await stop(app);
  return start(schema, service, env);
}

/** The code-defined schedules and their owners. */
async function schedules(schema: string): Promise<string[]> {
  const rows = await sql<{ name: string; service: string; cron: string }>(
    `SELECT name, service, cron FROM "${schema}".recurring_schedule WHERE source = 'code' ORDER BY name`,
  );
  return rows.map((r) => `${r.name} ${r.cron} (${r.service})`);
}

/** The code-declared limits and their owners: queues, job names and keys. */
async function limits(schema: string): Promise<string[]> {
  const rows = await sql<{ line: string }>(
    `SELECT format('queue %s concurrency %s (%s)', name, coalesce(concurrency::text, 'none'), code_service) AS line
       FROM "${schema}".job_queue WHERE code_service IS NOT NULL
     UNION ALL
     SELECT format('job %s/%s concurrency %s rate %s (%s)', queue, name, coalesce(concurrency::text, 'none'),
                   coalesce(rate_max::text, 'none'), code_service)
       FROM "${schema}".job_name_limit
     ORDER BY 1`,
  );
  return rows.map((r) => r.line);
}

const BOTH_SCHEDULES = ['api-tick * * * * * * (api)', 'billing-tick * * * * * * (billing)'];
const BOTH_LIMITS = [
  'job api/api-work concurrency 3 rate none (api)',
  'job billing/billing-work concurrency none rate 100 (billing)',
  'queue api concurrency 5 (api)',
  'queue billing concurrency 2 (billing)',
];

describe('two services on one schema', () => {
  it('keep both schedules and both limits through boots and restarts, fire each cron once per tick, and run only their own jobs', async () => {
    const schema = newSchema('svc');
    let api = await start(schema, 'api', { ENQUEUE: 'billing-work:3' });
    expect(await schedules(schema)).toEqual(['api-tick * * * * * * (api)']);

    let billing = await start(schema, 'billing', { ENQUEUE: 'api-work:3' });
    expect(await schedules(schema)).toEqual(BOTH_SCHEDULES);
    expect(await limits(schema)).toEqual(BOTH_LIMITS);

    api = await restart(schema, api, 'api');
    expect(await schedules(schema)).toEqual(BOTH_SCHEDULES);
    expect(await limits(schema)).toEqual(BOTH_LIMITS);

    billing = await restart(schema, billing, 'billing');
    expect(await schedules(schema)).toEqual(BOTH_SCHEDULES);
    expect(await limits(schema)).toEqual(BOTH_LIMITS);

    // Both running: each schedule's ticks over three seconds, one job each and none missed.
    const since = new Date(Date.now() + 1_000);
    const until = new Date(since.getTime() + 3_000);
    await waitFor('three seconds of ticks', async () => new Date() > new Date(until.getTime() + 1_500), 10_000);
    for (const name of ['api-tick', 'billing-tick']) {
      const ticks = await sql<{ run_at: Date }>(
        `SELECT run_at FROM "${schema}".job WHERE name = $1 AND run_at >= $2 AND run_at < $3 ORDER BY run_at`,
        [name, since, until],
      );
      const seconds = ticks.map((t) => t.run_at.getTime());
      expect(new Set(seconds).size).toBe(seconds.length);
      expect(seconds.length).toBeGreaterThanOrEqual(3);
      expect(seconds.at(-1)! - seconds[0]!).toBe((seconds.length - 1) * 1_000);
    }

    // Whoever enqueued them, each service's jobs ran on that service.
    const ran = await waitFor('the enqueued jobs to succeed', async () => {
      const rows = await sql<{ name: string; state: string; ran_by: string | null }>(
        `SELECT name, state, result->>'ranBy' AS ran_by FROM "${schema}".job
          WHERE name IN ('api-work', 'billing-work') ORDER BY name`,
      );
      return rows.length === 6 && rows.every((r) => r.state === 'succeeded') ? rows : null;
    });
    expect(ran.map((r) => `${r.name} ${r.ran_by}`)).toEqual([
      ...Array(3).fill('api-work api'),
      ...Array(3).fill('billing-work billing'),
    ]);
    const ticksRanBy = await sql<{ name: string; ran_by: string }>(
      `SELECT DISTINCT name, result->>'ranBy' AS ran_by FROM "${schema}".job
        WHERE name LIKE '%-tick' AND state = 'succeeded' ORDER BY name`,
    );
    expect(ticksRanBy).toEqual([
      { name: 'api-tick', ran_by: 'api' },
      { name: 'billing-tick', ran_by: 'billing' },
    ]);
    await stop(api);
    await stop(billing);
  });

  it("refuse a start that declares another service's schedule or queue limits differently, naming both services and the fix, until that service is stopped and forgotten", async () => {
    const schema = newSchema('svcrival');
    const api = await start(schema, 'api');
    const rival = new AppProcess(
      process.execPath,
      ['--import', './test/support/register-swc.mjs', 'test/support/service-app.ts'],
      { CHILD_SCHEMA: schema, SERVICE: 'rival', RIVAL_LIMITS: '1' },
    );
    running.add(rival);
    const exit = await rival.exited;
    running.delete(rival);
    expect(exit.code).not.toBe(0);
    expect(rival.stderr).toContain(
      "JobsError: JobsModule: service 'rival' declares schedule 'api-tick' (declared by service 'api'), " +
        "queue's limits 'api' (declared by service 'api') differently",
    );
    expect(rival.stderr).toMatch(/Potential fix: declare each in one service only.*services forget <service>/);
    // Nothing of the refused start was written.
    expect(await schedules(schema)).toEqual(['api-tick * * * * * * (api)']);
    expect(await limits(schema)).toEqual([
      'job api/api-work concurrency 3 rate none (api)',
      'queue api concurrency 5 (api)',
    ]);
    // While api runs, it cannot be forgotten: its instances would write their declarations again.
    const refused = await runCli(['services', 'forget', 'api', '--schema', schema]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/1 instance\(s\) of the service are running.*Potential fix: stop them first/);
    // api retired: forgetting it releases its declarations, which keep working until another service
    // declares them; rival's start then takes them over with its own values.
    await stop(api);
    const forgotten = await runCli(['services', 'forget', 'api', '--schema', schema, '--json']);
    expect(json(forgotten)).toEqual({ known: true, schedules: 1, limits: 2 });
    expect(await schedules(schema)).toEqual(['api-tick * * * * * * (null)']);
    const rival2 = await start(schema, 'rival', { RIVAL_LIMITS: '1' });
    expect(await schedules(schema)).toEqual(['api-tick */5 * * * * * (rival)']);
    expect(await limits(schema)).toEqual(['queue api concurrency 9 (rival)']);
    await stop(rival2);
  });
});

describe('a rolling deploy of one service', () => {
  it("keeps the new release's schedules and limits while old pods restart, and hands back to the old release once no new pod is left", async () => {
    const schema = newSchema('svcroll');
    const V1 = ['billing-tick * * * * * * (billing)'];
    const V2 = ['billing-report */2 * * * * * (billing)', 'billing-tick * * * * * * (billing)'];
    const queueLimit = async () =>
      (await sql<{ concurrency: number }>(`SELECT concurrency FROM "${schema}".job_queue WHERE name = 'billing'`))[0]!
        .concurrency;

    let old1 = await start(schema, 'billing');
    let old2 = await start(schema, 'billing');
    expect(await schedules(schema)).toEqual(V1);
    expect(await queueLimit()).toBe(2);

    // The first new pod takes over at once.
    const new1 = await start(schema, 'billing', { SERVICE_BUILD: 'v2' });
    expect(await schedules(schema)).toEqual(V2);
    expect(await queueLimit()).toBe(4);

    // Old pods restarting meanwhile (a crash loop, a node drained) change nothing.
    old1 = await restart(schema, old1, 'billing');
    expect(await schedules(schema)).toEqual(V2);
    expect(await queueLimit()).toBe(4);
    old2 = await restart(schema, old2, 'billing');
    expect(await schedules(schema)).toEqual(V2);
    expect(await queueLimit()).toBe(4);

    // The deploy goes on: old pods leave, a second new one comes.
    await stop(old1);
    const new2 = await start(schema, 'billing', { SERVICE_BUILD: 'v2' });
    await stop(old2);
    expect(await schedules(schema)).toEqual(V2);

    // A rollback: the old release's pods start while new ones still run, then the new ones leave.
    const back1 = await start(schema, 'billing');
    expect(await schedules(schema)).toEqual(V2);
    await stop(new1);
    await stop(new2);
    // The running old pod notices at its next check-in (every 10 s) that no new pod is left.
    await waitFor('the old release to take over', async () => (await schedules(schema)).join() === V1.join(), 20_000);
    expect(await queueLimit()).toBe(2);
    const back2 = await start(schema, 'billing');
    expect(await schedules(schema)).toEqual(V1);
    await stop(back1);
    await stop(back2);
  });
});
