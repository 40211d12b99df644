import { CoalescingTask } from '../../lib/scheduler/coalescing-task.js';
import { JobsError } from '../../lib/model/index.js';
import {
  canonicalTimeZone,
  CronSchedule,
  fixedOffsetZone,
  isUtcOffset,
  MAX_CATCH_UP_TICKS,
  planTicks,
} from '../../lib/scheduler/cron-expression.js';
import { defineSchedule } from '../../lib/scheduler/schedule-definition.js';

const at = (iso: string) => new Date(iso);
const iso = (d: Date | null) => d?.toISOString() ?? null;

describe('CronSchedule', () => {
  it('supports a seconds field and returns the first tick strictly after', () => {
    const everySecond = CronSchedule.parse('* * * * * *', 'UTC');
    expect(iso(everySecond.next(at('2026-01-01T00:00:00.000Z')))).toBe('2026-01-01T00:00:01.000Z');
    expect(iso(everySecond.next(at('2026-01-01T00:00:00.500Z')))).toBe('2026-01-01T00:00:01.000Z');
    const everyFive = CronSchedule.parse('*/5 * * * * *', 'UTC');
    expect(iso(everyFive.next(at('2026-01-01T00:00:04.999Z')))).toBe('2026-01-01T00:00:05.000Z');
  });

  it('a daily 02:30 in Europe/Berlin fires once on each DST change day', () => {
    const daily = CronSchedule.parse('30 2 * * *', 'Europe/Berlin');
    const ticks = (from: string, n: number) => {
      const out: string[] = [];
      let t = at(from);
      for (let i = 0; i < n; i++) out.push(iso((t = daily.next(t)))!);
      return out;
    };
    // 2026-03-29: 02:00 CET jumps to 03:00 CEST, so 02:30 does not exist; it runs at 03:00 CEST.
    expect(ticks('2026-03-28T12:00:00Z', 3)).toEqual([
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T00:30:00.000Z',
      '2026-03-31T00:30:00.000Z',
    ]);
    // 2026-10-25: 03:00 CEST falls back to 02:00 CET, so 02:30 happens twice; it runs at the first.
    expect(ticks('2026-10-24T12:00:00Z', 3)).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
      '2026-10-27T01:30:00.000Z',
    ]);
  });

  it('finds the latest tick at or before a time, within a lower bound', () => {
    const hourly = CronSchedule.parse('0 * * * *', 'UTC');
    expect(iso(hourly.latestAtOrBefore(at('2026-01-01T10:30:00Z'), at('2026-01-01T00:00:00Z')))).toBe(
      '2026-01-01T10:00:00.000Z',
    );
    expect(iso(hourly.latestAtOrBefore(at('2026-01-01T10:00:00Z'), at('2026-01-01T00:00:00Z')))).toBe(
      '2026-01-01T10:00:00.000Z',
    );
    expect(hourly.latestAtOrBefore(at('2026-01-01T10:30:00Z'), at('2026-01-01T10:01:00Z'))).toBeNull();
    const yearly = CronSchedule.parse('0 0 1 1 *', 'UTC');
    expect(iso(yearly.latestAtOrBefore(at('2029-06-01T00:00:00Z'), at('2026-01-01T00:00:00Z')))).toBe(
      '2029-01-01T00:00:00.000Z',
    );
  });

  it('rejects bad expressions and zones, and an expression that never fires', () => {
    expect(() => CronSchedule.parse('61 * * * *', 'UTC')).toThrow(/out of range/);
    expect(() => CronSchedule.parse('* * *', 'UTC')).toThrow(/Too few fields/);
    expect(() => CronSchedule.parse('* * * * *', 'Mars/Phobos')).toThrow(/Invalid timezone/);
    expect(() => CronSchedule.parse('0 0 31 2 *', 'UTC').next(at('2026-01-01T00:00:00Z'))).toThrow();
  });

  it('canonicalises time zones and refuses process-dependent ones', () => {
    expect(canonicalTimeZone('europe/berlin')).toBe('Europe/Berlin');
    expect(canonicalTimeZone('utc')).toBe('UTC');
    expect(canonicalTimeZone('local')).toBeNull();
    expect(canonicalTimeZone('Mars/Phobos')).toBeNull();
  });
});

