import { ForbiddenException, type CanActivate, type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { BatchBuilder, JobQueue, JobQueues, JobsAdmin, JobsError, RecurringSchedules } from 'nestjs-durable-jobs';
import { JobsDashboardModule } from 'nestjs-durable-jobs/dashboard';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import { DEMO_HEARTBEATS, DEMO_SCHEDULE } from '../../../sample/demo/demo.service.js';
import { dropSchemas, uniqueSchema } from '../../support/database.js';
import {
  dashboardProviders,
  fragile,
  HOSTILE,
  Notify,
  seedDashboard,
  Step,
  type DashboardSeed,
} from '../../support/dashboard.jobs.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { startSampleApp } from '../../support/sample-app.js';
import { waitFor } from '../../support/wait.js';

const schemas: string[] = [];
const apps: INestApplication[] = [];
const UNKNOWN = '01a00000-0000-7000-8000-000000000000';

afterAll(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
  await dropSchemas(...schemas);
});

describe('JobsDashboardModule.register()', () => {
  it('is closed by default: neither guards nor public: true fails the start, naming the fix', () => {
    const fix = 'Potential fix: register({ guards: [AuthGuard] }) or register({ public: true }) for a trusted network';
    for (const options of [undefined, {}, { guards: [] }, { public: false }, { path: 'ops' }]) {
      expect(() => JobsDashboardModule.register(options)).toThrow(JobsError);
      expect(() => JobsDashboardModule.register(options)).toThrow(fix);
    }
    const bad: Array<[unknown, RegExp]> = [
      [{ public: 'yes' }, /"public" must be true or false/],
      [{ public: true, guards: [{ canActivate: () => true }] }, /yet guards were given/],
      [{ guards: 'AuthGuard' }, /"guards" must be an array/],
      [{ guards: [42] }, /guards\[0\] is 42/],
      [{ public: true, path: '../x y' }, /"path" must be a URL path/],
      [{ public: true, title: '' }, /"title" must be a non-empty string/],
      [{ public: true, allowedOrigins: ['not a url'] }, /"allowedOrigins" must be an array of origins/],
      [{ public: true, traceUrl: 'https://tempo.example/trace/' }, /"traceUrl" must be a URL holding \{traceId\}/],
      [{ public: true, traceUrl: 42 }, /"traceUrl" must be a URL holding \{traceId\}, .*got 42/],
      [{ public: true, traceUrl: 'javascript:alert({traceId})' }, /"traceUrl" must be an absolute http or https URL/],
      [
        { public: true, traceUrl: '{traceId}https://tempo.example' },
        /"traceUrl" must be an absolute http or https URL/,
      ],
      [{ public: true, traceUrl: '/trace/{traceId}' }, /"traceUrl" must be an absolute http or https URL/],
      [{ public: true, guard: [] }, /unknown option "guard". Did you mean "guards"\?/],
      ['open', /the options must be an object/],
    ];
    for (const [options, message] of bad) {
      expect(() => JobsDashboardModule.register(options as never)).toThrow(message);
      expect(() => JobsDashboardModule.register(options as never)).toThrow(/Potential fix/);
    }
  });

  it('every route sits behind the guards it is given, the page and its assets too', async () => {
    const schema = uniqueSchema('dashguard');
    schemas.push(schema);
    const deny: CanActivate = {
      canActivate: () => {
        throw new ForbiddenException('operators only');
      },
    };
    const guarded = await startJobsApp(
      schema,
      { worker: { enabled: false } },
      { imports: [JobsDashboardModule.register({ guards: [deny] })] },
    );
    apps.push(guarded);
    const http = request(guarded.getHttpServer());
    const gets = [
      '',
      '/assets/dashboard.js',
      '/assets/router.js',
      '/assets/dashboard.css',
      '/api/stats',
      '/api/jobs',
      '/api/queues',
    ];
    for (const path of [
      ...gets,
      '/api/batches',
      '/api/schedules',
      '/api/throughput',
      '/api/unhandled',
      `/api/jobs/${UNKNOWN}`,
    ]) {
      expect([path, (await http.get(`/jobs-dashboard${path}`)).body.message]).toEqual([path, 'operators only']);
    }
    for (const path of [`/api/jobs/${UNKNOWN}/retry`, '/api/jobs/retry', '/api/queues/x/pause']) {
      await http.post(`/jobs-dashboard${path}`).expect(403);
    }
  });
});

