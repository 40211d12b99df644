import { randomBytes } from 'node:crypto';
import { Module, ServiceUnavailableException, type INestApplication, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { chromium } from 'playwright-core';
import { HealthCheckService, TerminusModule } from '@nestjs/terminus';
import request from 'supertest';
import {
  Job,
  JobQueue,
  JobsAdmin,
  JobsError,
  JobsModule,
  JobsMonitor,
  RecurringSchedules,
  type JobContext,
  type JobHandler,
  type JobsModuleOptions,
} from 'nestjs-durable-jobs';
import { JobsDashboardModule } from 'nestjs-durable-jobs/dashboard';
import { JobsHealthIndicator } from 'nestjs-durable-jobs/health';
import { json, runCli } from '../../support/cli-process.js';
import { databaseUrl, dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { KitLog } from '../../support/kit.jobs.js';
import { startTestingApp } from '../../support/testing-app.js';
import { waitFor } from '../../support/wait.js';

/** What every encrypted value of these jobs holds: no raw read of their rows may show it. */
const MARKER = 'marker-7f3a9c-alice@example.com';
const K1 = randomBytes(32).toString('base64');
const K2 = randomBytes(32).toString('base64');
const ONLY_K1 = { keys: { k1: K1 }, current: 'k1' };
const BOTH_K2 = { keys: { k1: K1, k2: K2 }, current: 'k2' };
const ONLY_K2 = { keys: { k2: K2 }, current: 'k2' };

interface Secret {
  email: string;
  failFirst?: boolean;
}

/** Which app ran which job: the worker id of each run. */
const RUNS: Array<{ id: string; payload: Secret }> = [];

@Job('enc-secret', { encrypted: true, maxAttempts: 3, backoff: { type: 'fixed', delay: 0 } })
class SecretJob implements JobHandler<Secret> {
  async run(payload: Secret, ctx: JobContext) {
    RUNS.push({ id: ctx.jobId, payload });
    await ctx.progress(0.5, `halfway for ${payload.email}`);
    const looked = await ctx.step('look-up', () => ({ found: payload.email }));
    if (payload.failFirst && ctx.attempt === 1) throw new Error(`could not reach ${payload.email}`);
    return { sentTo: looked.found };
  }
}

/** Fails with the marker in its message, its onFailure throws it too, then a snooze gives it as the reason. */
@Job('enc-loud', {
  encrypted: true,
  maxAttempts: 2,
  backoff: { type: 'fixed', delay: 0 },
  onFailureRetries: { attempts: 1 },
})
class LoudJob implements JobHandler<Secret> {
  run(payload: Secret, ctx: JobContext) {
    if (payload.failFirst) return ctx.snooze(1, `waiting for ${payload.email}`);
    throw new Error(`could not reach ${payload.email}`);
  }
  onFailure(payload: Secret) {
    throw new Error(`onFailure could not tell ${payload.email}`);
  }
}

/** Every line the app logged, at every level, with the stacks and contexts given. */
class EveryLine implements LoggerService {
  readonly lines: string[] = [];
  private keep = (...parts: unknown[]) => this.lines.push(parts.map((p) => String(p)).join(' '));
  log = this.keep;
  warn = this.keep;
  error = this.keep;
  debug = this.keep;
  verbose = this.keep;
  fatal = this.keep;
}

@Job('enc-plain')
class PlainJob implements JobHandler<Secret> {
  run(payload: Secret) {
    return { sentTo: payload.email };
  }
}

/** Publishes the marker, then waits for a token and returns it. */
@Job('enc-await', { encrypted: true, maxAttempts: 1 })
class AwaitToken implements JobHandler<Secret> {
  async run(payload: Secret, ctx: JobContext) {
    await ctx.setEvent('contact', payload.email);
    return { token: await ctx.waitForSignal('token', { timeout: 3_600_000 }) };
  }
}

const schemas: string[] = [];
const apps: INestApplication[] = [];

async function boot(schema: string, options: Partial<JobsModuleOptions>, dashboard = false) {
  const app = await startJobsApp(schema, options, {
    imports: [TerminusModule, ...(dashboard ? [JobsDashboardModule.register({ public: true })] : [])],
    providers: [SecretJob, PlainJob, AwaitToken, JobsHealthIndicator],
  });
  apps.push(app);
  return app;
}

const producer = (schema: string, encryption = ONLY_K1) => boot(schema, { encryption, worker: { enabled: false } });

/** Every row the job has, as text: the job, its history and its steps. */
async function rawRows(schema: string, id: string): Promise<string> {
  const [job] = await sql<{ t: string }>(`SELECT j::text AS t FROM ${schema}.job j WHERE id = $1`, [id]);
  const executions = await sql<{ t: string }>(`SELECT e::text AS t FROM ${schema}.job_execution e WHERE job_id = $1`, [
    id,
  ]);
  const steps = await sql<{ t: string }>(`SELECT s::text AS t FROM ${schema}.job_step s WHERE job_id = $1`, [id]);
  return [job!.t, ...executions.map((r) => r.t), ...steps.map((r) => r.t)].join('\n');
}

const storedPayload = async (schema: string, id: string) =>
  (await sql<{ p: string }>(`SELECT payload #>> '{}' AS p FROM ${schema}.job WHERE id = $1`, [id]))[0]!.p;

afterEach(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
});

afterAll(async () => {
  await dropSchemas(...schemas);
});

describe('encryption at rest', () => {
  it('keeps no plaintext in the job, its history or its steps; readers with the key see the values', async () => {
    const schema = uniqueSchema('enc_raw');
    schemas.push(schema);
    const app = await boot(schema, { encryption: ONLY_K1 });
    const jobs = app.get(JobQueue);
    const { id } = await jobs.enqueue(SecretJob, { email: MARKER, failFirst: true });
    await waitFor('the job to succeed', async () => (await jobs.get(id))?.state === 'succeeded');

    const raw = await rawRows(schema, id);
    expect(raw).toContain('$enc1:k1:');
    expect(raw).not.toContain(MARKER);
    expect(raw).not.toContain('alice');
    // Names, queues and times are not encrypted.
    expect(raw).toContain('enc-secret');

    const job = await jobs.get(id, { stepResults: true });
    expect(job!.payload).toEqual({ email: MARKER, failFirst: true });
    expect(job!.result).toEqual({ sentTo: MARKER });
    expect(job!.progressMessage).toBe(`halfway for ${MARKER}`);
    expect(job!.steps.map((s) => s.result)).toEqual([{ found: MARKER }]);
    expect(job!.executions[0]!.error!.message).toBe(`could not reach ${MARKER}`);
    expect(job!.executions[0]!.error!.stack).toContain(`could not reach ${MARKER}`);
    // The handler got the payload in the clear, on both attempts.
    expect(RUNS.filter((r) => r.id === id).map((r) => r.payload.email)).toEqual([MARKER, MARKER]);

    const detail = await app.get(JobsAdmin).detail(id);
    expect(detail!.payload).toEqual({ email: MARKER, failFirst: true });
  });

  it('a failed job keeps its error encrypted; summaries show it decrypted', async () => {
    const schema = uniqueSchema('enc_fail');
    schemas.push(schema);
    const app = await boot(schema, { encryption: { ...ONLY_K1, all: true } });
    const jobs = app.get(JobQueue);
    const { id } = await jobs.enqueue(SecretJob, { email: MARKER, failFirst: true }, { maxAttempts: 1 });
    await waitFor('the job to fail', async () => (await jobs.get(id))?.state === 'failed');
    expect(await rawRows(schema, id)).not.toContain(MARKER);
    const page = await app.get(JobsAdmin).search({ state: 'failed' });
    expect(page.jobs.find((j) => j.id === id)!.lastError!.message).toBe(`could not reach ${MARKER}`);
    // `all: true` seals jobs not declared encrypted too.
    const plain = await jobs.enqueue(PlainJob, { email: MARKER });
    await waitFor('the plain job to succeed', async () => (await jobs.get(plain.id))?.state === 'succeeded');
    expect(await rawRows(schema, plain.id)).not.toContain(MARKER);
    expect((await jobs.get(plain.id))!.result).toEqual({ sentTo: MARKER });
  });

  it("a schedule of an encrypted job keeps its payload sealed, and so do its ticks' jobs", async () => {
    const schema = uniqueSchema('enc_sched');
    schemas.push(schema);
    const app = await boot(schema, { encryption: ONLY_K1 });
    const schedules = app.get(RecurringSchedules);
    const info = await schedules.upsert('nightly-secret', SecretJob, '0 3 * * *', { payload: { email: MARKER } });
    expect(info.payload).toEqual({ email: MARKER });
    const [row] = await sql<{ t: string }>(`SELECT r::text AS t FROM ${schema}.recurring_schedule r`);
    expect(row!.t).toContain('$enc1:k1:');
    expect(row!.t).not.toContain(MARKER);
    const { jobId } = await schedules.runNow('nightly-secret');
    const jobs = app.get(JobQueue);
    await waitFor('the tick to succeed', async () => (await jobs.get(jobId))?.state === 'succeeded');
    expect(await rawRows(schema, jobId)).not.toContain(MARKER);
    expect((await jobs.get(jobId))!.result).toEqual({ sentTo: MARKER });
  });

  it('rotation: reencrypt re-seals older rows with the current key, and a keyring without the old key runs them', async () => {
    const schema = uniqueSchema('enc_rotate');
    schemas.push(schema);
    const old = await producer(schema);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await old.get(JobQueue).enqueue(SecretJob, { email: `${MARKER}-${i}` })).id);
    const plain = await old.get(JobQueue).enqueue(PlainJob, { email: MARKER });
    await old.get(RecurringSchedules).upsert('rotated', SecretJob, '0 3 * * *', { payload: { email: MARKER } });
    for (const id of ids) expect(await storedPayload(schema, id)).toMatch(/^\$enc1:k1:/);
    await old.close();

    const both = await producer(schema, BOTH_K2);
    const result = await both.get(JobsAdmin).reencrypt();
    expect(result).toEqual({ current: 'k2', jobs: 3, values: 4, unreadable: 0, rounds: 2 });
    for (const id of ids) expect(await storedPayload(schema, id)).toMatch(/^\$enc1:k2:/);
    const [schedule] = await sql<{ p: string }>(`SELECT payload #>> '{}' AS p FROM ${schema}.recurring_schedule`);
    expect(schedule!.p).toMatch(/^\$enc1:k2:/);
    // A plain job stays plain; a second run finds nothing left to do.
    expect(JSON.parse(await storedPayload(schema, plain.id))).toEqual({ email: MARKER });
    expect((await both.get(JobsAdmin).reencrypt()).values).toBe(0);
    await both.close();

    const next = await boot(schema, { encryption: ONLY_K2 });
    const jobs = next.get(JobQueue);
    await waitFor('the re-sealed jobs to succeed', async () => {
      for (const id of ids) if ((await jobs.get(id))?.state !== 'succeeded') return false;
      return true;
    });
    expect((await jobs.get(ids[1]!))!.result).toEqual({ sentTo: `${MARKER}-1` });
  });

  it("an encrypted job's signals and published values are sealed at rest, and reencrypt re-seals them", async () => {
    const schema = uniqueSchema('enc_signals');
    schemas.push(schema);
    const raw = async (id: string) => {
      const signals = await sql<{ t: string }>(
        `SELECT payload #>> '{}' AS t FROM ${schema}.job_signal WHERE job_id = $1`,
        [id],
      );
      const values = await sql<{ t: string }>(
        `SELECT value #>> '{}' AS t FROM ${schema}.job_event_value WHERE job_id = $1`,
        [id],
      );
      const steps = await sql<{ t: string }>(`SELECT s::text AS t FROM ${schema}.job_step s WHERE job_id = $1`, [id]);
      return [...signals, ...values, ...steps].map((r) => r.t);
    };
    const first = await boot(schema, { encryption: ONLY_K1 });
    const { id } = await first.get(JobQueue).enqueue(AwaitToken, { email: MARKER });
    await waitFor('the job to publish and wait', async () => {
      const [row] = await sql<{ a: string | null }>(`SELECT awaits_signal AS a FROM ${schema}.job WHERE id = $1`, [id]);
      return row!.a === 'token';
    });
    await first.get(JobQueue).signal(id, 'token', { secret: MARKER });
    await expect(first.get(JobQueue).waitFor(id, { timeout: 30_000 })).resolves.toMatchObject({
      result: { token: { secret: MARKER } },
    });
    expect(await first.get(JobQueue).getEvent(id, 'contact')).toBe(MARKER);
    // Not started: its signal waits sealed. A plain job's signal is stored as sent.
    const later = await first.get(JobQueue).enqueue(AwaitToken, { email: MARKER }, { delay: 3_600_000 });
    await first.get(JobQueue).signal(later.id, 'token', { secret: MARKER });
    const plain = await first.get(JobQueue).enqueue(PlainJob, { email: 'x' }, { delay: 3_600_000 });
    await first.get(JobQueue).signal(plain.id, 'note', { open: 'text' });
    for (const text of [...(await raw(id)), ...(await raw(later.id))]) expect(text).not.toContain(MARKER);
    expect((await raw(later.id))[0]).toMatch(/^\$enc1:k1:/);
    expect(JSON.parse((await raw(plain.id))[0]!)).toEqual({ open: 'text' });
    await first.close();

    const both = await producer(schema, BOTH_K2);
    await both.get(JobsAdmin).reencrypt();
    const resealed = [...(await raw(id)), ...(await raw(later.id))].join('\n');
    expect(resealed).not.toContain('$enc1:k1:');
    expect(resealed).toContain('$enc1:k2:');
    await both.close();

    const next = await boot(schema, { encryption: ONLY_K2 });
    const jobs = next.get(JobQueue);
    expect(await jobs.getEvent(id, 'contact')).toBe(MARKER);
    await next.get(JobsAdmin).runNow(later.id);
    await expect(jobs.waitFor(later.id, { timeout: 30_000 })).resolves.toMatchObject({
      state: 'succeeded',
      result: { token: { secret: MARKER } },
    });
  });

  it('the CLI: show decrypts with JOBS_ENCRYPTION_KEYS, and reencrypt re-seals; bad key material is refused', async () => {
    const schema = uniqueSchema('enc_cli');
    schemas.push(schema);
    const app = await producer(schema);
    const { id } = await app.get(JobQueue).enqueue(SecretJob, { email: MARKER });
    await app.close();
    const withK1 = { JOBS_ENCRYPTION_KEYS: `k1:${K1}` };
    const shown = json<{ payload: unknown }>(await runCli(['show', id, '--json', '--schema', schema], withK1));
    expect(shown.payload).toEqual({ email: MARKER });
    const blind = await runCli(['show', id, '--schema', schema], { JOBS_ENCRYPTION_KEYS: undefined });
    expect(blind.stdout).toContain("[encrypted: key 'k1']");
    expect(blind.stdout).not.toContain(MARKER);

    const rotate = { JOBS_ENCRYPTION_KEYS: `k2:${K2},k1:${K1}` };
    const done = json<{ values: number; current: string }>(
      await runCli(['reencrypt', '--json', '--schema', schema], rotate),
    );
    expect(done).toMatchObject({ current: 'k2', values: 1 });
    expect(await storedPayload(schema, id)).toMatch(/^\$enc1:k2:/);
    const bad = await runCli(['show', id, '--schema', schema], { JOBS_ENCRYPTION_KEYS: 'k1:short' });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("key 'k1' is not base64");
    const unlisted = await runCli(['reencrypt', '--schema', schema], { ...withK1, JOBS_ENCRYPTION_CURRENT: 'k3' });
    expect(unlisted.code).toBe(1);
    expect(unlisted.stderr).toContain('"current" ("k3") is not one of the ids in "keys" (k1)');
    const none = await runCli(['reencrypt', '--schema', schema], { JOBS_ENCRYPTION_KEYS: undefined });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('JobsAdmin.reencrypt(): JobsModule has no "encryption" keys');
  });

  it('a tampered byte fails the attempt for good with a JobsError naming the job and the key id', async () => {
    const schema = uniqueSchema('enc_tamper');
    schemas.push(schema);
    const app = await producer(schema);
    const { id } = await app.get(JobQueue).enqueue(SecretJob, { email: MARKER });
    const sealed = await storedPayload(schema, id);
    const at = sealed.length - 30;
    const flipped = sealed.slice(0, at) + (sealed[at] === 'A' ? 'B' : 'A') + sealed.slice(at + 1);
    await sql(`UPDATE ${schema}.job SET payload = to_jsonb($2::text) WHERE id = $1`, [id, flipped]);
    await app.close();

    const worker = await boot(schema, { encryption: ONLY_K1 });
    const jobs = worker.get(JobQueue);
    await waitFor('the job to fail', async () => (await jobs.get(id))?.state === 'failed');
    const job = await jobs.get(id);
    expect(job!.attempt).toBe(1);
    expect(job!.lastError!.name).toBe('EncryptedValueError');
    expect(job!.lastError!.message).toContain(`Job "enc-secret" (${id})`);
    expect(job!.lastError!.message).toContain("key 'k1'");
    expect(job!.payload).toBe("[encrypted: key 'k1', does not authenticate]");
    expect(RUNS.some((r) => r.id === id)).toBe(false);
  });

  it("a worker lacking a job's key hands it back unspent, says so in health and on the dashboard; the other instance runs it", async () => {
    const schema = uniqueSchema('enc_missing');
    schemas.push(schema);
    const { id } = await (await producer(schema)).get(JobQueue).enqueue(SecretJob, { email: MARKER });

    const lacking = await boot(schema, { encryption: ONLY_K2 }, true);
    await waitFor('the worker to meet the missing key', () =>
      lacking.get(JobsMonitor).encryption().missingKeys.includes('k1'),
    );
    const health = await lacking
      .get(HealthCheckService)
      .check([() => lacking.get(JobsHealthIndicator).isHealthy()])
      .catch((error: unknown) => (error as ServiceUnavailableException).getResponse());
    expect(JSON.stringify(health)).toContain('"missingKeys":["k1"]');
    const http = request(lacking.getHttpServer());
    const encryption = await http.get('/jobs-dashboard/api/encryption').expect(200);
    expect(encryption.body).toEqual({ current: 'k2', keys: ['k2'], missingKeys: ['k1'] });
    // The page itself says it too, in a real browser.
    await lacking.listen(0, '127.0.0.1');
    const port = (lacking.getHttpServer().address() as { port: number }).port;
    const browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: ['--no-sandbox'],
    });
    try {
      const page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${port}/jobs-dashboard#/`);
      const banner = page.locator('[data-missing-keys="k1"]');
      await banner.waitFor({ timeout: 15_000 });
      expect(await banner.textContent()).toContain("Missing encryption key: 'k1'");
    } finally {
      await browser.close();
    }
    const shown = await http.get(`/jobs-dashboard/api/jobs/${id}`).expect(200);
    expect(JSON.stringify(shown.body)).toContain("[encrypted: key 'k1']");
    expect(JSON.stringify(shown.body)).not.toContain(MARKER);
    const held = await lacking.get(JobQueue).get(id);
    expect(held!.state).toBe('queued');
    expect(held!.attempt).toBe(0);
    expect(held!.payload).toBe("[encrypted: key 'k1']");

    const having = await boot(schema, { encryption: BOTH_K2 });
    const jobs = having.get(JobQueue);
    await waitFor('the job to succeed', async () => (await jobs.get(id))?.state === 'succeeded');
    const done = await jobs.get(id);
    expect(done!.attempt).toBe(1);
    expect(done!.executions.map((e) => e.state)).toEqual(['succeeded']);
    expect(done!.result).toEqual({ sentTo: MARKER });
  });

  it("logs no encrypted job's messages: failures, retries, snooze reasons and a throwing onFailure", async () => {
    const schema = uniqueSchema('enc_logs');
    schemas.push(schema);
    @Module({ providers: [LoudJob] })
    class Own {}
    const ref = await Test.createTestingModule({
      imports: [
        JobsModule.forRoot({ connection: databaseUrl(), schema, unregisteredJobs: 'ignore', encryption: ONLY_K1 }),
        Own,
      ],
    }).compile();
    const logged = new EveryLine();
    const app = ref.createNestApplication({ logger: logged });
    app.useLogger(logged);
    await app.init();
    apps.push(app);
    const jobs = app.get(JobQueue);
    const failing = await jobs.enqueue(LoudJob, { email: MARKER });
    const snoozing = await jobs.enqueue(LoudJob, { email: MARKER, failFirst: true });
    await waitFor('the failing job to fail for good and the other to snooze', async () => {
      const b = await jobs.get(snoozing.id);
      const [hook] = await sql<{ h: string | null }>(`SELECT failure_hook AS h FROM ${schema}.job WHERE id = $1`, [
        failing.id,
      ]);
      return hook?.h === 'failed' && !!b?.executions.some((e) => e.state === 'snoozed');
    });
    // The lines exist (the check below is not vacuous), and none carries the marker.
    expect(logged.lines.some((l) => l.includes(failing.id) && l.includes('failed'))).toBe(true);
    expect(logged.lines.some((l) => l.includes('onFailure of job'))).toBe(true);
    expect(logged.lines.filter((l) => l.includes(MARKER) || l.includes('alice'))).toEqual([]);
  });

  it('the testing kit matches expectations on decrypted payloads', async () => {
    const kit = await startTestingApp({ encryption: ONLY_K1 }, { providers: [SecretJob, KitLog] });
    apps.push(kit.app);
    await kit.jobs.enqueue(SecretJob, { email: MARKER });
    const [found] = await kit.tester.expectEnqueued({ name: SecretJob, payload: { email: MARKER }, count: 1 });
    expect(found!.payload).toEqual({ email: MARKER });
    await kit.tester.drain();
    expect((await kit.jobs.get(found!.id))!.result).toEqual({ sentTo: MARKER });
  });

  describe('refused at boot with a JobsError', () => {
    const refusals: Array<[string, unknown, RegExp]> = [
      [
        'a key of the wrong length',
        { keys: { k1: randomBytes(16).toString('base64') }, current: 'k1' },
        /key 'k1' is 16 bytes; AES-256 takes 32/,
      ],
      ['a key that is not base64', { keys: { k1: 'not base64 at all!' }, current: 'k1' }, /key 'k1' is not base64/],
      ['a key that is not set', { keys: { k1: undefined }, current: 'k1' }, /key 'k1' is not set/],
      [
        '"current" not in "keys"',
        { keys: { k1: K1 }, current: 'k9' },
        /"current" \("k9"\) is not one of the ids in "keys" \(k1\)/,
      ],
      ['no keys', { keys: {}, current: 'k1' }, /"keys" is empty/],
      ['a key id that cannot be stored in the clear', { keys: { 'a:b': K1 }, current: 'a:b' }, /key id "a:b" must be/],
    ];
    it.each(refusals)('%s', async (_, encryption, message) => {
      const schema = uniqueSchema('enc_boot');
      schemas.push(schema);
      const booting = boot(schema, { encryption: encryption as JobsModuleOptions['encryption'] });
      await expect(booting).rejects.toThrow(JobsError);
      await expect(booting).rejects.toThrow(message);
      // The key material itself is never in the message.
      await booting.catch((error: Error) => expect(error.message).not.toContain(K1));
    });

    it('an encrypted job without encryption keys', async () => {
      const schema = uniqueSchema('enc_boot');
      schemas.push(schema);
      await expect(boot(schema, {})).rejects.toThrow(
        /@Job\('enc-secret'\) on class SecretJob is \{ encrypted: true \}, but JobsModule has no "encryption" keys.*Potential fix/,
      );
    });

    it('at the call site: an external job declared encrypted, enqueued without keys', async () => {
      const schema = uniqueSchema('enc_ext');
      schemas.push(schema);
      const app = await startJobsApp(
        schema,
        { worker: { enabled: false }, externalJobs: { 'ext-secret': { queue: 'x', encrypted: true } } },
        {},
      );
      apps.push(app);
      await expect(app.get(JobQueue).enqueue('ext-secret', { email: MARKER })).rejects.toThrow(
        /enqueue\('ext-secret'\): the job is declared \{ encrypted: true \}, but JobsModule has no "encryption" keys.*Potential fix/,
      );
      expect(await sql(`SELECT 1 FROM ${schema}.job`)).toHaveLength(0);
    });

    it('an unknown key in "encryption", and a non-boolean "encrypted"', async () => {
      await expect(
        startJobsApp('unused', { encryption: { ...ONLY_K1, al: true } as JobsModuleOptions['encryption'] }, {}),
      ).rejects.toThrow(/unknown option "encryption.al"\. Did you mean "encryption.all"\?/);
      expect(() => Job('enc-bad', { encrypted: 'yes' as unknown as boolean })(class Bad {})).toThrow(
        /"encrypted" must be true or false/,
      );
    });
  });
});
