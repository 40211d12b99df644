import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { INestApplication } from '@nestjs/common';
import { chromium, type Browser, type Page, type Response } from 'playwright-core';
import { Job, JobQueue, JobQueues, RecurringSchedules, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { JobsDashboardModule } from 'nestjs-durable-jobs/dashboard';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import {
  dashboardProviders,
  fragile,
  HOSTILE,
  seedDashboard,
  type DashboardSeed,
} from '../../support/dashboard.jobs.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { sleep, waitFor } from '../../support/wait.js';

/**
 * The dashboard in a real browser: headless Chromium (Debian's package,
 * driven by playwright-core) against an app on real PostgreSQL. One browser
 * and one page for the file; the tests run in order and share the data.
 * Without Chromium the file fails: a skipped browser test hides a broken page.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Two steps, then a sleep of an hour: a job with steps to show (in a queue the page lists already). */
@Job('dash-stepper', { queue: 'dash-ops' })
class Stepper implements JobHandler<{ order: string }> {
  async run({ order }: { order: string }, ctx: JobContext) {
    await ctx.step('charge', () => ({ id: `ch-${order}` }));
    await ctx.step('ship', () => ({ tracking: `tr-${order}` }));
    await ctx.sleep('cooling-off', 3_600_000);
  }
}

/** Three steps, then a failure on its first attempt: a job to retry from one of its steps. */
@Job('dash-rerun', { queue: 'dash-ops', maxAttempts: 1 })
class Rerun implements JobHandler<Record<string, never>> {
  static readonly calls: string[] = [];

  async run(_: Record<string, never>, ctx: JobContext) {
    for (const name of ['charge', 'ship', 'receipt']) {
      await ctx.step(name, () => Rerun.calls.push(`${name}#${ctx.attempt}`));
    }
    if (ctx.attempt === 1) throw new Error('the warehouse said no');
  }
}

/** Succeeds at its 23rd attempt: more history than the job view shows at first. */
@Job('dash-persistent', { queue: 'dash-ops', maxAttempts: 23, backoff: { type: 'fixed', delay: 0 } })
class Persistent implements JobHandler<Record<string, never>> {
  run(_: Record<string, never>, ctx: JobContext) {
    if (ctx.attempt < 23) throw new Error(`attempt ${ctx.attempt} missed`);
  }
}

/** Fails at once; its onFailure throws each run, rerun an hour later (a test makes the rerun due). */
@Job('dash-hooked', {
  queue: 'dash-ops',
  maxAttempts: 1,
  onFailureRetries: { attempts: 2, backoff: { type: 'fixed', delay: 3_600_000 } },
})
class Hooked implements JobHandler<Record<string, never>> {
  run(): never {
    throw new Error('the order broke');
  }

  onFailure(_: Record<string, never>, _error: Error, ctx: JobContext): never {
    throw new Error(`${HOSTILE} hook run ${ctx.attempt} broke`);
  }
}

const schema = uniqueSchema('dashweb');
let app: INestApplication;
let browser: Browser;
let page: Page;
let origin: string;
let seed: DashboardSeed;
/** Script errors, failed requests the page did not expect, CSP violations: the last test wants none. */
const problems: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `No Chromium at ${CHROMIUM}: the dashboard's browser tests need it and are not skipped. ` +
        `Potential fix: apt-get install -y chromium (.ci/run does), or set CHROMIUM_PATH to a Chromium binary.`,
    );
  }
  app = await startJobsApp(
    schema,
    // 'dash-elsewhere' is another service's job: this app enqueues it, and no worker here handles it.
    { worker: { pollInterval: 100 }, externalJobs: { 'dash-elsewhere': { queue: 'dash-ops' } } },
    {
      imports: [
        JobsDashboardModule.register({
          path: 'ops/jobs',
          title: 'Ops jobs',
          public: true,
          traceUrl: 'https://tempo.example/trace/{traceId}?span={spanId}',
        }),
      ],
      providers: [...dashboardProviders, Stepper, Persistent, Hooked, Rerun],
    },
  );
  await app.listen(0, '127.0.0.1');
  origin = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  [seed, browser] = await Promise.all([
    seedDashboard(app),
    chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }),
  ]);
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    // The location names the resource of a failed load, which the text leaves out.
    const at = message.location().url;
    if (message.type() === 'error' || message.type() === 'warning') problems.push(`console: ${message.text()} (${at})`);
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await dropSchemas(schema);
});