describe('time zones are IANA names on every Node version', () => {
  // Node 22 and 24 accept the first five in Intl, Node 20 none; luxon takes the UTC+… forms.
  const OFFSETS = [
    '+02:00',
    '-0500',
    '+02',
    '+00:00',
    '-00:00',
    '+2',
    '\u221202:00',
    ' +02:00 ',
    '+05:30',
    '+14:00',
    '+23:00',
    'UTC+2',
    'utc+02:00',
    'UTC-5',
    'UTC+0',
    'GMT+2',
    'GMT-05:30',
    'UT+1',
    'Z+01:00',
  ];
  const offsetOf = (zone: string) =>
    new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' })
      .formatToParts(new Date('2026-01-15T12:00:00Z'))
      .find((p) => p.type === 'timeZoneName')!.value;

  it.each(OFFSETS)('%j is an offset, refused without asking Intl', (zone) => {
    expect(isUtcOffset(zone)).toBe(true);
    expect(canonicalTimeZone(zone)).toBeNull();
  });

  it("names are not offsets, the tz database's GMT+0 and Etc/GMT-2 included", () => {
    for (const zone of [
      'UTC',
      'Europe/Berlin',
      'america/new_york',
      'Etc/GMT-2',
      'Etc/GMT+5',
      'GMT+0',
      'GMT-0',
      'GMT',
    ]) {
      expect(isUtcOffset(zone)).toBe(false);
      expect(canonicalTimeZone(zone)).not.toBeNull();
    }
  });

  it('a whole-hour offset has its Etc/GMT zone, with the inverted sign; others have none', () => {
    const cases: Array<[string, string | null]> = [
      ['+02:00', 'Etc/GMT-2'],
      ['-0500', 'Etc/GMT+5'],
      ['UTC+2', 'Etc/GMT-2'],
      ['\u221203', 'Etc/GMT+3'],
      ['+14', 'Etc/GMT-14'],
      ['-12:00', 'Etc/GMT+12'],
      ['+00:00', 'UTC'],
      ['-13:00', null],
      ['+15:00', null],
      ['+05:30', null],
      ['+02:00:00', null],
    ];
    for (const [offset, zone] of cases) expect([offset, fixedOffsetZone(offset)]).toEqual([offset, zone]);
    // The named zone really has that offset (Intl knows Etc/GMT names on every Node version).
    expect(offsetOf('Etc/GMT-2')).toBe('GMT+02:00');
    expect(offsetOf('Etc/GMT+5')).toBe('GMT-05:00');
    expect(offsetOf('Etc/GMT-14')).toBe('GMT+14:00');
    expect(offsetOf('Etc/GMT+12')).toBe('GMT-12:00');
  });

  const define = (timeZone: unknown) =>
    defineSchedule(
      '@Cron on Report',
      { name: 'report', jobName: 'report', cron: '0 3 * * *', timeZone },
      { queue: 'default', priority: 0, maxAttempts: 3, timeoutMs: null },
      1_000,
      new Date('2026-01-15T12:00:00Z'),
    );

  it('a schedule with an offset is a JobsError naming a zone and, for whole hours, its Etc/GMT form', () => {
    for (const zone of OFFSETS) expect(() => define(zone)).toThrow(JobsError);
    expect(() => define('+02:00')).toThrow(
      /@Cron on Report: time zone "\+02:00" is a UTC offset; .*timeZone: 'Europe\/Berlin'.*timeZone: 'Etc\/GMT-2' \(the sign of an Etc\/GMT name is inverted/,
    );
    expect(() => define('+05:30')).toThrow(/is a UTC offset; .*no Etc\/GMT zone has this offset.*'Asia\/Kolkata'/);
    expect(() => define('-00:00')).toThrow(/is a UTC offset; .*timeZone: 'UTC'/);
    expect(define('Etc/GMT-2')).toMatchObject({ timeZone: 'Etc/GMT-2', nextRunAt: new Date('2026-01-16T01:00:00Z') });
  });
});

describe('planTicks', () => {
  const hourly = CronSchedule.parse('0 * * * *', 'UTC');
  const due = at('2026-01-01T01:00:00Z');
  const afterGap = at('2026-01-01T10:30:00Z');
  const minute = 60_000;

  it('an on-time tick runs in every mode', () => {
    for (const mode of ['latest', 'all', 'none'] as const) {
      const plan = planTicks(hourly, due, at('2026-01-01T01:00:00.020Z'), mode, minute);
      expect(plan.run.map(iso)).toEqual(['2026-01-01T01:00:00.000Z']);
      expect(iso(plan.next)).toBe('2026-01-01T02:00:00.000Z');
    }
  });

  it('after a gap: latest runs the last missed tick once, all runs each, none runs nothing', () => {
    expect(planTicks(hourly, due, afterGap, 'latest', minute).run.map(iso)).toEqual(['2026-01-01T10:00:00.000Z']);
    const all = planTicks(hourly, due, afterGap, 'all', minute);
    expect(all.run).toHaveLength(10);
    expect(iso(all.run[0]!)).toBe('2026-01-01T01:00:00.000Z');
    expect(iso(all.run[9]!)).toBe('2026-01-01T10:00:00.000Z');
    expect(planTicks(hourly, due, afterGap, 'none', minute).run).toEqual([]);
    for (const mode of ['latest', 'all', 'none'] as const)
      expect(iso(planTicks(hourly, due, afterGap, mode, minute).next)).toBe('2026-01-01T11:00:00.000Z');
  });

  it('none still runs the latest tick when it is within the misfire threshold', () => {
    expect(planTicks(hourly, due, at('2026-01-01T10:00:30Z'), 'none', minute).run.map(iso)).toEqual([
      '2026-01-01T10:00:00.000Z',
    ]);
  });

  it(`all stops at ${MAX_CATCH_UP_TICKS} ticks and moves on to the first tick after now`, () => {
    const everySecond = CronSchedule.parse('* * * * * *', 'UTC');
    const plan = planTicks(everySecond, at('2026-01-01T00:00:01Z'), at('2026-01-01T02:00:00Z'), 'all', minute);
    expect(plan.run).toHaveLength(MAX_CATCH_UP_TICKS);
    expect(plan.truncated).toBe(true);
    expect(iso(plan.run[999]!)).toBe('2026-01-01T00:16:40.000Z');
    expect(iso(plan.next)).toBe('2026-01-01T02:00:01.000Z');
  });

  it('a due time in the future plans nothing', () => {
    expect(planTicks(hourly, due, at('2026-01-01T00:59:59Z'), 'latest', minute)).toEqual({
      run: [],
      next: due,
      truncated: false,
    });
  });
});

describe('CoalescingTask', () => {
  it('folds requests made during a run into one follow-up run that starts after them', async () => {
    const starts: number[] = [];
    let release!: () => void;
    let n = 0;
    const task = new CoalescingTask(async () => {
      starts.push(++n);
      if (n === 1) await new Promise<void>((r) => (release = r));
    });
    const first = task.run();
    const second = task.run();
    const third = task.run();
    expect(second).toBe(third);
    release();
    await Promise.all([first, second, third]);
    expect(starts).toEqual([1, 2]);
    await task.run();
    expect(starts).toEqual([1, 2, 3]);
    await task.idle();
  });
});
