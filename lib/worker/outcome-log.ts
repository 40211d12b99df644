import { Logger } from '@nestjs/common';
import type { AttemptOutcome, ClaimedJob, Clock } from '../model/index.js';

/**
 * An error's message as a log line may show it. An encrypted job's messages
 * may hold what its encryption keeps out of the database: logs get the
 * error's name only.
 */
export function loggableMessage(job: Pick<ClaimedJob, 'encrypted'>, error: unknown): string {
  // An Error, or the { name, message } an outcome records of one.
  const e =
    typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string'
      ? (error as { name?: unknown; message: string })
      : { name: 'Error', message: String(error) };
  const name = typeof e.name === 'string' ? e.name : 'Error';
  return job.encrypted ? `${name} (message encrypted; JobQueue.get() shows it)` : e.message;
}

/** An error's stack for a log line: none for an encrypted job (the stack starts with the message). */
export function loggableStack(job: Pick<ClaimedJob, 'encrypted'>, error: unknown): string | undefined {
  return job.encrypted || !(error instanceof Error) ? undefined : error.stack;
}

/** One line per ended attempt, at the level its outcome deserves. */
export function logOutcome(logger: Logger, job: ClaimedJob, outcome: AttemptOutcome, clock: Clock): void {
  // Successes are logged at debug level only: skip building their line when nobody reads it.
  if (outcome.kind === 'succeeded' && !Logger.isLevelEnabled('debug')) return;
  const label = `Job ${job.name} ${job.id} attempt ${job.attempt}/${job.maxAttempts}`;
  const said = (error: { name: string; message: string }) => loggableMessage(job, error);
  switch (outcome.kind) {
    case 'succeeded':
      logger.debug(`${label} succeeded`);
      break;
    case 'retry':
      logger.warn(
        `${label} failed: ${said(outcome.error)}; retrying in ${Math.max(0, outcome.retryAt.getTime() - clock.now().getTime())} ms`,
      );
      break;
    case 'failed':
      logger.error(`${label} failed for good: ${said(outcome.error)}`);
      break;
    case 'snoozed':
      logger.log(
        `${label} snoozed until ${outcome.until.toISOString()}${outcome.reason && !job.encrypted ? `: ${outcome.reason}` : ''}`,
      );
      break;
    case 'cancelled':
      logger.log(`${label} was cancelled`);
      break;
  }
}
