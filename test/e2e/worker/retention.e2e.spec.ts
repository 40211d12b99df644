import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { JobsAdmin, JobsError, JobsModule, RetentionService, type RetentionOptions } from 'nestjs-durable-jobs';
import { uuidv7 } from '../../../lib/model/uuid.js';
import { resolveRetentionOptions } from '../../../lib/worker/retention-options.js';
import { dropSchemas, jobsConnection, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

/** Retention's chunks, the rest between them, and its options' checks. */
const schema = uniqueSchema('ret');
const DAY = 86_400_000;
const apps: INestApplication[] = [];

afterAll(async () => {
  for (const app of apps) await app.close().catch(() => undefined);
  await dropSchemas(schema);
});

async function boot(retention: RetentionOptions): Promise<RetentionService> {
  // No worker: nothing prunes on a timer, each test runs its passes itself.
  const app = await startJobsApp(schema, { worker: { enabled: false }, retention }, { providers: [] });
  apps.push(app);
  return app.get(RetentionService);
}

/** A finished job as the worker leaves it, ended `ago` ms before now, with an id of its time. */
async function finished(
  state: 'succeeded' | 'failed' | 'cancelled' | 'skipped',
  ago: number,
  name: string,
): Promise<string> {
  const at = new Date(Date.now() - ago);
  const id = uuidv7(at.getTime());
  await sql(
    `INSERT INTO "${schema}".job (id, name, queue, state, run_at, attempt, created_at, started_at, completed_at)
     VALUES ($1, $2, 'default', $3, $4, 1, $4, $4, $4)`,
    [id, name, state, at],
  );
  return id;
}

/** A settled batch ended `ago` ms before now, with `members` finished member jobs of its time. */
async function settledBatch(
  name: string,
  ago: number,
  members: number,
  state: 'succeeded' | 'failed' | 'cancelled' | 'executing' = 'succeeded',
): Promise<string> {
  const at = new Date(Date.now() - ago);
  const id = uuidv7(at.getTime());
  await sql(
    `INSERT INTO "${schema}".job_batch (id, name, state, total, created_at, completed_at) VALUES ($1, $2, $3, $4, $5, $6)`,
    [id, name, state, members, at, state === 'executing' ? null : at],
  );
  for (let k = 0; k < members; k++) {
    await sql(
      `INSERT INTO "${schema}".job (id, name, queue, state, run_at, attempt, created_at, started_at, completed_at, batch_id)
       VALUES ($1, $2, 'default', $3, $4, 1, $4, $4, $4, $5)`,
      [uuidv7(at.getTime()), `${name}-member-${k}`, state === 'executing' ? 'succeeded' : state, at, id],
    );
  }
  return id;
}

const batchNames = async (): Promise<string[]> =>
  (await sql<{ name: string }>(`SELECT name FROM "${schema}".job_batch ORDER BY id`)).map((r) => r.name);

const names = async (): Promise<string[]> =>
  (await sql<{ name: string }>(`SELECT name FROM "${schema}".job ORDER BY id`)).map((r) => r.name);

beforeEach(async () => {
  if (apps.length) await sql(`DELETE FROM "${schema}".job_batch; DELETE FROM "${schema}".job`);
});

describe('retention options', () => {
  it('a bad pause or chunk fails forRoot (and a forRootAsync factory) with a JobsError naming the field and the fix', async () => {
    expect(() => JobsModule.forRoot({ retention: { pause: -1 } })).toThrow(
      new JobsError(
        'JobsModule: retention.pause must be an integer number of ms from 0 to 2147483647, got -1. ' +
          'Potential fix: retention: { pause: 100 }.',
      ),
    );
    // forRootAsync: the factory's options are checked as they arrive, before the database is opened.
    await expect(
      Test.createTestingModule({
        imports: [JobsModule.forRootAsync({ useFactory: () => ({ ...jobsConnection(), retention: { chunk: 0 } }) })],
      }).compile(),
    ).rejects.toThrow(/^JobsModule: retention\.chunk must be an integer from 1 to 100000, got 0\./);
    expect(() => resolveRetentionOptions({ chunk: 0 })).toThrow(
      /^JobsModule: retention\.chunk must be an integer from 1 to 100000, got 0\. Potential fix: retention: \{ chunk: 2000 \}\.$/,
    );
    expect(() => resolveRetentionOptions({ chunk: 2.5 })).toThrow(/retention\.chunk must be an integer/);
    expect(() => resolveRetentionOptions({ pause: '20' as never })).toThrow(/got the string "20"/);
    expect(() => resolveRetentionOptions({ interval: 0 })).toThrow(
      /retention\.interval must be an integer number of ms from 1/,
    );
    // 0 forgets successes as they are written; below it is refused.
    expect(resolveRetentionOptions({ succeeded: 0 }).succeeded).toBe(0);
    expect(() => resolveRetentionOptions({ succeeded: -1 })).toThrow(
      /retention\.succeeded must be an integer number of ms from 0, or false to keep the rows, got -1/,
    );
    expect(() => resolveRetentionOptions({ failed: 0 })).toThrow(
      /retention\.failed must be a positive integer number of ms, or false to keep the rows, got 0/,
    );
    expect(() => resolveRetentionOptions({ failed: true as never })).toThrow(/retention\.failed must be/);
    expect(() => resolveRetentionOptions({ cancelled: -5 })).toThrow(
      new JobsError(
        'JobsModule: retention.cancelled must be a positive integer number of ms, or false to keep the rows, got -5. ' +
          'Potential fix: retention: { cancelled: 7 * 86_400_000 }.',
      ),
    );
    expect(() => JobsModule.forRoot({ retention: { cancelled: '1d' as never } })).toThrow(
      /^JobsModule: retention\.cancelled must be a positive integer number of ms, or false to keep the rows, got the string "1d"\./,
    );
  });

  it('cancelled follows failed when left out: its value, its default, or false; set, it stands on its own', () => {
    expect(resolveRetentionOptions({ failed: 5 * DAY })).toMatchObject({ failed: 5 * DAY, cancelled: 5 * DAY });
    expect(resolveRetentionOptions({ failed: false })).toMatchObject({ failed: false, cancelled: false });
    expect(resolveRetentionOptions({ failed: false, cancelled: DAY })).toMatchObject({ failed: false, cancelled: DAY });
    expect(resolveRetentionOptions({ cancelled: false })).toMatchObject({ failed: 30 * DAY, cancelled: false });
  });

  it('fills in the defaults: 7 and 30 days, a minute, 100 ms of rest between chunks of 2000', () => {
    expect(resolveRetentionOptions(undefined)).toEqual({
      succeeded: 7 * DAY,
      failed: 30 * DAY,
      cancelled: 30 * DAY,
      workers: 7 * DAY,
      interval: 60_000,
      pause: 100,
      chunk: 2_000,
    });
    expect(resolveRetentionOptions({ succeeded: false, pause: 0, chunk: 1 })).toMatchObject({
      succeeded: false,
      pause: 0,
      chunk: 1,
    });
  });
});

describe('cancelled jobs by their own retention', () => {
  it('prunes cancelled jobs and batches by retention.cancelled, failed and skipped ones by retention.failed', async () => {
    const retention = await boot({ failed: 30 * DAY, cancelled: 2 * DAY, chunk: 2, pause: 0 });
    await finished('failed', 40 * DAY, 'failed-40d');
    await finished('cancelled', 40 * DAY - 1000, 'cancelled-40d');
    await finished('failed', 10 * DAY, 'failed-10d');
    await finished('cancelled', 10 * DAY - 1000, 'cancelled-10d');
    await finished('skipped', 10 * DAY - 2000, 'skipped-10d');
    await finished('cancelled', 10 * DAY - 3000, 'cancelled-10d-b');
    await finished('cancelled', DAY, 'cancelled-1d');
    await settledBatch('failed-batch-10d', 10 * DAY - 4000, 2, 'failed');
    await settledBatch('cancelled-batch-10d', 10 * DAY - 5000, 2, 'cancelled');
    await settledBatch('cancelled-batch-1d', DAY - 1000, 1, 'cancelled');
    await retention.prune();
    expect(await names()).toEqual([
      'failed-10d',
      'skipped-10d',
      'failed-batch-10d-member-0',
      'failed-batch-10d-member-1',
      'cancelled-1d',
      'cancelled-batch-1d-member-0',
    ]);
    expect(await batchNames()).toEqual(['failed-batch-10d', 'cancelled-batch-1d']);
  });

  it('keeps cancelled jobs longer than failed ones, or for good with false', async () => {
    const longer = await boot({ failed: 2 * DAY, cancelled: 30 * DAY, pause: 0 });
    await finished('failed', 10 * DAY, 'failed-10d');
    await finished('cancelled', 10 * DAY - 1000, 'cancelled-10d');
    await finished('cancelled', 40 * DAY, 'cancelled-40d');
    await settledBatch('cancelled-batch-10d', 10 * DAY - 2000, 1, 'cancelled');
    await longer.prune();
    expect(await names()).toEqual(['cancelled-10d', 'cancelled-batch-10d-member-0']);

    await sql(`DELETE FROM "${schema}".job_batch; DELETE FROM "${schema}".job`);
    const forGood = await boot({ failed: 2 * DAY, cancelled: false, pause: 0 });
    await finished('cancelled', 4_000 * DAY, 'cancelled-ages-ago');
    await finished('failed', 10 * DAY, 'failed-10d');
    await settledBatch('cancelled-batch-ages-ago', 4_000 * DAY - 1000, 1, 'cancelled');
    await forGood.prune();
    expect(await names()).toEqual(['cancelled-ages-ago', 'cancelled-batch-ages-ago-member-0']);
    expect(await batchNames()).toEqual(['cancelled-batch-ages-ago']);
  });

  it('without retention.cancelled, cancelled jobs and batches go with the failed ones, as before', async () => {
    const retention = await boot({ failed: 2 * DAY, pause: 0 });
    await finished('cancelled', 10 * DAY, 'cancelled-10d');
    await finished('failed', 10 * DAY - 1000, 'failed-10d');
    await finished('cancelled', DAY, 'cancelled-1d');
    await settledBatch('cancelled-batch-10d', 10 * DAY - 2000, 1, 'cancelled');
    await retention.prune();
    expect(await names()).toEqual(['cancelled-1d']);
    expect(await batchNames()).toEqual([]);
  });
});

describe('a pass in chunks with a rest between them', () => {
  it('deletes every row past its retention, across the chunks, and keeps the rows between them', async () => {
    const retention = await boot({ chunk: 3, pause: 5 });
    // Old successes with old failures (kept for 30 days) between them: each chunk starts past the
    // last row the one before it deleted, so the kept rows must not stop it or be deleted.
    for (let k = 0; k < 10; k++) {
      await finished('succeeded', 20 * DAY - k * 1000, `old-ok-${k}`);
      if (k % 3 === 0) await finished('failed', 20 * DAY - k * 1000 - 500, `old-failed-${k}`);
    }
    await finished('succeeded', 2 * DAY, 'recent-ok');
    await retention.prune();
    expect(await names()).toEqual(['old-failed-0', 'old-failed-3', 'old-failed-6', 'old-failed-9', 'recent-ok']);
  });

  it('stop() during the rest ends the pass after its current chunk, without waiting out the rest', async () => {
    // An hour's rest: a stop that waited for it would outlast the test's timeout.
    const retention = await boot({ chunk: 1, pause: 3_600_000 });
    for (let k = 0; k < 3; k++) await finished('succeeded', 20 * DAY - k * 1000, `old-ok-${k}`);
    const pass = retention.prune();
    await waitFor('the first chunk', async () => (await names()).length === 2);
    await retention.stop();
    await pass;
    expect(await names()).toEqual(['old-ok-1', 'old-ok-2']);
  });

  it('deletes every settled batch past its retention in one pass, in rounds of about a chunk of members', async () => {
    // 3 member rows per round: one batch of 3 a round, and the 7-member batch alone in its own.
    const retention = await boot({ chunk: 3, pause: 5 });
    for (let k = 0; k < 5; k++) await settledBatch(`old-${k}`, 40 * DAY - k * 1000, 3);
    await settledBatch('old-large', 40 * DAY - 9000, 7, 'failed');
    await settledBatch('old-executing', 40 * DAY - 10_000, 2, 'executing');
    await settledBatch('recent', 10 * DAY, 2);
    await retention.prune();
    expect(await batchNames()).toEqual(['old-executing', 'recent']);
    expect(await names()).toEqual([
      'old-executing-member-0',
      'old-executing-member-1',
      'recent-member-0',
      'recent-member-1',
    ]);
  });

  it("plans its deletes and JobsAdmin.purge()'s without JIT, whatever the server's JIT settings", async () => {
    // A statement-level trigger of the test's own notes the setting each deleting statement ran with:
    // at the server's default (jit on), a chunk over a long history was compiled for 100-150 ms.
    await sql(`CREATE TABLE "${schema}".jit_seen (tbl text, jit text)`);
    await sql(`CREATE FUNCTION "${schema}".note_jit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO "${schema}".jit_seen VALUES (TG_TABLE_NAME, current_setting('jit')); RETURN NULL; END $$`);
    for (const table of ['job', 'job_batch']) {
      await sql(`CREATE TRIGGER note_jit AFTER DELETE ON "${schema}".${table}
        FOR EACH STATEMENT EXECUTE FUNCTION "${schema}".note_jit()`);
    }
    try {
      const retention = await boot({ chunk: 2, pause: 0 });
      for (let k = 0; k < 3; k++) await finished('succeeded', 20 * DAY - k * 1000, `old-ok-${k}`);
      await settledBatch('old-batch', 40 * DAY, 2);
      await retention.prune();
      await finished('failed', 40 * DAY, 'old-failed');
      const purged = await apps[apps.length - 1]!.get(JobsAdmin).purge({ failedBefore: new Date() });
      expect(purged.jobs.failed).toBe(1);
      expect(await names()).toEqual([]);
      const seen = await sql<{ tbl: string; jit: string }>(`SELECT tbl, jit FROM "${schema}".jit_seen`);
      expect(new Set(seen.map((r) => r.tbl))).toEqual(new Set(['job', 'job_batch']));
      expect(seen.filter((r) => r.jit !== 'off')).toEqual([]);
    } finally {
      for (const table of ['job', 'job_batch']) await sql(`DROP TRIGGER note_jit ON "${schema}".${table}`);
      await sql(`DROP FUNCTION "${schema}".note_jit(); DROP TABLE "${schema}".jit_seen`);
    }
  });

  it('rests between batch rounds, and stop() ends the pass after the round under way', async () => {
    const retention = await boot({ chunk: 3, pause: 3_600_000 });
    for (let k = 0; k < 3; k++) await settledBatch(`old-${k}`, 40 * DAY - k * 1000, 3);
    const pass = retention.prune();
    // One statement over all three would never show two of them left.
    await waitFor('the first round', async () => (await batchNames()).length === 2);
    await retention.stop();
    await pass;
    expect(await batchNames()).toEqual(['old-1', 'old-2']);
    expect(await names()).toHaveLength(6);
  });

  it("keeps a settled batch while a member's onFailure hook has not run", async () => {
    const retention = await boot({ chunk: 100, pause: 0 });
    const held = await settledBatch('hook-pending', 40 * DAY, 2, 'failed');
    await settledBatch('no-hook', 40 * DAY - 1000, 2, 'failed');
    await sql(`UPDATE "${schema}".job SET failure_hook = 'pending' WHERE batch_id = $1 AND name LIKE '%-0'`, [held]);
    await retention.prune();
    expect(await batchNames()).toEqual(['hook-pending']);
    await sql(`UPDATE "${schema}".job SET failure_hook = 'done' WHERE batch_id = $1`, [held]);
    await retention.prune();
    expect(await batchNames()).toEqual([]);
  });
});
