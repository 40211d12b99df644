/**
 * A testing helper's expectation that did not hold: a job that should have
 * been enqueued, or one waited for that did not settle in time. Its message
 * lists what there was instead.
 */
export class JobsAssertionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JobsAssertionError';
  }
}
