import { Logger } from '@nestjs/common';
import type { AttemptOutcome, ClaimedJob, Clock } from '../model/index.js';

/** One line per ended attempt, at the level its outcome deserves. */
export function logOutcome(logger: Logger, job: ClaimedJob, outcome: AttemptOutcome, clock: Clock): void {
  // Successes are logged at debug level only: skip building their line when nobody reads it.
  if (outcome.kind === 'succeeded' && !Logger.isLevelEnabled('debug')) return;
  const label = `Job ${job.name} ${job.id} attempt ${job.attempt}/${job.maxAttempts}`;
  switch (outcome.kind) {
    case 'succeeded':
      logger.debug(`${label} succeeded`);
      break;
    case 'retry':
      logger.warn(
        `${label} failed: ${outcome.error.message}; retrying in ${Math.max(0, outcome.retryAt.getTime() - clock.now().getTime())} ms`,
      );
      break;
    case 'failed':
      logger.error(`${label} failed for good: ${outcome.error.message}`);
      break;
    case 'snoozed':
      logger.log(`${label} snoozed until ${outcome.until.toISOString()}${outcome.reason ? `: ${outcome.reason}` : ''}`);
      break;
    case 'cancelled':
      logger.log(`${label} was cancelled`);
      break;
  }
}
