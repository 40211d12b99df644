import { Cron, Job, RecurringSchedules, type JobHandler } from 'nestjs-durable-jobs';
import { ManualClock } from 'nestjs-durable-jobs/testing';
import { uniqueSchema } from '../../support/database.js';
import { boot, closeScheduleApps, jobsOf, trackSchema } from '../../support/schedule-apps.js';

// scheduler: { enabled: false }: an instance that writes its @Cron declarations but turns no tick
// into a job, while an instance with its scheduler on does. Time moves only through the
// ManualClock; what is checked is read after an instance's start, which, scheduler on, turns
// every due tick into jobs before app.init() resolves (JobsLifecycle awaits it).

@Cron('0 * * * * *', { name: 'sd-every-minute' })
@Job('sd-minutely')
class Minutely implements JobHandler<null> {
  run() {}
}

afterAll(closeScheduleApps);

const nextRunAt = async (schedules: RecurringSchedules): Promise<string | undefined> =>
  (await schedules.list()).find((s) => s.name === 'sd-every-minute')?.nextRunAt?.toISOString();

describe('scheduler.enabled: false', () => {
  it('writes the schedule but fires none of its due ticks; an instance with the scheduler on fires them', async () => {
    const schema = uniqueSchema('schedoff');
    trackSchema(schema);
    const clock = new ManualClock(new Date('2026-03-02T10:00:30Z'));
    const off = { scheduler: { enabled: false } };

    const first = await boot(schema, clock, [Minutely], off);
    const schedules = first.get(RecurringSchedules);
    // Declared at start all the same: the schedule is there, due at the next minute.
    expect(await nextRunAt(schedules)).toBe('2026-03-02T10:01:00.000Z');

    // Ten ticks fall due while it runs, and another instance with its scheduler off starts.
    clock.advance(10 * 60_000);
    await boot(schema, clock, [Minutely], off);
    expect(await jobsOf(schema, 'sd-every-minute')).toEqual([]);
    expect(await nextRunAt(schedules)).toBe('2026-03-02T10:01:00.000Z');

    // An instance with its scheduler on turns them into a job (catchUp 'latest': the last tick) at its start.
    await boot(schema, clock, [Minutely]);
    const jobs = await jobsOf(schema, 'sd-every-minute');
    expect(jobs.map((j) => j.run_at.toISOString())).toEqual(['2026-03-02T10:10:00.000Z']);
    expect(await nextRunAt(schedules)).toBe('2026-03-02T10:11:00.000Z');
  });
});
