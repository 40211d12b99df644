import pg from 'pg';
import { BatchBuilder, BULK_CHUNK, JobQueue, JobsAdmin, JobsError, type JobState } from 'nestjs-durable-jobs';
import { canTransition } from '../../../lib/model/job-state.js';
import { uuidv7 } from '../../../lib/model/uuid.js';
import { AdminWork, adminProviders, behaviour } from '../../support/admin.jobs.js';
import { databaseUrl, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';
import { appFixture } from '../../support/app-fixture.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
// Held handlers are released before the apps close: Jest runs a file's afterAll hooks in the order they were added.
afterAll(() => behaviour.releaseAll());
const { apps, schemas } = appFixture();

async function boot(prefix: string) {
  const schema = uniqueSchema(prefix);
  schemas.push(schema);
  // The worker serves 'adm'; other queues hold jobs that stay where the test put them.
  const app = await startJobsApp(
    schema,
    { worker: { concurrency: 8, pollInterval: 100, queues: ['adm'] } },
    { providers: adminProviders },
  );
  apps.push(app);
  const jobs = app.get(JobQueue);
  const stateOf = async (id: string) => (await jobs.get(id))?.state;
  return {
    schema,
    app,
    jobs,
    admin: app.get(JobsAdmin),
    batches: app.get(BatchBuilder),
    stateOf,
    until: (id: string, state: JobState) =>
      waitFor(`job ${id} to be ${state}`, async () => (await stateOf(id)) === state),
    work: (key: string, options = {}) => jobs.enqueue(AdminWork, { key }, options).then((r) => r.id),
  };
}

/** Rows as an earlier run would have left them, without running anything: ended at `at`, ids made then. */
async function fabricate(schema: string, state: JobState, count: number, at: Date, queue = 'hist'): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => uuidv7(at.getTime() - count + i));
  await sql(
    `INSERT INTO "${schema}".job (id, name, queue, payload, state, run_at, attempt, max_attempts, created_at,
                                  started_at, completed_at, last_error)
     SELECT id, 'admin-work', $2, '{"key":"old"}', $3, $4, 1, 1, $4, $4, $4,
            CASE WHEN $3 = 'succeeded' THEN NULL ELSE '{"name":"Error","message":"old"}'::jsonb END
       FROM unnest($1::uuid[]) AS id`,
    [ids, queue, state, at],
  );
  return ids;
}