describe('the dashboard over HTTP', () => {
  let app: INestApplication;
  let http: ReturnType<typeof request>;
  let seed: DashboardSeed;
  const api = (path: string) => `/ops/jobs/api${path}`;

  beforeAll(async () => {
    const schema = uniqueSchema('dash');
    schemas.push(schema);
    app = await startJobsApp(
      schema,
      { worker: { pollInterval: 100 } },
      {
        imports: [
          JobsDashboardModule.register({
            path: '/ops/jobs/',
            title: `Ops ${HOSTILE}`,
            public: true,
            allowedOrigins: ['https://ops.example.com'],
          }),
        ],
        providers: dashboardProviders,
      },
    );
    apps.push(app);
    http = request(app.getHttpServer());
    seed = await seedDashboard(app);
  });

  it('serves the page, its script modules and stylesheets, with the title escaped and a strict CSP', async () => {
    const page = await http
      .get('/ops/jobs')
      .expect(200)
      .expect('content-type', /text\/html/);
    expect(page.text).toContain('<title>Ops &#60;img src=x onerror=&#34;window.pwned = true&#34;&#62;</title>');
    expect(page.text).not.toContain(HOSTILE);
    expect(page.text).toContain('<script type="module" src="/ops/jobs/assets/dashboard.js"></script>');
    expect(page.headers['content-security-policy']).toMatch(/script-src 'self'; style-src 'self'/);
    expect(page.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    const stylesheets = [...page.text.matchAll(/<link rel="stylesheet" href="([^"]+)">/g)].map((m) => m[1]!);
    expect(stylesheets).toEqual(['/ops/jobs/assets/dashboard.css', '/ops/jobs/assets/views.css']);
    // Every module the entry imports, and theirs, followed from the served text: each is served as JavaScript.
    const modules = new Map<string, string>();
    const pending = ['dashboard.js'];
    while (pending.length) {
      const name = pending.pop()!;
      if (modules.has(name)) continue;
      const served = await http
        .get(`/ops/jobs/assets/${name}`)
        .expect(200)
        .expect('content-type', 'text/javascript; charset=utf-8')
        .expect('cache-control', 'no-cache')
        .expect('x-content-type-options', 'nosniff');
      modules.set(name, served.text);
      for (const [, imported] of served.text.matchAll(/^import [^;]*? from '\.\/([\w-]+\.js)';$/gm)) {
        pending.push(imported!);
      }
    }
    expect([...modules.keys()].sort()).toEqual([
      'api.js',
      'batches.js',
      'dashboard.js',
      'dom.js',
      'format.js',
      'graph.js',
      'job-errors.js',
      'job-steps.js',
      'job.js',
      'jobs.js',
      'operations.js',
      'overview.js',
      'replica.js',
      'router.js',
    ]);
    const styles: string[] = [];
    for (const href of stylesheets) {
      const css = await http
        .get(href)
        .expect(200)
        .expect('content-type', 'text/css; charset=utf-8')
        .expect('cache-control', 'no-cache');
      styles.push(css.text);
    }
    // Nothing fetched from elsewhere: no absolute URL in the page, the scripts or the stylesheets but the SVG namespace.
    const script = [...modules.values()].join('\n');
    expect(script.match(/https?:\/\/[^\s'"]+/g)).toEqual(['http://www.w3.org/2000/svg']);
    for (const text of [page.text, ...styles]) expect(text.match(/https?:\/\/[^\s'"]+/g) ?? []).toEqual([]);
    expect(script).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
    // Only the page's own files: no other name, and no path out of the folder.
    for (const name of ['nope.js', 'page-assets.ts', '..%2Fjobs-dashboard.module.ts', '%2E%2E%2Fpage%2Fpage-html.ts']) {
      const missing = await http.get(`/ops/jobs/assets/${name}`).expect(404);
      expect(missing.body.message).toMatch(/no asset named .*Potential fix/);
    }
    // The page asked at /ops/jobs/ resolves its script the same way.
    expect((await http.get('/ops/jobs/').expect(200)).text).toContain('"/ops/jobs/assets/dashboard.js"');
  });

  it('lists jobs by state (scheduled included), queue, name and id prefix, newest first', async () => {
    const failed = await http.get(api('/jobs?state=failed')).expect(200);
    expect(failed.body.jobs.map((j: { id: string }) => j.id)).toEqual([seed.failedId]);
    const scheduled = await http.get(api('/jobs?state=scheduled')).expect(200);
    expect(scheduled.body.jobs.map((j: { id: string }) => j.id)).toEqual([seed.delayedId]);
    const both = await http.get(api('/jobs?state=failed&state=scheduled')).expect(200);
    expect(both.body.jobs.map((j: { id: string }) => j.id)).toEqual([seed.delayedId, seed.failedId]);
    const byPrefix = await http.get(api(`/jobs?id=${seed.failedId.slice(0, 13)}`)).expect(200);
    expect(byPrefix.body.jobs.map((j: { id: string }) => j.id)).toContain(seed.failedId);
    const flow = await http.get(api('/jobs?queue=dash-flow&name=dash-notify')).expect(200);
    expect(flow.body.jobs.every((j: { name: string }) => j.name === 'dash-notify')).toBe(true);
    const page = await http.get(api('/jobs?limit=2')).expect(200);
    const next = await http.get(api(`/jobs?limit=2&before=${page.body.next}`)).expect(200);
    expect(next.body.jobs[0].id < page.body.jobs[1].id).toBe(true);
  });

  it("shows a job's detail with its attempts and edges, its flow graph, and a batch with its graph", async () => {
    const detail = await http.get(api(`/jobs/${seed.failedId}`)).expect(200);
    expect(detail.body).toMatchObject({
      state: 'failed',
      payload: { note: HOSTILE },
      lastError: expect.objectContaining({ name: 'PermanentJobError' }),
    });
    expect(detail.body.executions).toEqual([
      expect.objectContaining({
        attempt: 1,
        state: 'failed',
        error: expect.objectContaining({ name: 'PermanentJobError' }),
      }),
    ]);
    const fetch = await http.get(api(`/jobs/${seed.flow.fetch}`)).expect(200);
    expect(fetch.body.children.map((e: { on: string }) => e.on).sort()).toEqual(['failure', 'success']);
    const graph = await http.get(api(`/jobs/${seed.flow.parse}/graph`)).expect(200);
    expect(graph.body.nodes.map((n: { id: string }) => n.id).sort()).toEqual(Object.values(seed.flow).sort());
    expect(graph.body.edges).toHaveLength(2);
    expect(graph.body.nodes.find((n: { id: string }) => n.id === seed.flow.parse).x).toBeGreaterThan(
      graph.body.nodes.find((n: { id: string }) => n.id === seed.flow.fetch).x,
    );

    const batches = await http.get(api('/batches?state=succeeded')).expect(200);
    expect(batches.body.batches).toEqual([expect.objectContaining({ id: seed.batchId, total: 3, succeeded: 3 })]);
    await http.get(api(`/batches/${seed.batchId}`)).expect(200);
    const members = await http.get(api(`/batches/${seed.batchId}/members?take=2`)).expect(200);
    expect(members.body).toHaveLength(2);
    const batchGraph = await http.get(api(`/batches/${seed.batchId}/graph`)).expect(200);
    // Three members, the batch, then and finally.
    expect(batchGraph.body.nodes).toHaveLength(6);
    expect(batchGraph.body.nodes.map((n: { role?: string }) => n.role).sort()).toEqual(
      ['batch', 'finally', 'member', 'member', 'member', 'then'].sort(),
    );
  });

  it("groups a large batch's members by name and state in its graph", async () => {
    const builder = app.get(BatchBuilder).create('dash-big');
    for (let n = 0; n < 30; n++) builder.add(Step, { n });
    const big = await builder.then(Notify, { what: 'all imported' }).dispatch();
    await waitFor(
      'the big batch to settle',
      async () => (await app.get(JobQueue).batchStatus(big.id))?.state === 'succeeded',
    );
    const graph = (await http.get(api(`/batches/${big.id}/graph`)).expect(200)).body;
    expect(graph.nodes.map((n: { kind: string; count?: number }) => [n.kind, n.count])).toEqual([
      ['group', 30],
      ['batch', undefined],
      ['job', undefined],
    ]);
    expect(graph.edges).toHaveLength(2);
  });

  it('serves counts, workers, queues with limits, throughput and schedules', async () => {
    expect((await http.get(api('/stats')).expect(200)).body.queues['dash-ops']).toMatchObject({ failed: 1 });
    // Its worker names no queues: it serves them all, and says so.
    expect((await http.get(api('/workers')).expect(200)).body).toEqual([
      expect.objectContaining({ alive: true, queues: 'all', connections: { open: expect.any(Number), max: 10 } }),
    ]);
    await app.get(JobQueues).setLimits('dash-flow', { concurrency: 3 });
    const queues = (await http.get(api('/queues')).expect(200)).body;
    expect(queues.map((q: { name: string }) => q.name)).toEqual(['dash-flow', 'dash-ops']);
    expect(queues[0]).toMatchObject({
      concurrency: { value: 3, source: 'runtime' },
      paused: false,
      scheduled: 1,
      groups: { concurrency: null, overrides: [] },
    });
    const throughput = (await http.get(api('/throughput?minutes=5')).expect(200)).body;
    const sum = (q: string, k: 'succeeded' | 'failed') =>
      throughput.queues[q].reduce((a: number, p: Record<string, number>) => a + p[k]!, 0);
    expect(sum('dash-ops', 'failed')).toBe(1);
    expect(sum('dash-flow', 'succeeded')).toBeGreaterThanOrEqual(5);
    const schedules = (await http.get(api('/schedules')).expect(200)).body;
    expect(schedules).toEqual([expect.objectContaining({ name: seed.schedule, paused: false })]);
    // Its worker handles every job name the app enqueues.
    expect((await http.get(api('/unhandled')).expect(200)).body).toEqual([]);
    await http.get(api('/unhandled?queue=x')).expect(400);
  });

  it('acts only through POST: retry, cancel, run now, delete, bulk, schedules and queues', async () => {
    // A GET to an action is no route at all.
    for (const path of [`/jobs/${seed.failedId}/retry`, `/jobs/${seed.delayedId}/run-now`, '/queues/dash-ops/pause']) {
      await http.get(api(path)).expect(404);
    }
    await http
      .post(api(`/schedules/${seed.schedule}/pause`))
      .expect(200)
      .expect((r) => expect(r.body.paused).toBe(true));
    await http
      .post(api(`/schedules/${seed.schedule}/resume`))
      .expect(200)
      .expect((r) => expect(r.body.paused).toBe(false));
    const run = await http.post(api(`/schedules/${seed.schedule}/run`)).expect(200);
    expect(run.body.jobId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await app.get(RecurringSchedules).get(seed.schedule))?.paused).toBe(false);
    await http.post(api('/queues/dash-ops/pause')).expect(204);
    expect((await app.get(JobQueues).list()).find((q) => q.name === 'dash-ops')?.paused).toBe(true);
    await http.post(api('/queues/dash-ops/resume')).expect(204);

    const moved = await http.post(api(`/jobs/${seed.delayedId}/run-now`)).expect(200);
    expect(moved.body).toMatchObject({ id: seed.delayedId, queue: 'dash-flow' });
    await waitFor(
      'the delayed job to run',
      async () => (await app.get(JobQueue).get(seed.delayedId))?.state === 'succeeded',
    );
    expect((await http.post(api(`/jobs/${seed.delayedId}/delete`)).expect(200)).body).toEqual({
      id: seed.delayedId,
      state: 'succeeded',
    });
    await http.get(api(`/jobs/${seed.delayedId}`)).expect(404);

    // Bulk: ticked ids, or every match said on purpose; an empty body retries nothing.
    expect((await http.post(api('/jobs/retry')).send({}).expect(400)).body.message).toMatch(
      /no jobs named.*Potential fix/,
    );
    fragile.failing = true;
    const retried = await http
      .post(api('/jobs/retry'))
      .send({ ids: [seed.failedId] })
      .expect(200);
    expect(retried.body).toEqual({ count: 1, ids: [seed.failedId] });
    await waitFor('the job to fail again', async () => (await app.get(JobQueue).get(seed.failedId))?.attempt === 2);
    await waitFor('it to end', async () => (await app.get(JobQueue).get(seed.failedId))?.state === 'failed');
    const all = await http.post(api('/jobs/retry')).send({ all: true, queue: 'dash-ops' }).expect(200);
    expect(all.body.count).toBe(1);
    await waitFor('it to fail a third time', async () => {
      const job = await app.get(JobQueue).get(seed.failedId);
      return job?.state === 'failed' && job.attempt === 3;
    });
    const later = await app.get(JobQueue).enqueue('dash-notify', { what: 'later' }, { delay: 3_600_000 });
    const cancelled = await http
      .post(api('/jobs/cancel'))
      .send({ all: true, state: ['scheduled'], queue: 'dash-flow' })
      .expect(200);
    expect(cancelled.body).toEqual({ cancelled: 1, requested: 0, ids: [later.id] });
  });

  it('refuses cross-site POSTs with a 403 naming the fix, and takes same-origin ones', async () => {
    const path = api(`/jobs/${UNKNOWN}/cancel`);
    const refused: Array<Record<string, string>> = [
      { origin: 'http://evil.example' },
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site', origin: 'http://sub.127.0.0.1' },
    ];
    for (const headers of refused) {
      const res = await http.post(path).set(headers).expect(403);
      expect(res.body.message).toMatch(/^Jobs dashboard: action refused because .*Potential fix/);
    }
    // Same host, an allowed origin, or no browser headers at all reach the action (here: a 404, no such job).
    const server = app.getHttpServer();
    await app.listen(0, '127.0.0.1');
    const { port } = server.address() as { port: number };
    const own = `http://127.0.0.1:${port}`;
    await request(own).post(path).set({ origin: own, 'sec-fetch-site': 'same-origin' }).expect(404);
    await http.post(path).set({ origin: 'https://ops.example.com' }).expect(404);
    await http.post(path).expect(404);
    // GETs are not actions: another site may read nothing it could not read anyway, but is not refused here.
    await http.get(api('/stats')).set({ origin: 'http://evil.example' }).expect(200);
  });

  it('answers bad input with a 400 naming the fix and unknown ids with a 404, never a 500', async () => {
    const bad: Array<['get' | 'post', string, RegExp, object?]> = [
      ['get', '/jobs?state=gone', /"state" must be one of/],
      ['get', '/jobs?queue=%00', /"queue" holds a control character/],
      ['get', `/jobs?queue=${'q'.repeat(9000)}`, /"queue" is 9000 characters long/],
      ['get', '/jobs?queue=a&queue=b', /"queue" was given 2 times/],
      ['get', '/jobs?queue[x]=a', /unknown query parameter "queue\[x\]"/],
      ['get', '/jobs?limit=abc', /"limit" must be an integer from 1 to 500/],
      ['get', '/jobs?limit=501', /"limit" must be an integer from 1 to 500/],
      ['get', '/jobs?before=x', /"before" must be an id/],
      ['get', '/jobs?id=zz', /"idPrefix" must be the start of a job id/],
      ['get', '/jobs?stat=failed', /unknown query parameter "stat"/],
      ['get', '/jobs/not-a-uuid', /is not a job id/],
      ['get', '/jobs/not-a-uuid/graph', /is not a job id/],
      ['get', '/batches?state=done', /"state" must be one of/],
      ['get', '/batches/nope', /is not a batch id/],
      ['get', `/batches/${seed.batchId}/members?take=0`, /"take" must be an integer/],
      ['get', '/throughput?minutes=1441', /"minutes" must be an integer from 1 to 1440/],
      ['post', '/jobs/not-a-uuid/retry', /retry\(\): the string "not-a-uuid" is not a job id/],
      ['post', '/jobs/%20/cancel', /cancel\(\): the string " " is not a job id/],
      ['post', `/jobs/${seed.failedId}/cancel`, /already ended "failed".*Potential fix/],
      ['post', `/jobs/${seed.flow.fetch}/run-now`, /only a queued job due later/],
      ['post', `/jobs/${seed.failedId}/retry`, /retry: unknown field "resetSteps"/, { resetSteps: true }],
      ['post', `/jobs/${seed.failedId}/retry`, /"fromStep" must be a step's name/, { fromStep: 7 }],
      ['post', `/jobs/${seed.failedId}/retry`, /the job recorded no step named "nope"/, { fromStep: 'nope' }],
      ['post', '/jobs/retry', /"ids" must be a non-empty array/, { ids: [] }],
      ['post', '/jobs/retry', /ids\[0\]: the string "x" is not a job id/, { ids: ['x'] }],
      ['post', '/jobs/retry', /"state" must be one of failed, cancelled, skipped/, { all: true, state: 'queued' }],
      ['post', '/jobs/cancel', /unknown field "every"/, { every: true }],
      ['post', '/jobs/cancel', /the body must be a JSON object/, [1]],
    ];
    for (const [method, path, message, body] of bad) {
      const call = method === 'get' ? http.get(api(path)) : http.post(api(path));
      const res = await (body === undefined ? call : call.send(body));
      expect([path, res.status, res.body.message]).toEqual([path, 400, expect.stringMatching(message)]);
      expect([path, res.body.message]).toEqual([path, expect.stringMatching(/Potential fix/)]);
    }
    // A body that is not JSON at all is the body parser's 400.
    await http.post(api('/jobs/retry')).set('content-type', 'application/json').send('{nope').expect(400);
    const notFound = [
      ['get', `/jobs/${UNKNOWN}`],
      ['get', `/jobs/${UNKNOWN}/graph`],
      ['post', `/jobs/${UNKNOWN}/retry`],
      ['post', `/jobs/${UNKNOWN}/cancel`],
      ['post', `/jobs/${UNKNOWN}/run-now`],
      ['post', `/jobs/${UNKNOWN}/delete`],
      ['get', `/batches/${UNKNOWN}`],
      ['get', `/batches/${UNKNOWN}/graph`],
      ['post', `/batches/${UNKNOWN}/cancel`],
      ['post', '/schedules/nope/pause'],
      ['post', '/schedules/nope/resume'],
      ['post', '/schedules/nope/run'],
      ['post', '/queues/nope/pause'],
      ['post', '/queues/nope/resume'],
    ];
    for (const [method, path] of notFound) {
      const res = await (method === 'get' ? http.get(api(path!)) : http.post(api(path!)));
      expect([path, res.status]).toEqual([path, 404]);
      expect(res.body.message).toMatch(/Potential fix/);
    }
  });

  it("a job that succeeded on a retry shows its earlier errors as its attempts', not as its own", async () => {
    fragile.failing = false;
    await http.post(api(`/jobs/${seed.failedId}/retry`)).expect(204);
    await waitFor('the retried job to succeed', async () => {
      return (await app.get(JobQueue).get(seed.failedId))?.state === 'succeeded';
    });
    const detail = (await http.get(api(`/jobs/${seed.failedId}`)).expect(200)).body;
    expect(detail).toMatchObject({ state: 'succeeded', lastError: null });
    const states = detail.executions.map((e: { state: string; error: { name: string } | null }) => [
      e.state,
      e.error?.name ?? null,
    ]);
    expect(states.at(-1)).toEqual(['succeeded', null]);
    expect(states.slice(0, -1).every(([state, error]: string[]) => state === 'failed' && error)).toBe(true);
    expect(states.length).toBeGreaterThan(1);
    const listed = (await http.get(api('/jobs?state=succeeded&queue=dash-ops')).expect(200)).body.jobs;
    expect(listed).toEqual([expect.objectContaining({ id: seed.failedId, lastError: null })]);
  });
});

describe('sample app', () => {
  let app: INestApplication;
  const clock = new ManualClock(new Date('2026-11-01T10:00:00Z'));

  beforeAll(async () => {
    const schema = uniqueSchema('dashsample');
    schemas.push(schema, `${schema}_jobs`);
    app = await startSampleApp({
      schema,
      worker: { pollInterval: 100 },
      unregisteredJobs: 'ignore',
      demo: true,
      clock,
    });
    apps.push(app);
  });

  it('serves the dashboard at /dashboard, open on purpose', async () => {
    const page = await request(app.getHttpServer()).get('/dashboard').expect(200);
    expect(page.text).toContain('<h1 id="title">Sample jobs</h1>');
    await request(app.getHttpServer()).get('/dashboard/api/stats').expect(200);
    await request(app.getHttpServer()).get('/dashboard/api/schedules').expect(200);
  });

  it('the demo schedule runs a few times, then pauses itself and stays quiet', async () => {
    const schedules = app.get(RecurringSchedules);
    const heartbeats = async () => (await app.get(JobsAdmin).search({ name: 'heartbeat', limit: 500 })).jobs;
    for (let run = 1; run <= DEMO_HEARTBEATS; run++) {
      clock.advance(5_000);
      await schedules.runDue();
      await waitFor(`heartbeat ${run} to succeed`, async () => {
        const jobs = await heartbeats();
        return jobs.length === run && jobs.every((j) => j.state === 'succeeded');
      });
    }
    await waitFor('the demo schedule to pause', async () => (await schedules.get(DEMO_SCHEDULE))?.paused === true);
    // A minute of ticks later: a paused schedule enqueues none (runDue has made a full pass when it returns).
    clock.advance(60_000);
    await schedules.runDue();
    expect(await heartbeats()).toHaveLength(DEMO_HEARTBEATS);
  });
});
