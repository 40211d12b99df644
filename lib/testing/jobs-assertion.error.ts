/**
 * A testing helper's expectation that did not hold: a job that should have
 * been enqueued, or one waited for that did not settle in time. Its message
 * lists what there was instead.
 *
 * Not a JobsError: it is the test's verdict on the app, like a failed
 * `expect`, not a wrong call of the kit, so a test that expects a JobsError
 * from misuse never mistakes a failed expectation for one.
 */
export class JobsAssertionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JobsAssertionError';
  }
}
