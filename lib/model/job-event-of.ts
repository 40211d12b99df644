import type { AttemptEnd, JobEvent, JobEventName } from './job-event-types.js';
import type { ClaimedJob } from './records.js';

/**
 * The event each outcome raises. Typed over every outcome kind, so that a new
 * kind fails to compile here until it is given its event.
 */
export const EVENT_OF: { [K in AttemptEnd['kind']]: JobEventName } = {
  succeeded: 'succeeded',
  retry: 'retrying',
  failed: 'failed',
  cancelled: 'cancelled',
  snoozed: 'snoozed',
  stalled: 'stalled',
};

/** The event `@OnJobEvent` listeners receive for an attempt that ended `end`. */
export function toJobEvent(job: ClaimedJob, end: AttemptEnd, durationMs: number): JobEvent {
  const base = {
    job: {
      id: job.id,
      name: job.name,
      queue: job.queue,
      attempt: job.attempt,
      maxAttempts: job.maxAttempts,
      payload: job.payload,
    },
    durationMs,
  };
  switch (end.kind) {
    case 'succeeded':
      return { event: 'succeeded', ...base, result: end.result };
    case 'retry':
      return { event: 'retrying', ...base, error: end.error, retryAt: end.retryAt };
    case 'failed':
      return { event: 'failed', ...base, error: end.error };
    case 'cancelled':
      return { event: 'cancelled', ...base, error: end.error };
    case 'snoozed':
      return { event: 'snoozed', ...base, until: end.until, reason: end.reason };
    case 'stalled':
      return { event: 'stalled', ...base, reason: end.reason, error: end.error };
  }
}
