import { AdaptivePrefetch } from '../../../lib/worker/claiming/adaptive-prefetch.js';

/** A clock the test moves by hand, in ms. */
function manualTime(start = 1_000_000) {
  const time = { now: start };
  return { time, now: () => time.now };
}

/** `n` completions at the current time. */
function complete(prefetch: AdaptivePrefetch, n: number): void {
  for (let i = 0; i < n; i++) prefetch.recordCompletion();
}

/** A window of `ms` with `n` completions: all but the last at its start, the last closing it. */
function windowOf(prefetch: AdaptivePrefetch, time: { now: number }, ms: number, n: number): void {
  complete(prefetch, n - 1);
  time.now += ms;
  prefetch.recordCompletion();
}

describe('AdaptivePrefetch', () => {
  it('starts at its initial value, capped by the max, and counts no jobs within a horizon before measuring', () => {
    const { now } = manualTime();
    expect(new AdaptivePrefetch(10, 500, 100, now).value).toBe(10);
    expect(new AdaptivePrefetch(800, 500, 100, now).value).toBe(500);
    expect(new AdaptivePrefetch(10, 500, 100, now).jobsWithin(10)).toBe(0);
  });

  it('measures the rate over windows of at least 100 ms, then covers its horizon of work at that rate', () => {
    const { time, now } = manualTime();
    const prefetch = new AdaptivePrefetch(10, 500, 100, now);
    time.now += 99;
    complete(prefetch, 40);
    // 99 ms is not a window yet: still the initial value.
    expect(prefetch.value).toBe(10);
    expect(prefetch.jobsWithin(10)).toBe(0);
    time.now += 1;
    prefetch.recordCompletion();
    // 41 jobs in 100 ms: 410 a second, 41 within the 100 ms horizon, 4 within 10 ms.
    expect(prefetch.value).toBe(41);
    expect(prefetch.jobsWithin(10)).toBe(4);
    expect(prefetch.jobsWithin(1000)).toBe(410);
  });

  it('averages each new window with the rate before it', () => {
    const { time, now } = manualTime();
    const prefetch = new AdaptivePrefetch(10, 500, 100, now);
    windowOf(prefetch, time, 100, 10);
    expect(prefetch.value).toBe(10);
    windowOf(prefetch, time, 200, 40);
    // 100/s before, 200/s in this 200 ms window: 150/s, 15 jobs in 100 ms.
    expect(prefetch.value).toBe(15);
  });

  it('never exceeds its max, however fast jobs finish', () => {
    const { time, now } = manualTime();
    const prefetch = new AdaptivePrefetch(10, 64, 100, now);
    windowOf(prefetch, time, 100, 10_000);
    expect(prefetch.jobsWithin(10)).toBe(1000);
    expect(prefetch.value).toBe(64);
  });

  it('drops to 0 after a quiet second, and measures afresh from the next jobs', () => {
    const { time, now } = manualTime();
    const prefetch = new AdaptivePrefetch(10, 500, 100, now);
    windowOf(prefetch, time, 100, 20);
    expect(prefetch.value).toBe(20);
    time.now += 1000;
    // Exactly a second: not yet quiet for longer than one.
    expect(prefetch.value).toBe(20);
    time.now += 1;
    expect(prefetch.value).toBe(0);
    expect(prefetch.jobsWithin(10)).toBe(0);
    // The first job after the quiet spell closes its window (1 job in 1001 ms): still about 0.
    prefetch.recordCompletion();
    expect(prefetch.value).toBe(0);
    // 400/s in the next window, averaged with the decayed rate: about 200/s, 20 jobs in 100 ms.
    windowOf(prefetch, time, 100, 40);
    expect(prefetch.value).toBe(20);
  });

  it('does not decay while jobs finish in a window not yet closed', () => {
    const { time, now } = manualTime();
    const prefetch = new AdaptivePrefetch(10, 500, 100, now);
    windowOf(prefetch, time, 100, 20);
    time.now += 50;
    prefetch.recordCompletion();
    time.now += 2000;
    expect(prefetch.value).toBe(20);
  });

  it('starts its first window when begun, not when built', () => {
    const { time, now } = manualTime();
    const prefetch = new AdaptivePrefetch(10, 500, 100, now);
    time.now += 5000;
    prefetch.begin();
    windowOf(prefetch, time, 100, 10);
    expect(prefetch.value).toBe(10);
    expect(prefetch.jobsWithin(1000)).toBe(100);
  });
});
