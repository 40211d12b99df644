import { Logger } from '@nestjs/common';
import { SystemClock, type AttemptOutcome, type ClaimedJob } from '../../lib/model/index.js';
import { loggableMessage, loggableStack, logOutcome } from '../../lib/worker/outcome-log.js';

/** A Nest Logger whose lines stay here, to be read. */
class Lines extends Logger {
  readonly lines: string[] = [];
  override error(message: unknown): void {
    this.lines.push(`error ${String(message)}`);
  }
  override warn(message: unknown): void {
    this.lines.push(`warn ${String(message)}`);
  }
  override log(message: unknown): void {
    this.lines.push(`log ${String(message)}`);
  }
}

const job = (encrypted: boolean): ClaimedJob =>
  ({ id: 'j1', name: 'send', queue: 'q', attempt: 2, maxAttempts: 3, payload: {}, encrypted }) as ClaimedJob;
const failed: AttemptOutcome = {
  kind: 'failed',
  error: { name: 'SmtpError', message: 'could not reach alice@example.com' },
} as AttemptOutcome;

describe('the outcome log', () => {
  it("says a plain job's error message, and only the error's name for an encrypted job", () => {
    const plain = new Lines();
    logOutcome(plain, job(false), failed, new SystemClock());
    expect(plain.lines).toEqual(['error Job send j1 attempt 2/3 failed for good: could not reach alice@example.com']);
    const sealed = new Lines();
    logOutcome(sealed, job(true), failed, new SystemClock());
    expect(sealed.lines).toEqual([
      'error Job send j1 attempt 2/3 failed for good: SmtpError (message encrypted; JobQueue.get() shows it)',
    ]);
  });

  it('reads an Error, a recorded { name, message } and anything else thrown', () => {
    expect(loggableMessage(job(false), new TypeError('bad'))).toBe('bad');
    expect(loggableMessage(job(false), { name: 'X', message: 'recorded' })).toBe('recorded');
    expect(loggableMessage(job(false), 'a string')).toBe('a string');
    expect(loggableMessage(job(true), new TypeError('bad'))).toBe(
      'TypeError (message encrypted; JobQueue.get() shows it)',
    );
    expect(loggableMessage(job(true), 42)).toBe('Error (message encrypted; JobQueue.get() shows it)');
    const error = new Error('with a stack');
    expect(loggableStack(job(false), error)).toBe(error.stack);
    expect(loggableStack(job(true), error)).toBeUndefined();
  });
});