async function open(hash: string): Promise<void> {
  if (page.url().startsWith(`${origin}/ops/jobs`)) {
    await page.evaluate((h) => (location.hash = h), hash);
  } else {
    await page.goto(`${origin}/ops/jobs${hash}`);
  }
  await drawn(hash);
}

/** Waits until the page has drawn the view of `hash` (not the one before it). */
async function drawn(hash: string): Promise<void> {
  await page.waitForSelector(`#main[data-route="${hash}"]`, { state: 'attached' });
}

/** Clicks a button, checks the confirmation dialog says `what`, and confirms (or backs out). */
async function confirmClick(button: string, what: RegExp, confirm = true): Promise<void> {
  // The flash line of an earlier action must not pass for this one's.
  await page.evaluate(() => ((document.getElementById('flash') as HTMLElement).hidden = true));
  await page.locator(`main ${button}`).click();
  await page.waitForSelector('#confirm[open]');
  expect(await page.textContent('#confirm-text')).toMatch(what);
  await page.click(confirm ? '#confirm-ok' : '#confirm-cancel');
  await page.waitForSelector('#confirm', { state: 'hidden' });
}

/**
 * Saves what the page shows now as docs/public/<name>.png, the picture the docs site's Dashboard
 * page shows: taken here, on every run, it is always the page as it is.
 */
async function screenshot(name: string): Promise<void> {
  // The flash line of the last action is not part of the view.
  await page.evaluate(() => ((document.getElementById('flash') as HTMLElement).hidden = true));
  await page.screenshot({ path: fileURLToPath(new URL(`../../../docs/public/${name}.png`, import.meta.url)) });
}

async function flashed(): Promise<string> {
  await page.waitForSelector('#flash:not([hidden])');
  return (await page.textContent('#flash')) ?? '';
}

it('finds the failed job through the state filter, shows its attempts and payload as text, and retries it to success', async () => {
  await open('#/jobs');
  await page.selectOption('#filter-state', 'failed');
  await drawn('#/jobs?state=failed');
  const row = page.locator(`tr[data-id="${seed.failedId}"]`);
  await row.waitFor();
  expect(await page.locator('tbody tr[data-id]').count()).toBe(1);
  // The error's markup is text in the list, not an element.
  expect(await row.textContent()).toContain(`${HOSTILE} broke`);
  await row.locator('a').click();

  await page.waitForSelector('.detail[data-state="failed"]');
  expect(await page.textContent('.detail-title')).toBe('dash-fragile failed');
  const attempt = page.locator('tr[data-attempt="1"]');
  expect(await attempt.textContent()).toContain(`PermanentJobError: ${HOSTILE} broke`);
  const stack = attempt.locator('pre.stack');
  expect(await stack.isVisible()).toBe(false);
  await attempt.locator('summary').click();
  expect(await stack.isVisible()).toBe(true);
  expect(await stack.textContent()).toContain('PermanentJobError');
  expect(await page.textContent('#payload')).toContain(`"note": ${JSON.stringify(HOSTILE)}`);
  expect(await page.locator('main img').count()).toBe(0);
  expect(await page.evaluate(() => (window as { pwned?: boolean }).pwned)).toBeUndefined();
  expect(await page.locator('button:text-is("Cancel")').isDisabled()).toBe(true);

  // Backing out of the dialog does nothing; confirming retries, and this time it succeeds.
  await confirmClick('button:text-is("Retry")', /Queue dash-fragile .* again/, false);
  expect((await app.get(JobQueue).get(seed.failedId))?.state).toBe('failed');
  fragile.failing = false;
  await confirmClick('button:text-is("Retry")', /Queue dash-fragile .* again/);
  expect(await flashed()).toBe('Queued again.');
  await page.waitForSelector('.detail[data-state="succeeded"]', { timeout: 15_000 });
  expect(await page.locator('tr[data-attempt]').count()).toBe(2);
  expect(await page.textContent('tr[data-attempt="2"]')).toContain('succeeded');
  // Still open after the refreshes: the stack the operator unfolded stays unfolded.
  expect(await page.locator('tr[data-attempt="1"] pre.stack').isVisible()).toBe(true);
  expect(await page.textContent('#result')).toContain('"ok": true');
  await screenshot('dashboard-job');
});

