import { DeadlineExceededError, type ClaimedJob } from '../model/index.js';

/** Whether `at` falls after the job's deadline (a job without one has none to pass). */
export function pastDeadline(job: Pick<ClaimedJob, 'deadline'>, at: Date): boolean {
  return !!job.deadline && at > new Date(job.deadline);
}

/** Why a job fails for good at its deadline: it could not start, or its retry or snooze would come after it. */
export function deadlineError(
  job: Pick<ClaimedJob, 'deadline' | 'name' | 'id' | 'attempt'>,
  when: 'start' | 'retry' | 'snooze',
  cause?: Error,
): DeadlineExceededError {
  const deadline = new Date(job.deadline!).toISOString();
  const what =
    when === 'start'
      ? `its deadline ${deadline} passed before it could start`
      : when === 'retry'
        ? `its next attempt would come after its deadline ${deadline} (attempt ${job.attempt} failed: ${cause?.message})`
        : `it asked to snooze past its deadline ${deadline}`;
  return new DeadlineExceededError(`Job "${job.name}" (${job.id}) failed for good: ${what}`);
}
