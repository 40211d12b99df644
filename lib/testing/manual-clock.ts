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

  now(): Date {
    return new Date(this.current);
  }

  set(to: Date | number): void {
    this.current = typeof to === 'number' ? to : to.getTime();
    for (const listener of this.listeners) listener();
  }

  advance(ms: number): void {
    this.set(this.current + ms);
  }

  override onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
