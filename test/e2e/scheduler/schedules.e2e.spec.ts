import type { INestApplication } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Cron, Job, JobsError, RecurringSchedules, type JobHandler } from 'nestjs-durable-jobs';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import { ScheduleRunner } from '../../../lib/scheduler/schedule-runner.service.js';
import { SCHEDULE_STORAGE, type ScheduleStorage } from '../../../lib/storage/schedules/schedule-storage.interface.js';
import { uuidv7 } from '../../../lib/model/uuid.js';
import { sql, uniqueSchema } from '../../support/database.js';
import { Work, boot, close, closeScheduleApps, jobsOf, trackSchema } from '../../support/schedule-apps.js';
import { waitFor } from '../../support/wait.js';

// Several instances on one schema, moved by ManualClocks (see schedule-apps.ts).
// Start-up checks, catch-up and the sample app's schedule: schedules-startup.e2e.spec.ts.

@Cron('* * * * * *', { name: 'every-second' })
@Job('tick')
class Tick implements JobHandler<null> {
  run() {}
}

/** Holds its run until the test opens the gate: a previous run still active. */
const gate = { open: false, waiters: [] as Array<() => void> };
@Job('gated')
class Gated implements JobHandler<null> {
  async run() {
    if (!gate.open) await new Promise<void>((resolve) => gate.waiters.push(resolve));
  }
}

const MINUTE = 60_000;

afterAll(async () => {
  gate.open = true;
  for (const release of gate.waiters.splice(0)) release();
  await closeScheduleApps();
});

