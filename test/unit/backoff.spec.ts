import { computeBackoff } from '../../lib/model/backoff.js';

describe('computeBackoff', () => {
  it('fixed: the same delay every attempt', () => {
    for (const attempt of [1, 2, 7]) expect(computeBackoff({ type: 'fixed', delay: 250 }, attempt, null)).toBe(250);
  });

  it('exponential: doubles from the base, capped at maxDelay', () => {
    const b = { type: 'exponential', delay: 1000, maxDelay: 10_000 } as const;
    expect([1, 2, 3, 4, 5, 6].map((a) => computeBackoff(b, a, null))).toEqual([1000, 2000, 4000, 8000, 10_000, 10_000]);
  });

  it('exponential without maxDelay caps at one hour', () => {
    expect(computeBackoff({ type: 'exponential', delay: 1000 }, 40, null)).toBe(3_600_000);
  });

  it('jitter keeps the delay between half and all of it', () => {
    const b = { type: 'exponential', delay: 1000, jitter: true } as const;
    expect(computeBackoff(b, 3, null, () => 0)).toBe(2000);
    expect(computeBackoff(b, 3, null, () => 0.999999)).toBe(3999);
    const spread = new Set(Array.from({ length: 50 }, () => computeBackoff(b, 3, null)));
    expect(spread.size).toBeGreaterThan(10);
    for (const d of spread) expect(d >= 2000 && d < 4000).toBe(true);
  });

  it('a function decides from the attempt and the error; negatives become 0', () => {
    const fn = (attempt: number, error: unknown) =>
      (error as Error).message === 'rate limited' ? 60_000 : attempt * 10;
    expect(computeBackoff(fn, 2, new Error('rate limited'))).toBe(60_000);
    expect(computeBackoff(fn, 2, new Error('other'))).toBe(20);
    expect(computeBackoff(() => -5, 1, null)).toBe(0);
  });
});