it("links each attempt's trace to the tracing backend, its ids URL-encoded; an attempt without one shows none", async () => {
  // This app runs without an OpenTelemetry SDK: the ids a traced worker would have written are set here,
  // the failed attempt's on its history row and the success's on the job row. One is hostile.
  const [traced, hostile] = ['4bf92f3577b34da6a3ce929d0e0e4736', '"><img src=x onerror="window.pwned = true">/..'];
  await sql(`UPDATE "${schema}".job_execution SET trace_id = $2, span_id = '00f067aa0ba902b7' WHERE job_id = $1`, [
    seed.failedId,
    hostile,
  ]);
  await sql(`UPDATE "${schema}".job SET trace_id = $2, span_id = 'b7ad6b7169203331' WHERE id = $1`, [
    seed.failedId,
    traced,
  ]);
  await open(`#/jobs/${seed.failedId}`);
  await page.waitForSelector('tr[data-attempt="2"] a.trace');
  const link = async (attempt: number) => {
    const a = page.locator(`tr[data-attempt="${attempt}"] a.trace`);
    return { href: await a.getAttribute('href'), text: await a.textContent(), target: await a.getAttribute('target') };
  };
  expect(await link(2)).toEqual({
    href: `https://tempo.example/trace/${traced}?span=b7ad6b7169203331`,
    text: '4bf92f35…',
    target: '_blank',
  });
  expect((await link(1)).href).toBe(`https://tempo.example/trace/${encodeURIComponent(hostile)}?span=00f067aa0ba902b7`);
  expect(await page.locator('main img').count()).toBe(0);
  // A job that has not run yet has no attempt to link.
  await open(`#/jobs/${seed.delayedId}`);
  expect(await page.locator('main a.trace').count()).toBe(0);
});

it('pauses and resumes a schedule', async () => {
  const schedules = app.get(RecurringSchedules);
  await open('#/schedules');
  const row = `tr[data-schedule="${seed.schedule}"]`;
  await confirmClick(`${row} button:text-is("Pause")`, /Pause dash-hourly\?/);
  expect(await flashed()).toBe('Schedule dash-hourly paused.');
  await page.waitForSelector(`${row} .badge.paused`);
  expect((await schedules.get(seed.schedule))?.paused).toBe(true);
  await confirmClick(`${row} button:text-is("Resume")`, /Resume dash-hourly\?/);
  expect(await flashed()).toBe('Schedule dash-hourly resumed.');
  await page.waitForSelector(`${row} button:text-is("Pause")`);
  expect((await schedules.get(seed.schedule))?.paused).toBe(false);
});

it('pauses and resumes a queue', async () => {
  const paused = async () => (await app.get(JobQueues).list()).find((q) => q.name === 'dash-ops')?.paused;
  await open('#/queues');
  const row = 'tr[data-queue="dash-ops"]';
  await confirmClick(`${row} button:text-is("Pause")`, /Pause dash-ops\?/);
  await page.waitForSelector(`${row} .badge.paused`);
  expect(await paused()).toBe(true);
  await confirmClick(`${row} button:text-is("Resume")`, /Resume dash-ops\?/);
  await page.waitForSelector(`${row} button:text-is("Pause")`);
  expect(await paused()).toBe(false);
});

it('opens a batch from the list and draws its graph, whose boxes lead to the jobs', async () => {
  await open('#/batches');
  await page.click(`tr[data-id="${seed.batchId}"] a`);
  await page.waitForSelector('svg.dag');
  expect(await page.textContent('.detail-title')).toBe('dash-import succeeded');
  // Three members, the batch, then and finally, and an edge into every box but the members.
  expect(await page.locator('svg.dag g.node').count()).toBe(6);
  expect(await page.locator('svg.dag g.edge').count()).toBe(5);
  expect(await page.textContent('svg.dag')).toContain('then · succeeded');
  expect(await page.locator('main tbody tr[data-id]').count()).toBe(3);
  await screenshot('dashboard-batch');
  await page.locator('svg.dag a:has(g.node.kind-job)').first().click();
  await page.waitForSelector('.detail[data-state="succeeded"]');
  expect(await page.textContent('.detail-title')).toMatch(/^dash-(step|notify) succeeded$/);
});