describe('JobsAdmin bulk actions', () => {
  let t: Awaited<ReturnType<typeof boot>>;

  beforeAll(async () => {
    t = await boot('bulk');
    // Every state change from here on, to check against the model's table of legal moves at the end.
    await sql(`CREATE TABLE "${t.schema}".move (id uuid, from_state text, to_state text)`);
    await sql(`CREATE FUNCTION "${t.schema}".log_move() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN INSERT INTO "${t.schema}".move VALUES (NEW.id, NULL, NEW.state);
        ELSIF OLD.state <> NEW.state THEN INSERT INTO "${t.schema}".move VALUES (NEW.id, OLD.state, NEW.state);
        END IF;
        RETURN NEW;
      END $$`);
    await sql(`CREATE TRIGGER log_move AFTER INSERT OR UPDATE ON "${t.schema}".job
      FOR EACH ROW EXECUTE FUNCTION "${t.schema}".log_move()`);
  });

  it('retries and cancels thousands of jobs chunk by chunk, returning the count and the first 1,000 ids', async () => {
    const total = 2 * BULK_CHUNK + 500;
    await sql(`ALTER TABLE "${t.schema}".job DISABLE TRIGGER log_move`);
    const failed = await fabricate(t.schema, 'failed', total, new Date(Date.now() - HOUR), 'bulk');
    await sql(`ALTER TABLE "${t.schema}".job ENABLE TRIGGER log_move`);
    const ordered = [...failed].sort();

    const retried = await t.admin.retryAll({ queue: 'bulk' });
    expect(retried.count).toBe(total);
    expect(retried.ids).toEqual(ordered.slice(0, 1_000));
    const rows = await sql<{ state: string; attempt: number; max_attempts: number; n: number }>(
      `SELECT state, attempt, max_attempts, count(*)::int AS n FROM "${t.schema}".job WHERE queue = 'bulk'
        GROUP BY 1, 2, 3`,
    );
    // A fresh set of attempts on top of the one spent, as retry(id) gives.
    expect(rows).toEqual([{ state: 'queued', attempt: 1, max_attempts: 2, n: total }]);
    expect(await t.admin.retryAll({ queue: 'bulk' })).toEqual({ count: 0, ids: [] });

    const cancelled = await t.admin.cancelAll({ queue: 'bulk' });
    expect(cancelled).toMatchObject({ cancelled: total, requested: 0 });
    expect(cancelled.ids).toEqual(ordered.slice(0, 1_000));
    expect((await t.admin.retryAll({ queue: 'bulk', state: ['cancelled'] })).count).toBe(total);
    expect((await t.admin.cancelAll({ queue: 'bulk', state: 'queued' })).cancelled).toBe(total);
  });

  it('leaves a retried row exactly as retry(id) leaves it', async () => {
    const [one, two] = await Promise.all([t.work('same-1', { queue: 'same' }), t.work('same-2', { queue: 'same' })]);
    await sql(
      `UPDATE "${t.schema}".job SET state = 'failed', attempt = 3, max_attempts = 3, completed_at = now(),
              worker_id = 'w', progress = 0.5, progress_message = 'half', result = '1', cancel_requested = true,
              failure_hook = 'done', last_error = '{"name":"Error","message":"x"}'
        WHERE id = ANY($1::uuid[])`,
      [[one, two]],
    );
    await t.jobs.retry(one!);
    expect(await t.admin.retryAll({ ids: [two!] })).toEqual({ count: 1, ids: [two] });
    const [a, b] = await sql<Record<string, unknown>>(
      `SELECT * FROM "${t.schema}".job WHERE id = ANY($1::uuid[]) ORDER BY payload->>'key'`,
      [[one, two]],
    );
    const comparable = (row: Record<string, unknown>) => {
      const { id: _id, payload: _payload, run_at: _runAt, created_at: _createdAt, ...rest } = row;
      return rest;
    };
    expect(comparable(b!)).toEqual(comparable(a!));
    expect(a).toMatchObject({ state: 'queued', max_attempts: 6, completed_at: null, result: null });
  });

  it("reopens a batch and a chain's skipped dependents when it retries their failed jobs", async () => {
    behaviour.failing.add('rb-bad');
    behaviour.failing.add('rc-a');
    const { id: batchId } = await t.batches
      .create('reopen')
      .allowFailures()
      .add(AdminWork, { key: 'rb-bad' })
      .add(AdminWork, { key: 'rb-ok' })
      .then(AdminWork, { key: 'rb-then' })
      .dispatch();
    const chain = await t.jobs
      .flow()
      .add('a', AdminWork, { key: 'rc-a' })
      .add('b', AdminWork, { key: 'rc-b' }, { after: ['a'] })
      .dispatch();
    const then = (await t.jobs.batchGraph(batchId))!.nodes.find((n) => n.role === 'then')!.id;
    await t.until(then, 'skipped');
    await t.until(chain.ids.b!, 'skipped');
    behaviour.failing.clear();

    expect((await t.admin.retryAll({ batchId })).count).toBe(1);
    expect((await t.admin.retryAll({ ids: [chain.ids.a!] })).count).toBe(1);
    await waitFor('the batch to succeed', async () => (await t.jobs.batchStatus(batchId))?.state === 'succeeded');
    await t.until(then, 'succeeded');
    await t.until(chain.ids.b!, 'succeeded');
  });

  it('cancels waiting, queued and scheduled jobs at once and asks running ones to stop, by filter', async () => {
    const due = await t.work('cx-due', { queue: 'cx' });
    const later = await t.work('cx-later', { queue: 'cx', delay: HOUR });
    const waiting = await t.work('cx-waiting', { queue: 'cx', after: later });
    const otherDue = await t.work('cx2-due', { queue: 'cx2' });
    const otherLater = await t.work('cx2-later', { queue: 'cx2', delay: HOUR });
    behaviour.holding.add('cx-active');
    const active = await t.work('cx-active');
    await t.until(active, 'active');

    // Only what the state filter names: the due job of cx2 stays queued.
    expect(await t.admin.cancelAll({ queue: 'cx2', state: 'scheduled' })).toEqual({
      cancelled: 1,
      requested: 0,
      ids: [otherLater],
    });
    expect(await t.stateOf(otherDue)).toBe('queued');
    expect(await t.admin.cancelAll({ idPrefix: otherDue.slice(0, 23) })).toEqual({
      cancelled: 1,
      requested: 0,
      ids: [otherDue],
    });
    const byQueue = await t.admin.cancelAll({ queue: 'cx' });
    expect(byQueue).toMatchObject({ cancelled: 3, requested: 0 });
    expect([...byQueue.ids].sort()).toEqual([due, later, waiting].sort());
    for (const id of [due, later, waiting]) expect(await t.stateOf(id)).toBe('cancelled');
    expect(await t.admin.cancelAll({ ids: [active], state: 'active' })).toEqual({
      cancelled: 0,
      requested: 1,
      ids: [active],
    });
    await t.until(active, 'cancelled');
    behaviour.releaseAll();

    // A batch's members all cancelled: it settles, and its finally runs.
    const { id: batchId } = await t.batches
      .create('cx-batch')
      .add(AdminWork, { key: 'cxb-1' }, { delay: HOUR })
      .add(AdminWork, { key: 'cxb-2' }, { delay: HOUR })
      .finally(AdminWork, { key: 'cxb-finally' })
      .dispatch();
    expect((await t.admin.cancelAll({ batchId })).cancelled).toBe(2);
    expect((await t.jobs.batchStatus(batchId))!.state).toBe('cancelled');
    await t.until((await t.jobs.batchGraph(batchId))!.nodes.find((n) => n.role === 'finally')!.id, 'succeeded');
  });

  it('refuses bad bulk filters with a JobsError naming the fix', async () => {
    await expect(t.admin.cancelAll({ state: 'failed' as never })).rejects.toThrow(
      /"state" must be one of waiting, queued, scheduled, active, got the string "failed"/,
    );
    await expect(t.admin.retryAll({ state: 'queued' as never })).rejects.toThrow(
      /"state" must be one of failed, cancelled, skipped/,
    );
    const tooMany = Array.from({ length: 1_001 }, () => uuidv7());
    await expect(t.admin.retryAll({ ids: tooMany })).rejects.toThrow(/"ids" must be an array of 1 to 1000 job ids/);
    await expect(t.admin.cancelAll({ ids: ['x'] })).rejects.toThrow(/ids\[0\]: the string "x" is not a job id/);
    await expect(t.admin.retryAll({ batchId: 'not-a-batch' })).rejects.toBeInstanceOf(JobsError);
    await expect(t.admin.cancelAll({ idPrefix: 'zz' })).rejects.toThrow(/"idPrefix" must be the start of a job id/);
  });

  it('says how far it got when the database fails part-way: earlier chunks stay done', async () => {
    await sql(`ALTER TABLE "${t.schema}".job DISABLE TRIGGER log_move`);
    const rows = await fabricate(t.schema, 'failed', BULK_CHUNK + 200, new Date(Date.now() - HOUR), 'poison');
    await sql(`ALTER TABLE "${t.schema}".job ENABLE TRIGGER log_move`);
    const poisoned = [...rows].sort()[BULK_CHUNK + 100]!;
    await sql(`CREATE FUNCTION "${t.schema}".poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.id = '${poisoned}' THEN RAISE EXCEPTION 'poisoned row'; END IF;
        RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
      END $$`);
    await sql(`CREATE TRIGGER poison BEFORE UPDATE OR DELETE ON "${t.schema}".job
      FOR EACH ROW EXECUTE FUNCTION "${t.schema}".poison()`);
    try {
      const retry = (await t.admin.retryAll({ queue: 'poison' }).catch((e: unknown) => e)) as Error;
      expect(retry).toBeInstanceOf(JobsError);
      expect(retry.message).toMatch(
        new RegExp(
          `^JobsAdmin.retryAll\\(\\) \\(after ${BULK_CHUNK} job\\(s\\) changed by earlier chunks\\): the database call failed \\(poisoned row\\)`,
        ),
      );
      const [queued] = await sql<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${t.schema}".job WHERE queue = 'poison' AND state = 'queued'`,
      );
      expect(queued!.n).toBe(BULK_CHUNK);
      await sql(
        `UPDATE "${t.schema}".job SET state = 'failed', completed_at = now() - interval '1 minute'
          WHERE queue = 'poison' AND state = 'queued'`,
      );
      const purge = (await t.admin.purge({ failedBefore: new Date() }).catch((e: unknown) => e)) as Error;
      expect(purge).toBeInstanceOf(JobsError);
      expect(purge.message).toMatch(
        new RegExp(
          `^JobsAdmin.purge\\(\\) \\(after deleting ${BULK_CHUNK} job\\(s\\) and 0 batch\\(es\\)\\): the database call failed \\(poisoned row\\)`,
        ),
      );
    } finally {
      await sql(`DROP TRIGGER poison ON "${t.schema}".job`);
    }
  });

  it('made only moves the model allows', async () => {
    const moves = await sql<{ from_state: JobState | null; to_state: JobState }>(
      `SELECT DISTINCT from_state, to_state FROM "${t.schema}".move`,
    );
    const illegal = moves.filter((m) =>
      m.from_state === null
        ? !['queued', 'waiting', 'skipped'].includes(m.to_state)
        : !canTransition(m.from_state, m.to_state),
    );
    expect(illegal).toEqual([]);
    const seen = moves.map((m) => `${m.from_state}>${m.to_state}`);
    for (const move of [
      'failed>queued',
      'cancelled>queued',
      'queued>cancelled',
      'waiting>cancelled',
      'skipped>waiting',
    ]) {
      expect(seen).toContain(move);
    }
  });
});

