import request from 'supertest';
import { Cron, Job, JobQueue, RecurringSchedules, type JobHandler } from 'nestjs-durable-jobs';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import { uniqueSchema } from '../../support/database.js';
import { startSampleApp } from '../../support/sample-app.js';
import { Work, boot, close, closeScheduleApps, jobsOf, trackApp, trackSchema } from '../../support/schedule-apps.js';
import { waitFor } from '../../support/wait.js';

// Schedules at an instance's start: bad declarations, catch-up after every
// instance was down, and the sample app's nightly report. Time moves only
// through ManualClocks (see schedule-apps.ts).

afterAll(closeScheduleApps);

describe('at start', () => {
  it('an invalid expression, an invalid time zone or a missing @Job fails the start, naming the class', async () => {
    const schema = uniqueSchema('schedbad');
    trackSchema(schema);
    const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
    @Cron('61 * * * *')
    @Job('bad-expression')
    class BadExpression implements JobHandler {
      run() {}
    }
    @Cron('0 3 * * *', { timeZone: 'Europe/Atlantis' })
    @Job('bad-zone')
    class BadZone implements JobHandler {
      run() {}
    }
    @Cron('0 3 * * *')
    class CronWithoutJob {
      run() {}
    }
    await expect(boot(schema, clock, [BadExpression])).rejects.toThrow(
      /@Cron\('61 \* \* \* \*'\) on BadExpression: invalid cron expression .*Potential fix: /,
    );
    await expect(boot(schema, clock, [BadZone])).rejects.toThrow(
      /@Cron\('0 3 \* \* \*'\) on BadZone: time zone "Europe\/Atlantis" is not a valid IANA time zone.*Potential fix: /,
    );
    await expect(boot(schema, clock, [CronWithoutJob])).rejects.toThrow(
      /CronWithoutJob has @Cron\('0 3 \* \* \*'\) but no @Job.*Potential fix: /,
    );
  });

  it('after every instance was down: catch-up latest, all (at most 1,000) and none; obsolete code-defined rows removed', async () => {
    const schema = uniqueSchema('schedgap');
    trackSchema(schema);
    const clock = new ManualClock(new Date('2026-02-01T00:00:00Z'));
    @Cron('0 0 * * * *', { catchUp: 'latest' })
    @Job('catch-latest')
    class CatchLatest implements JobHandler {
      run() {}
    }
    @Cron('0 0 * * * *', { catchUp: 'all' })
    @Job('catch-all')
    class CatchAll implements JobHandler {
      run() {}
    }
    @Cron('0 0 * * * *', { catchUp: 'none' })
    @Job('catch-none')
    class CatchNone implements JobHandler {
      run() {}
    }
    @Cron('* * * * * *', { catchUp: 'all', name: 'catch-many' })
    @Job('catch-many')
    class CatchMany implements JobHandler {
      run() {}
    }
    @Cron('0 0 * * *', { payload: { n: 1 } })
    @Job('obsolete')
    class Obsolete implements JobHandler {
      run() {}
    }
    @Cron('0 0 * * *')
    @Job('foreign')
    class Foreign implements JobHandler {
      run() {}
    }
    const kept = [CatchLatest, CatchAll, CatchNone, CatchMany, Work];
    // Workers off: the jobs stay queued where the test can count them.
    const first = await boot(schema, clock, [...kept, Obsolete, Foreign], { worker: { enabled: false } });
    await first.get(RecurringSchedules).upsert('dynamic-kept', Work, '0 0 * * * *');
    expect((await first.get(RecurringSchedules).list()).map((s) => s.name)).toEqual([
      'catch-all',
      'catch-latest',
      'catch-many',
      'catch-none',
      'dynamic-kept',
      'foreign',
      'obsolete',
    ]);
    await close(first);

    clock.set(new Date('2026-02-01T10:30:00Z'));
    // "foreign" is now another service's job, but its @Cron was this service's: it goes with this
    // service's code (the service that runs the job now declares its own).
    const second = await boot(schema, clock, kept, { worker: { enabled: false }, externalJobs: ['foreign'] });
    const list = await second.get(RecurringSchedules).list();
    expect(list.map((s) => [s.name, s.source])).toEqual([
      ['catch-all', 'code'],
      ['catch-latest', 'code'],
      ['catch-many', 'code'],
      ['catch-none', 'code'],
      ['dynamic-kept', 'dynamic'],
    ]);
    const hours = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => `2026-02-01T${String(from + i).padStart(2, '0')}:00:00.000Z`);
    const runs = async (name: string) => (await jobsOf(schema, name)).map((j) => j.run_at.toISOString());
    expect(await runs('catch-latest')).toEqual(hours(10, 10));
    expect(await runs('catch-all')).toEqual(hours(1, 10));
    expect(await runs('catch-none')).toEqual([]);
    expect(await runs('dynamic-kept')).toEqual(hours(10, 10));
    const many = await runs('catch-many');
    expect(many).toHaveLength(1_000);
    expect([many[0], many[999]]).toEqual(['2026-02-01T00:00:01.000Z', '2026-02-01T00:16:40.000Z']);
    const next = Object.fromEntries(list.map((s) => [s.name, s.nextRunAt!.toISOString()]));
    expect(next).toMatchObject({
      'catch-latest': '2026-02-01T11:00:00.000Z',
      'catch-none': '2026-02-01T11:00:00.000Z',
      'catch-many': '2026-02-01T10:30:01.000Z',
    });
    await close(second);
  });
});

describe('sample app', () => {
  it('GET /schedules lists the nightly report at 03:00 Berlin time (03:00 CEST on the spring-forward day)', async () => {
    const schema = uniqueSchema('schedsample');
    trackSchema(schema, `${schema}_jobs`);
    const clock = new ManualClock(new Date('2026-03-28T12:00:00Z'));
    // This file's own @Job classes are not the sample's.
    const app = await startSampleApp({ schema, clock, worker: { pollInterval: 100 }, unregisteredJobs: 'ignore' });
    trackApp(app);
    const res = await request(app.getHttpServer()).get('/schedules').expect(200);
    expect(res.body).toEqual([
      expect.objectContaining({
        name: 'nightly-report',
        jobName: 'nightly-report',
        cron: '0 3 * * *',
        timeZone: 'Europe/Berlin',
        source: 'code',
        paused: false,
        nextRunAt: '2026-03-29T01:00:00.000Z',
        lastRunAt: null,
      }),
    ]);
    clock.set(new Date('2026-03-29T01:00:00Z'));
    await app.get(RecurringSchedules).runDue();
    const ran = await waitFor('the nightly report to run', async () => {
      const [nightly] = await app.get(RecurringSchedules).list();
      return nightly!.lastJobState === 'succeeded' ? nightly : null;
    });
    expect((await app.get(JobQueue).get(ran.lastJobId!))!).toMatchObject({
      queue: 'reports',
      result: { orders: 0, totalCents: 0 },
    });
    await close(app);
  });
});
