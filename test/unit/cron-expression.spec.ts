import { CoalescingTask } from '../../lib/scheduler/coalescing-task.js';
import { canonicalTimeZone, CronSchedule, MAX_CATCH_UP_TICKS, planTicks } from '../../lib/scheduler/cron-expression.js';

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