describe('JobsAdmin.purge()', () => {
  it('deletes thousands of old jobs in rounds while a worker claims, passing over locked rows and keeping what live jobs need', async () => {
    const t = await boot('purge');
    const old = new Date(Date.now() - 2 * DAY);
    const succeeded = await fabricate(t.schema, 'succeeded', 5 * BULK_CHUNK, old);
    await fabricate(t.schema, 'failed', 300, old);
    await fabricate(t.schema, 'cancelled', 200, old);
    await fabricate(t.schema, 'skipped', 100, old);

    // What must stay: a failed parent a waiting child still reads, a failed job whose onFailure has not run,
    // and a failed batch a live job waits on. A failed batch nobody waits on goes, members and all.
    behaviour.failing.add('pg-parent');
    behaviour.failing.add('pg-hook');
    behaviour.failing.add('pg-gone');
    behaviour.failing.add('pg-kept');
    const blocker = await t.work('pg-blocker', { delay: HOUR });
    const parent = await t.work('pg-parent');
    const child = await t.work('pg-child', { after: [{ job: parent }, { job: blocker }] });
    const hooked = await t.work('pg-hook');
    const gone = await t.batches
      .create('gone')
      .add(AdminWork, { key: 'pg-gone' })
      .add(AdminWork, { key: 'x' })
      .dispatch();
    const kept = await t.batches.create('kept').add(AdminWork, { key: 'pg-kept' }).dispatch();
    const dependent = await t.work('pg-dependent', { after: [{ batch: kept.id, on: 'always' }, { job: blocker }] });
    await t.until(parent, 'failed');
    await t.until(hooked, 'failed');
    await sql(`UPDATE "${t.schema}".job SET failure_hook = 'pending' WHERE id = $1`, [hooked]);
    for (const b of [gone.id, kept.id]) {
      await waitFor(`batch ${b} to fail`, async () => (await t.jobs.batchStatus(b))?.state === 'failed');
    }

    // Another session holds the newest ten old rows (as a concurrent purge would): purge passes them over.
    const holder = new pg.Client({ connectionString: databaseUrl() });
    await holder.connect();
    await holder.query('BEGIN');
    const held = [...succeeded].sort().slice(-10);
    await holder.query(`SELECT id FROM "${t.schema}".job WHERE id = ANY($1::uuid[]) FOR UPDATE`, [held]);

    // A stream of live jobs, claimed and finished while the purge runs.
    const live = await t.jobs.enqueueMany(
      Array.from({ length: 2_000 }, (_, i) => ({ job: AdminWork, payload: { key: `live-${i}` } })),
    );
    const now = new Date();
    const result = await t.admin.purge({
      succeededBefore: new Date(now.getTime() - DAY),
      failedBefore: now,
      cancelledBefore: now,
      skippedBefore: now,
    });
    await holder.query('ROLLBACK');
    await holder.end();

    expect(result).toEqual({
      jobs: { succeeded: 5 * BULK_CHUNK - 10, failed: 300, cancelled: 200, skipped: 100 },
      batches: 1,
      batchMembers: 2,
      // Five rounds of succeeded jobs (the fifth comes back short: the held rows), one per other state, one of batches.
      rounds: 9,
    });
    const left = await sql<{ id: string }>(`SELECT id FROM "${t.schema}".job WHERE queue = 'hist' ORDER BY id`);
    expect(left.map((r) => r.id)).toEqual(held);
    for (const id of [parent, child, hooked, blocker, dependent]) expect(await t.jobs.get(id)).not.toBeNull();
    expect(await t.jobs.batchStatus(gone.id)).toBeNull();
    expect(await t.jobs.batchStatus(kept.id)).not.toBeNull();
    const liveIds = live.map((j) => j.id);
    await waitFor('every live job to succeed', async () => {
      const [row] = await sql<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${t.schema}".job WHERE id = ANY($1::uuid[]) AND state = 'succeeded'`,
        [liveIds],
      );
      return row!.n === liveIds.length;
    });

    await expect(t.admin.purge({})).rejects.toThrow(/no cutoff given.*Potential fix: purge\(\{ succeededBefore/);
    await expect(t.admin.purge({ failedBefore: 'yesterday' as never })).rejects.toThrow(
      /"failedBefore" must be a valid Date, got the string "yesterday"/,
    );
    await expect(t.admin.purge(undefined as never)).rejects.toThrow(/no cutoff given/);
  });

  it('rests "pause" ms before each statement after the first: every round commits on its own, and the rest shows', async () => {
    const t = await boot('purgepause');
    await fabricate(t.schema, 'succeeded', 3 * BULK_CHUNK, new Date(Date.now() - 2 * DAY));
    const left = async () =>
      (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${t.schema}".job WHERE queue = 'hist'`))[0]!.n;
    // Sampled from another session: a purge that did not rest (or ran as one statement) would not show
    // each count between rounds for the better part of a second.
    const seen = new Set<number>();
    let done = false;
    const sampler = (async () => {
      while (!done) {
        seen.add(await left());
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
    })();
    const result = await t.admin.purge({ succeededBefore: new Date(Date.now() - DAY), pause: 600 });
    done = true;
    await sampler;
    expect(result).toMatchObject({ jobs: { succeeded: 3 * BULK_CHUNK }, rounds: 3 });
    expect(await left()).toBe(0);
    expect([...seen].filter((n) => n === 2 * BULK_CHUNK || n === BULK_CHUNK).sort()).toEqual([
      BULK_CHUNK,
      2 * BULK_CHUNK,
    ]);
    for (const pause of [-1, 1.5, '20']) {
      const error = (await t.admin
        .purge({ succeededBefore: new Date(), pause: pause as never })
        .catch((e: unknown) => e)) as Error;
      expect(error).toBeInstanceOf(JobsError);
      expect(error.message).toMatch(
        /^JobsAdmin\.purge\(\): "pause" must be an integer >= 0, got .*Potential fix: pause: 20\.$/,
      );
    }
  });
});