describe('three instances on one schema', () => {
  const schema = uniqueSchema('sched');
  const clock = new ManualClock(new Date('2026-01-05T00:00:00Z'));
  let a: INestApplication, b: INestApplication, c: INestApplication;
  let cluster: INestApplication[];
  const settle = () => Promise.all(cluster.map((app) => app.get(RecurringSchedules).runDue()));
  const step = async (ms: number) => {
    clock.advance(ms);
    await settle();
  };

  beforeAll(async () => {
    trackSchema(schema);
    const providers = [Tick, Work, Gated];
    // B imports ScheduleModule itself: its timers go to the app's registry; A and C use their own.
    [a, b, c] = await Promise.all([
      boot(schema, clock, providers),
      boot(schema, clock, providers, { withScheduleModule: true }),
      boot(schema, clock, providers),
    ]);
    cluster = [a, b, c];
  });

  it('an every-second schedule over 10 s of clock: exactly one job per tick', async () => {
    for (let i = 1; i <= 10; i++) {
      await step(1_000);
      expect(await jobsOf(schema, 'every-second')).toHaveLength(i);
    }
    await settle();
    const jobs = await jobsOf(schema, 'every-second');
    expect(jobs.map((j) => j.run_at.toISOString())).toEqual(
      Array.from({ length: 10 }, (_, i) =>
        new Date(Date.parse('2026-01-05T00:00:00Z') + (i + 1) * 1_000).toISOString(),
      ),
    );
    const [info] = (await a.get(RecurringSchedules).list()).filter((s) => s.name === 'every-second');
    expect(info).toMatchObject({ source: 'code', jobName: 'tick', paused: false, lastRunAt: jobs[9]!.run_at });
    expect(info!.nextRunAt!.toISOString()).toBe('2026-01-05T00:00:11.000Z');
    // Code-defined schedules may be paused (not replaced): keeps the rest of this file quiet.
    await a.get(RecurringSchedules).pause('every-second');
  });

  it('the compare-and-set lets exactly one of three concurrent writers win each tick, and no late writer after it', async () => {
    await a.get(RecurringSchedules).upsert('race', Work, '0 0 * * * *', { payload: { n: 0 } });
    const storages = cluster.map((app) => app.get<ScheduleStorage>(SCHEDULE_STORAGE));
    let due = (await a.get(RecurringSchedules).get('race'))!.nextRunAt!;
    for (let round = 0; round < 20; round++) {
      const next = new Date(due.getTime() + 3_600_000);
      const fire = (s: ScheduleStorage) =>
        s.fire({ name: 'race', due, next, ticks: [due], jobIds: [uuidv7()], now: clock.now() });
      const results = await Promise.all(storages.map(fire));
      expect(results.filter((r) => r.won)).toHaveLength(1);
      // The tick's job finishes, as a worker would finish it. The unique index covers live jobs
      // only, so from here the compare-and-set alone stops a writer that read this tick as due.
      await sql(
        `UPDATE "${schema}".job SET state = 'succeeded', completed_at = $2
          WHERE unique_key LIKE 'schedule:race:%' AND run_at = $1`,
        [due, clock.now()],
      );
      for (const storage of storages) expect((await fire(storage)).won).toBe(false);
      due = next;
    }
    const perTick = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".job WHERE unique_key LIKE 'schedule:race:%' GROUP BY run_at`,
    );
    expect(perTick).toEqual(Array.from({ length: 20 }, () => ({ n: 1 })));
    expect(await a.get(RecurringSchedules).remove('race')).toBe(true);
  });

  it('a dynamic upsert on one instance arms the timers of the others, by notification; so do changes and removal', async () => {
    const timer = b.get(ScheduleRunner).timerName('dyn');
    // B's registry is the app's own (it imported ScheduleModule); A's is private to the library.
    expect(b.get(ScheduleRunner).timers).toBe(b.get(SchedulerRegistry));
    expect(() => a.get(SchedulerRegistry)).toThrow();
    const created = await a.get(RecurringSchedules).upsert('dyn', Work, '0 */10 * * * *', { payload: { n: 1 } });
    expect(created).toMatchObject({ source: 'dynamic', jobName: 'work', timeZone: 'UTC', paused: false });
    await waitFor('B to arm a timer for dyn', () => b.get(SchedulerRegistry).doesExist('cron', timer));
    await waitFor('C to arm a timer for dyn', () => c.get(ScheduleRunner).timers.doesExist('cron', timer));
    await step(10 * MINUTE);
    expect((await jobsOf(schema, 'dyn')).map((j) => j.payload)).toEqual([{ n: 1 }]);

    await a.get(RecurringSchedules).upsert('dyn', Work, '0 0 * * * *', { payload: { n: 2 } });
    await waitFor(
      'B to re-arm dyn hourly',
      () => String(b.get(SchedulerRegistry).getCronJob(timer).cronTime.source) === '0 0 * * * *',
    );
    expect(await b.get(RecurringSchedules).remove('dyn')).toBe(true);
    await waitFor('A and C to drop the timer', () =>
      [a, c].every((app) => !app.get(ScheduleRunner).timers.doesExist('cron', timer)),
    );
    expect(b.get(SchedulerRegistry).doesExist('cron', timer)).toBe(false);
  });

  it('pause stops ticks on every instance; resume starts from the next tick after now', async () => {
    const schedules = b.get(RecurringSchedules);
    await schedules.upsert('pr', Work, '0 * * * * *');
    await step(MINUTE);
    expect(await jobsOf(schema, 'pr')).toHaveLength(1);
    await schedules.pause('pr');
    const timer = a.get(ScheduleRunner).timerName('pr');
    await waitFor('A to disarm pr', () => !a.get(ScheduleRunner).timers.doesExist('cron', timer));
    expect(await c.get(RecurringSchedules).get('pr')).toMatchObject({ paused: true, nextRunAt: null });
    await step(5 * MINUTE);
    expect(await jobsOf(schema, 'pr')).toHaveLength(1);
    await c.get(RecurringSchedules).resume('pr');
    const resumed = (await schedules.get('pr'))!;
    expect(resumed.paused).toBe(false);
    expect(resumed.nextRunAt!.getTime()).toBe(Math.floor(clock.now().getTime() / MINUTE) * MINUTE + MINUTE);
    await step(MINUTE);
    const jobs = await jobsOf(schema, 'pr');
    expect(jobs).toHaveLength(2);
    expect(jobs[1]!.run_at).toEqual(resumed.nextRunAt);
    await schedules.remove('pr');
  });

  it("overlap 'skip': ticks while the previous run is unfinished are recorded as skipped", async () => {
    gate.open = false;
    const schedules = a.get(RecurringSchedules);
    await schedules.upsert('ov', Gated, '0 * * * * *', { overlap: 'skip' });
    await step(MINUTE);
    await step(MINUTE);
    await step(MINUTE);
    let jobs = await jobsOf(schema, 'ov');
    expect(jobs.map((j) => j.state === 'skipped')).toEqual([false, true, true]);
    expect(['queued', 'active']).toContain(jobs[0]!.state);
    expect(jobs[1]!.last_error!.name).toBe('ScheduleOverlapSkipped');
    let info = (await schedules.get('ov'))!;
    expect(info).toMatchObject({ skippedCount: 2, lastSkippedAt: jobs[2]!.run_at, lastRunAt: jobs[0]!.run_at });
    expect(['queued', 'active']).toContain(info.lastJobState);

    gate.open = true;
    for (const release of gate.waiters.splice(0)) release();
    await waitFor('the first run to finish', async () => (await schedules.get('ov'))!.lastJobState === 'succeeded');
    await step(MINUTE);
    jobs = await jobsOf(schema, 'ov');
    expect(jobs.map((j) => j.state === 'skipped')).toEqual([false, true, true, false]);
    info = (await schedules.get('ov'))!;
    expect(info).toMatchObject({ skippedCount: 2, lastRunAt: jobs[3]!.run_at });
    await schedules.remove('ov');
  });

  it("overlap 'skip' with catch-up 'all': after a gap only the first missed tick is queued, the rest are skipped", async () => {
    const schedules = c.get(RecurringSchedules);
    await schedules.upsert('gap', Work, '0 * * * * *', { catchUp: 'all', overlap: 'skip' });
    const first = (await schedules.get('gap'))!.nextRunAt!;
    // Five ticks pass in one jump of the clock, as while every instance was down.
    clock.set(first.getTime() + 4 * MINUTE);
    await settle();
    const jobs = await jobsOf(schema, 'gap');
    expect(jobs.map((j) => (j.run_at.getTime() - first.getTime()) / MINUTE)).toEqual([0, 1, 2, 3, 4]);
    expect(jobs[0]!.state).not.toBe('skipped');
    expect(jobs.slice(1).map((j) => [j.state, j.last_error?.name])).toEqual(
      Array.from({ length: 4 }, () => ['skipped', 'ScheduleOverlapSkipped']),
    );
    expect(await schedules.get('gap')).toMatchObject({
      skippedCount: 4,
      lastRunAt: first,
      lastSkippedAt: jobs[4]!.run_at,
    });
    await schedules.remove('gap');
  });

  it('a daily 02:30 in Europe/Berlin runs exactly once on both DST change days', async () => {
    const schedules = c.get(RecurringSchedules);
    const night = async (name: string, dayBefore: string) => {
      clock.set(new Date(`${dayBefore}T12:00:00Z`));
      await settle();
      await schedules.upsert(name, Work, '30 2 * * *', { timeZone: 'Europe/Berlin' });
      // Through the night in 10-minute steps, each followed by a full pass on every instance.
      for (let i = 0; i < 6 * 18; i++) await step(10 * MINUTE);
      const jobs = await jobsOf(schema, name);
      const next = (await schedules.get(name))!.nextRunAt!;
      await schedules.remove(name);
      return { runs: jobs.map((j) => j.run_at.toISOString()), next: next.toISOString() };
    };
    // 02:30 does not exist on 2026-03-29 (02:00 CET → 03:00 CEST): it runs once, at 03:00 CEST.
    expect(await night('dst-spring', '2026-03-28')).toEqual({
      runs: ['2026-03-29T01:00:00.000Z'],
      next: '2026-03-30T00:30:00.000Z',
    });
    // 02:30 happens twice on 2026-10-25 (03:00 CEST → 02:00 CET): it runs once, at the first.
    expect(await night('dst-autumn', '2026-10-24')).toEqual({
      runs: ['2026-10-25T00:30:00.000Z'],
      next: '2026-10-26T01:30:00.000Z',
    });
  });

  it('a dynamic call can neither replace nor remove a code-defined schedule', async () => {
    const schedules = b.get(RecurringSchedules);
    await expect(schedules.upsert('every-second', Work, '* * * * *')).rejects.toThrow(
      /upsert\('every-second'\): a code-defined schedule \(@Cron\) has this name.*Potential fix: /,
    );
    await expect(schedules.remove('every-second')).rejects.toThrow(
      /"every-second" is code-defined \(@Cron\).*Potential fix: /,
    );
    expect((await schedules.get('every-second'))!).toMatchObject({
      source: 'code',
      cron: '* * * * * *',
      jobName: 'tick',
    });
    expect(await schedules.remove('no-such-schedule')).toBe(false);
    await expect(schedules.pause('no-such-schedule')).rejects.toThrow(/no schedule has this name\. Potential fix: /);
  });

  it('upsert rejects bad input at the call site', async () => {
    const schedules = a.get(RecurringSchedules);
    const rejects = (call: Promise<unknown>, message: RegExp) => expect(call).rejects.toThrow(message);
    await rejects(
      schedules.upsert('bad', Work, '61 * * * *'),
      /upsert\('bad'\): invalid cron expression "61 \* \* \* \*".*Potential fix: /,
    );
    await rejects(
      schedules.upsert('bad', Work, '0 3 * * *', { timeZone: 'Mars/Olympus' }),
      /time zone "Mars\/Olympus" is not a valid IANA time zone.*Potential fix: /,
    );
    await rejects(schedules.upsert('bad', 'no-such-job', '0 3 * * *'), /Unknown job "no-such-job".*Potential fix: /);
    await rejects(
      schedules.upsert('bad', Work, '0 3 * * *', { payload: { n: 1n } as never }),
      /not JSON-serialisable at \$\.n.*Potential fix: /,
    );
    await rejects(
      schedules.upsert('bad', Work, '0 3 * * *', { catchUp: 'some' as never }),
      /catchUp must be one of.*Potential fix: /,
    );
    await expect(schedules.upsert('bad', Work, '0 3 * * *')).resolves.toMatchObject({ name: 'bad' });
    await schedules.remove('bad');
    await expect(a.get(RecurringSchedules).upsert('bad2', Work, '0 0 31 2 *')).rejects.toBeInstanceOf(JobsError);
  });

  afterAll(async () => {
    for (const app of cluster ?? []) await close(app);
  });
});