it('draws a flow around a job, and bulk-cancels ticked jobs after confirming', async () => {
  await open(`#/jobs/${seed.flow.parse}`);
  await page.waitForSelector('svg.dag');
  expect(await page.locator('svg.dag g.node').count()).toBe(3);
  expect(await page.textContent('svg.dag')).toContain('failure');

  const jobs = app.get(JobQueue);
  const later = await Promise.all(
    [1, 2, 3].map((n) => jobs.enqueue('dash-notify', { what: `later ${n}` }, { delay: 3_600_000 })),
  );
  await open('#/jobs?state=scheduled&queue=dash-flow');
  await page.waitForSelector(`tr[data-id="${later[2]!.id}"]`);
  for (const job of later.slice(0, 2)) await page.check(`input[data-job="${job.id}"]`);
  expect(await page.textContent('.bulk')).toContain('2 selected');
  await confirmClick('button:text-is("Cancel selected")', /Cancel 2 selected job\(s\)\?/);
  expect(await flashed()).toBe('2 job(s) cancelled, 0 running job(s) asked to stop.');
  await page.waitForFunction(
    (gone) => gone.every((id) => !document.querySelector(`tr[data-id="${id}"]`)),
    later.slice(0, 2).map((j) => j.id),
  );
  expect(await page.locator(`tr[data-id="${later[2]!.id}"]`).count()).toBe(1);
  const states = await Promise.all(later.map(async (j) => (await jobs.get(j.id))?.state));
  expect(states).toEqual(['cancelled', 'cancelled', 'queued']);
});

it('runs a delayed job now and deletes it once ended, each after confirming', async () => {
  const jobs = app.get(JobQueue);
  await open(`#/jobs/${seed.delayedId}`);
  await page.waitForSelector('.detail[data-state="queued"]');
  expect(await page.locator('main button:text-is("Delete")').isDisabled()).toBe(true);
  await confirmClick('button:text-is("Run now")', /Make dash-step .* due now/);
  expect(await flashed()).toBe('Due now.');
  await page.waitForSelector('.detail[data-state="succeeded"]', { timeout: 15_000 });
  // The delete's answer reaches the page 3.5 s after the job is gone, longer than the page's
  // refresh interval (3 s): a refresh of the job's view meanwhile would be answered 404.
  await page.route('**/delete', async (route) => {
    const response = await route.fetch();
    await sleep(3_500);
    await route.fulfill({ response });
  });
  const viewStatuses: number[] = [];
  const onResponse = (r: Response) => {
    if (new URL(r.url()).pathname.endsWith(`/jobs/${seed.delayedId}`)) viewStatuses.push(r.status());
  };
  page.on('response', onResponse);
  try {
    await confirmClick('button:text-is("Delete")', /Delete dash-step .* for good\?/);
    expect(await flashed()).toBe('Deleted.');
    await drawn('#/jobs');
  } finally {
    page.off('response', onResponse);
    await page.unroute('**/delete');
  }
  expect(viewStatuses.filter((status) => status !== 200)).toEqual([]);
  expect(await jobs.get(seed.delayedId)).toBeNull();
});

it("refuses an action posted by another site's page", async () => {
  fragile.failing = true;
  const jobs = app.get(JobQueue);
  const { id } = await jobs.enqueue('dash-fragile', { note: 'cross-site' });
  await waitFor('the job to fail', async () => (await jobs.get(id))?.state === 'failed');
  // localhost and 127.0.0.1 are different sites to the browser: a form-like POST from one to the other.
  const other = await browser.newPage();
  try {
    // A page there without the dashboard's CSP (which would stop the request before it left).
    await other.goto(origin.replace('127.0.0.1', 'localhost') + '/ops/jobs/api/stats');
    const status = await other.evaluate(
      (url) => fetch(url, { method: 'POST', mode: 'no-cors', credentials: 'include' }).then((r) => r.type),
      `${origin}/ops/jobs/api/jobs/${id}/retry`,
    );
    expect(status).toBe('opaque');
  } finally {
    await other.close();
  }
  expect((await jobs.get(id))?.attempt).toBe(1);
  expect((await jobs.get(id))?.state).toBe('failed');
});

it('shows throughput per queue (the failure just above included) and keeps queue rows in place across refreshes', async () => {
  await open('#/');
  await page.waitForSelector('figure.chart[data-queue="dash-flow"] rect.bar-ok', { state: 'attached' });
  const failedBar = await page.$$eval('figure.chart[data-queue="dash-ops"] rect.bar-failed', (rects) =>
    rects.some((r) => Number(r.getAttribute('height')) > 0),
  );
  expect(failedBar).toBe(true);
  const order = () => page.$$eval('tr[data-queue]', (rows) => rows.map((r) => (r as HTMLElement).dataset.queue));
  const first = await order();
  expect(first).toEqual(['dash-flow', 'dash-ops']);
  const updated = await page.textContent('#status');
  await page.waitForFunction((before) => document.getElementById('status')!.textContent !== before, updated);
  expect(await order()).toEqual(first);
  await screenshot('dashboard');
});

