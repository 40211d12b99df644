/**
 * The one source of time (DESIGN rule 7). Every "now" that decides whether a
 * job may run, when it retries or when a lease expires comes from here, so a
 * test can move time instead of sleeping.
 */
export abstract class Clock {
  /** The current time. */
  abstract now(): Date;
  /** Called with a listener that wants to know when time jumps (manual clocks). */
  onChange(_listener: () => void): () => void {
    return () => undefined;
  }
}

/** The clock of the machine: the default `Clock`. */
export class SystemClock extends Clock {
  /** The machine's current time (`new Date()`). */
  now(): Date {
    return new Date();
  }
}
