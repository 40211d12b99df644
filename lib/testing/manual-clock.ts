import { Clock } from '../model/clock.js';

/**
 * A clock that moves only when told. Pass it as `clock` to JobsModule; every
 * decision about eligibility, backoff and leases then follows it, and
 * workers look for work as soon as it moves.
 */
export class ManualClock extends Clock {
  private current: number;
  private readonly listeners = new Set<() => void>();

  constructor(start: Date | number = Date.now()) {
    super();
    this.current = typeof start === 'number' ? start : start.getTime();
  }

  /** The clock's current time. */
  now(): Date {
    return new Date(this.current);
  }

  /** Moves the clock to `to` (a Date, or ms since the epoch), forward or back, and wakes what waits on it. */
  set(to: Date | number): void {
    this.current = typeof to === 'number' ? to : to.getTime();
    for (const listener of this.listeners) listener();
  }

  /** Moves the clock forward by `ms` milliseconds (back, for a negative value), as `set()` does. */
  advance(ms: number): void {
    this.set(this.current + ms);
  }

  override onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