it("shows each worker's open connections beside its maxConnections", async () => {
  await open('#/');
  const cell = page.locator('td.connections').first();
  await cell.waitFor();
  expect(await cell.textContent()).toMatch(/^[1-9]\d* \/ 10$/);
});

it("shows a job's finished steps and its sleep, each step's result folded", async () => {
  const jobs = app.get(JobQueue);
  const { id } = await jobs.enqueue(Stepper, { order: 'web' });
  await waitFor('the job to sleep after its steps', async () => (await jobs.get(id))?.steps.length === 3);
  await open(`#/jobs/${id}`);
  const rows = page.locator('tr[data-step]');
  await rows.first().waitFor();
  expect(await rows.evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.step))).toEqual([
    'charge',
    'ship',
    'cooling-off',
  ]);
  expect(await page.textContent('tr[data-step="cooling-off"]')).toContain('sleep');
  const charge = page.locator('tr[data-step="charge"] details');
  await charge.locator('summary').click();
  expect(await charge.locator('pre').textContent()).toContain('"id": "ch-web"');
  // A sleep has no result to show.
  expect(await page.locator('tr[data-step="cooling-off"] details').count()).toBe(0);
});

it('retries a failed job from one of its steps: that step and the later ones run again, the earlier one is kept', async () => {
  const jobs = app.get(JobQueue);
  const { id } = await jobs.enqueue(Rerun, {});
  await waitFor('the job to fail after its steps', async () => (await jobs.get(id))?.state === 'failed');
  await open(`#/jobs/${id}`);
  await page.waitForSelector('.detail[data-state="failed"]');
  expect(await page.locator('tr[data-step] button:text-is("Retry from here")').count()).toBe(3);

  await confirmClick(
    'tr[data-step="ship"] button:text-is("Retry from here")',
    /^Queue dash-rerun \S+ again from step "ship"\? It and the 1 recorded after it run again; the 1 before it keep their records\.$/,
  );
  expect(await flashed()).toBe('Queued again from step "ship".');
  await page.waitForSelector('.detail[data-state="succeeded"]', { timeout: 15_000 });
  expect(Rerun.calls).toEqual(['charge#1', 'ship#1', 'receipt#1', 'ship#2', 'receipt#2']);
  const attempts = await page.$$eval('tr[data-step]', (rows) =>
    rows.map((r) => [(r as HTMLElement).dataset.step, r.querySelector('td.n')?.textContent]),
  );
  expect(attempts).toEqual([
    ['charge', '1'],
    ['ship', '2'],
    ['receipt', '2'],
  ]);
  // A job that cannot be retried offers no step to retry from.
  expect(await page.locator('tr[data-step] button').count()).toBe(0);
});

