import { ForbiddenException, type CanActivate, type INestApplication } from '@nestjs/common';
import { JSDOM } from 'jsdom';
import request from 'supertest';
import {
  Job,
  JobQueue,
  JobsDashboardModule,
  JobsMonitor,
  PermanentJobError,
  type JobHandler,
} from 'nestjs-durable-jobs';
import { dropSchemas, uniqueSchema } from '../support/database.js';
import { startJobsApp } from '../support/jobs-app.js';
import { startSampleApp } from '../support/sample-app.js';
import { waitFor } from '../support/wait.js';

/** Fails for good with markup in its message: the page must show it as text. */
@Job('breaks', { queue: 'ops' })
class Breaks implements JobHandler<null> {
  run(): never {
    throw new PermanentJobError('<img src=x onerror="window.pwned = true"> went wrong');
  }
}

const schemas: string[] = [];
const apps: INestApplication[] = [];

afterAll(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
  await dropSchemas(...schemas);
});

describe('JobsDashboardModule', () => {
  let app: INestApplication;
  let failedId: string;

  beforeAll(async () => {
    const schema = uniqueSchema('dash');
    schemas.push(schema);
    app = await startJobsApp(
      schema,
      { worker: { pollInterval: 100 } },
      { imports: [JobsDashboardModule.register({ path: '/ops/jobs/', title: 'Ops <jobs>' })], providers: [Breaks] },
    );
    apps.push(app);
    failedId = (await app.get(JobQueue).enqueue(Breaks, null)).id;
    await waitFor('the job to fail', async () => (await app.get(JobQueue).get(failedId))?.state === 'failed');
  });

  it('serves its JSON beside the page: stats, workers, jobs, one job; retry and cancel; bad input is a 400, unknown a 404', async () => {
    const http = request(app.getHttpServer());
    const page = await http
      .get('/ops/jobs')
      .expect(200)
      .expect('content-type', /text\/html/);
    expect(page.text).toContain('<title>Ops &#60;jobs&#62;</title>');
    expect((await http.get('/ops/jobs/api/stats').expect(200)).body.queues.ops).toMatchObject({ failed: 1 });
    expect((await http.get('/ops/jobs/api/workers').expect(200)).body).toEqual([
      expect.objectContaining({ alive: true }),
    ]);
    const list = await http.get('/ops/jobs/api/jobs?state=failed').expect(200);
    expect(list.body.jobs).toEqual([expect.objectContaining({ id: failedId, name: 'breaks' })]);
    expect((await http.get(`/ops/jobs/api/jobs/${failedId}`).expect(200)).body.executions).toHaveLength(1);
    await http.get('/ops/jobs/api/jobs/01a00000-0000-7000-8000-000000000000').expect(404);
    expect((await http.get('/ops/jobs/api/jobs?state=gone').expect(400)).body.message).toMatch(/unknown state "gone"/);
    // Hostile requests are 400s naming the fix, never 500s.
    const both = await http.get('/ops/jobs/api/jobs?state=failed&state=queued').expect(200);
    expect(both.body.jobs).toEqual([expect.objectContaining({ id: failedId })]);
    const bad: Array<[string, string, RegExp]> = [
      ['get', '/ops/jobs/api/jobs?queue=%00', /"queue" holds a control character/],
      ['get', `/ops/jobs/api/jobs?queue=${'q'.repeat(9000)}`, /"queue" is 9000 characters long/],
      ['get', '/ops/jobs/api/jobs?queue=a&queue=b', /"queue" was given 2 times/],
      ['get', '/ops/jobs/api/jobs?limit=abc', /"limit" must be an integer/],
      ['get', '/ops/jobs/api/jobs?before=x', /"before" must be a job id/],
      ['get', '/ops/jobs/api/jobs/not-a-uuid', /is not a job id/],
      ['post', '/ops/jobs/api/jobs/not-a-uuid/retry', /retry\(\): the string "not-a-uuid" is not a job id/],
      ['post', '/ops/jobs/api/jobs/%20/cancel', /cancel\(\): the string " " is not a job id/],
    ];
    for (const [method, path, message] of bad) {
      const res = await (method === 'get' ? http.get(path) : http.post(path));
      expect([path, res.status]).toEqual([path, 400]);
      expect(res.body.message).toMatch(message);
      expect(res.body.message).toMatch(/Potential fix/);
    }
    const cancel = await http.post(`/ops/jobs/api/jobs/${failedId}/cancel`).expect(400);
    expect(cancel.body.message).toMatch(/already ended "failed".*Potential fix/);
    await http.post(`/ops/jobs/api/jobs/${failedId}/retry`).expect(204);
    await waitFor('the retried job to fail again', async () => {
      const job = await app.get(JobQueue).get(failedId);
      return job?.state === 'failed' && job.attempt === 2;
    });
  });

  it('the page renders queues, workers and jobs, shows a job as text, and retries it', async () => {
    await app.listen(0, '127.0.0.1');
    const { port } = app.getHttpServer().address() as { port: number };
    const origin = `http://127.0.0.1:${port}`;
    const html = await (await fetch(`${origin}/ops/jobs`)).text();
    let inFlight = 0;
    let closing = false;
    const dom = new JSDOM(html, {
      url: `${origin}/ops/jobs`,
      runScripts: 'dangerously',
      beforeParse(window) {
        // jsdom has no fetch of its own: the page gets Node's, resolving its relative URLs.
        // Counted, so the test can let the page go quiet before closing it.
        (window as unknown as { fetch: typeof fetch }).fetch = (input, init) => {
          if (closing) return new Promise<never>(() => undefined);
          inFlight++;
          // The body is read inside the count: once it is 0, only microtasks of the page remain.
          return fetch(new URL(String(input), window.location.href), init)
            .then(async (res) => {
              const body = res.status === 204 ? null : await res.arrayBuffer();
              return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
            })
            .finally(() => inFlight--);
        };
      },
    });
    const { document } = dom.window;
    const text = (id: string) => document.getElementById(id)!.textContent ?? '';
    try {
      await waitFor('the page to load', () => text('status').startsWith('Updated'));
      expect(text('queues')).toContain('ops');
      expect(text('workers')).toContain('yes');
      const link = await waitFor('the failed job in the list', () =>
        [...document.querySelectorAll<HTMLAnchorElement>('#jobs a')].find((a) => a.textContent === failedId),
      );
      // The error's markup is text on the page, not an element.
      expect(text('jobs')).toContain('<img src=x onerror="window.pwned = true"> went wrong');
      expect(document.querySelector('#jobs img')).toBeNull();
      expect((dom.window as unknown as { pwned?: boolean }).pwned).toBeUndefined();

      // Fifty more failures: the list shows a page of 50, and "Older jobs" brings the rest.
      await app.get(JobQueue).enqueueMany(Array.from({ length: 50 }, () => ({ job: Breaks, payload: null })));
      await waitFor('51 failed jobs', async () => (await app.get(JobsMonitor).counts()).total.failed === 51);
      const rows = () => document.querySelectorAll('#jobs tbody tr').length;
      await waitFor('a full first page', () => rows() === 50 && !document.getElementById('more')!.hidden);
      (document.getElementById('more') as HTMLButtonElement).click();
      await waitFor('the older job to be listed', () => rows() === 51 && document.getElementById('more')!.hidden);

      // The first failure is the oldest, last on the page now.
      const oldest = [...document.querySelectorAll<HTMLAnchorElement>('#jobs a')].at(-1)!;
      expect(oldest.textContent).toBe(link.textContent);
      oldest.click();
      await waitFor('the detail to open', () => !document.getElementById('detail')!.hidden);
      expect(text('detail-title')).toBe(`breaks ${failedId} · failed`);
      expect(JSON.parse(text('detail-body'))).toMatchObject({ id: failedId, state: 'failed' });
      expect((document.getElementById('cancel') as HTMLButtonElement).disabled).toBe(true);
      (document.getElementById('retry') as HTMLButtonElement).click();
      await waitFor('the retry to be acknowledged', () => text('action') === 'Queued again.');
      await waitFor(
        'the job to run a third attempt',
        async () => (await app.get(JobQueue).get(failedId))?.attempt === 3,
      );
    } finally {
      // No new requests; the ones under way finish and their page updates run before the window goes.
      closing = true;
      await waitFor('the page to go quiet', () => inFlight === 0);
      await new Promise((r) => setImmediate(r));
      dom.window.close();
    }
  });

  it('every route sits behind the guards it is given', async () => {
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
    for (const path of ['/jobs-dashboard', '/jobs-dashboard/api/stats', '/jobs-dashboard/api/jobs']) {
      expect((await http.get(path).expect(403)).body.message).toBe('operators only');
    }
    await http.post(`/jobs-dashboard/api/jobs/01a00000-0000-7000-8000-000000000000/retry`).expect(403);
  });
});

describe('sample app', () => {
  it('serves the dashboard at /dashboard', async () => {
    const schema = uniqueSchema('dashsample');
    schemas.push(schema, `${schema}_jobs`);
    const app = await startSampleApp({ schema, worker: { pollInterval: 100 }, unregisteredJobs: 'ignore' });
    apps.push(app);
    const page = await request(app.getHttpServer()).get('/dashboard').expect(200);
    expect(page.text).toContain('<h1>Sample jobs</h1>');
    await request(app.getHttpServer()).get('/dashboard/api/stats').expect(200);
  });
});
