/**
 * The job lifecycle. Only this file decides which moves are legal, so storage
 * and workers ask it instead of encoding their own idea of the graph.
 */
export const JOB_STATES = ['waiting', 'queued', 'active', 'succeeded', 'failed', 'cancelled', 'skipped'] as const;
export type JobState = (typeof JOB_STATES)[number];

export const TERMINAL_JOB_STATES: readonly JobState[] = ['succeeded', 'failed', 'cancelled', 'skipped'];

const TRANSITIONS: Record<JobState, readonly JobState[]> = {
  waiting: ['queued', 'cancelled', 'skipped'],
  // queued -> failed covers a job whose attempts were used up by crashes.
  queued: ['active', 'cancelled', 'failed', 'skipped'],
  // active -> queued is a retry, an interrupted lease or a hand-back at shutdown.
  active: ['succeeded', 'failed', 'cancelled', 'queued'],
  succeeded: [],
  // retry(id) reopens failed and cancelled jobs with fresh attempts.
  failed: ['queued'],
  cancelled: ['queued'],
  skipped: ['queued'],
};

export function isTerminal(state: JobState): boolean {
  return TERMINAL_JOB_STATES.includes(state);
}

export function canTransition(from: JobState, to: JobState): boolean {
  return TRANSITIONS[from].includes(to);
}

/** States from which `retry(id)` may requeue a job. */
export const RETRYABLE_STATES: readonly JobState[] = JOB_STATES.filter(
  (s) => canTransition(s, 'queued') && s !== 'active' && s !== 'waiting',
);

/** States from which `cancel(id)` may cancel a job. */
export const CANCELLABLE_STATES: readonly JobState[] = JOB_STATES.filter((s) => canTransition(s, 'cancelled'));

export const EXECUTION_STATES = ['active', 'succeeded', 'failed', 'interrupted', 'cancelled'] as const;
export type ExecutionState = (typeof EXECUTION_STATES)[number];

export const BATCH_STATES = ['executing', 'succeeded', 'failed', 'cancelled'] as const;
export type BatchState = (typeof BATCH_STATES)[number];