it("shows a failed job's onFailure hook: its state, its runs, its rerun and its last error as text", async () => {
  const jobs = app.get(JobQueue);
  const { id } = await jobs.enqueue(Hooked, {});
  await waitFor('the hook to wait for its rerun', async () => (await jobs.get(id))?.failureHook?.attempts === 1);
  await open(`#/jobs/${id}`);
  const hook = page.locator('#failure-hook[data-hook-state="pending"]');
  await hook.waitFor();
  expect(await hook.locator('.badge').textContent()).toBe('pending');
  expect(await hook.locator('dl').textContent()).toMatch(/^state\s*pending\s*runs\s*1\s*next run\s*\S.*\(in /);
  expect(await hook.locator('.err-msg').textContent()).toMatch(
    /^Error: <img src=x onerror="window.pwned = true"> hook run \d+ broke$/,
  );

  // Its rerun made due throws too: its runs are used up.
  await sql(`UPDATE "${schema}".job SET hook_run_at = now() WHERE id = $1`, [id]);
  await waitFor('the hook to fail for good', async () => (await jobs.get(id))?.failureHook?.state === 'failed', 15_000);
  const failed = page.locator('#failure-hook[data-hook-state="failed"]');
  await failed.waitFor({ timeout: 15_000 });
  expect(await failed.locator('dl').textContent()).toMatch(/^state\s*failed\s*runs\s*2$/);
  expect(await failed.locator('.err-msg').textContent()).toContain(`${HOSTILE} hook run`);
  expect(await page.locator('main img').count()).toBe(0);
  expect(await page.evaluate(() => (window as { pwned?: boolean }).pwned)).toBeUndefined();
  // A job without a hook to show (the retried one, now succeeded) has no such section.
  await open(`#/jobs/${seed.failedId}`);
  await page.waitForSelector('.detail[data-state="succeeded"]');
  expect(await page.locator('#failure-hook').count()).toBe(0);
});

it("offers the known queues in the jobs list's queue filter, and filters by the one chosen", async () => {
  await open('#/jobs');
  await page.waitForSelector('#filter-queue option[value="dash-ops"]', { state: 'attached' });
  const options = await page.$$eval('#filter-queue option', (os) => os.map((o) => (o as HTMLOptionElement).value));
  expect(options).toEqual(['', 'dash-flow', 'dash-ops']);
  await page.selectOption('#filter-queue', 'dash-flow');
  await drawn('#/jobs?queue=dash-flow');
  const queues = await page.$$eval('main tbody tr[data-id] td:nth-child(4)', (tds) => tds.map((td) => td.textContent));
  expect(queues.length).toBeGreaterThan(0);
  expect(new Set(queues)).toEqual(new Set(['dash-flow']));
});

it('shows the latest attempts of a long history and adds the older ones on demand', async () => {
  const jobs = app.get(JobQueue);
  const { id } = await jobs.enqueue(Persistent, {});
  await waitFor('the persistent job to succeed', async () => (await jobs.get(id))?.state === 'succeeded');
  await open(`#/jobs/${id}`);
  await page.waitForSelector('.detail[data-state="succeeded"]');
  const attempts = () =>
    page.$$eval('tr[data-attempt]', (rows) => rows.map((r) => Number((r as HTMLElement).dataset.attempt)));
  expect(await attempts()).toEqual(Array.from({ length: 21 }, (_, i) => i + 3));
  await page.click('#older-attempts');
  await page.waitForSelector('#older-attempts', { state: 'detached' });
  expect(await attempts()).toEqual(Array.from({ length: 23 }, (_, i) => i + 1));
  expect(await page.textContent('tr[data-attempt="1"]')).toContain('attempt 1 missed');
  // The body's refresh draws them again.
  const updated = await page.textContent('#status');
  await page.waitForFunction((before) => document.getElementById('status')?.textContent !== before, updated);
  expect(await attempts()).toEqual(Array.from({ length: 23 }, (_, i) => i + 1));
});

it('filters the jobs list by a part of the name', async () => {
  await open('#/jobs');
  await page.fill('#filter-contains', 'PERSIST');
  await page.click('.filters button[type="submit"]');
  await drawn('#/jobs?contains=PERSIST');
  await page.waitForSelector('tbody tr[data-id]');
  const names = await page.$$eval('tbody tr[data-id]', (rows) => rows.map((r) => r.textContent ?? ''));
  expect(names.length).toBe(1);
  expect(names[0]).toContain('dash-persistent');
});

it('warns of due jobs no live worker handles, with their name, queue, count and age, and drops the warning once they are gone', async () => {
  const jobs = app.get(JobQueue);
  const ids = [(await jobs.enqueue('dash-elsewhere', {})).id, (await jobs.enqueue('dash-elsewhere', {})).id];
  await open('#/');
  const row = page.locator('section.unhandled tr[data-unhandled-name="dash-elsewhere"]');
  await row.waitFor();
  expect(await page.textContent('section.unhandled h2')).toBe('Jobs no live worker handles');
  expect(await row.locator('td').allTextContents()).toEqual([
    'dash-elsewhere',
    'dash-ops',
    '2',
    expect.stringMatching(/\(.+\)$/),
  ]);
  await row.locator('a').first().click();
  await drawn('#/jobs?state=queued&name=dash-elsewhere&queue=dash-ops');
  await page.waitForSelector('main tr[data-id]');
  expect(await page.locator('main tr[data-id]').count()).toBe(2);
  for (const id of ids) await jobs.cancel(id);
  await open('#/');
  await page.waitForSelector('section.cards');
  expect(await page.locator('section.unhandled').count()).toBe(0);
});

it('ran without script errors or CSP violations', () => {
  expect(problems).toEqual([]);
});
