/**
 * The job lifecycle: which moves are legal. The SQL in storage performs the
 * moves (each statement's WHERE names the states it moves from); a test runs
 * every statement under a trigger that records each move and checks them all
 * against this table, so the two cannot drift apart.
 */
export const JOB_STATES = ['waiting', 'queued', 'active', 'succeeded', 'failed', 'cancelled', 'skipped'] as const;
/** The state of a job: `waiting` for parents, `queued`, `active` on a worker, or ended (`succeeded`, `failed`, `cancelled`, `skipped`). */
export type JobState = (typeof JOB_STATES)[number];

/** The states a job ends in: `waitFor()` resolves on them. */
export const TERMINAL_JOB_STATES: readonly JobState[] = ['succeeded', 'failed', 'cancelled', 'skipped'];

const TRANSITIONS: Record<JobState, readonly JobState[]> = {
  // waiting -> failed: its deadline passed while it waited.
  waiting: ['queued', 'cancelled', 'skipped', 'failed'],
  // queued -> failed covers a job whose attempts were used up by crashes.
  queued: ['active', 'cancelled', 'failed', 'skipped'],
  // active -> queued is a retry, an interrupted lease or a hand-back at shutdown.
  active: ['succeeded', 'failed', 'cancelled', 'queued'],
  succeeded: [],
  // retry(id) reopens failed and cancelled jobs with fresh attempts.
  failed: ['queued'],
  cancelled: ['queued'],
  // skipped -> waiting: retrying a parent brings back the dependents its outcome skipped.
  skipped: ['queued', 'waiting'],
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

/** Cancellable at once (nothing runs them yet); an active job is asked to stop instead. */
export const NOT_STARTED_STATES: readonly JobState[] = CANCELLABLE_STATES.filter((s) => s !== 'active');

/** States in which a job may still run: what a unique key or a prune guard counts as "live". */
export const LIVE_JOB_STATES: readonly JobState[] = JOB_STATES.filter((s) => !isTerminal(s));

/** How one attempt of a job ended (or `active` while it runs). */
export type ExecutionState = 'active' | 'succeeded' | 'failed' | 'interrupted' | 'cancelled' | 'snoozed';

export const BATCH_STATES = ['executing', 'succeeded', 'failed', 'cancelled'] as const;
/** The state of a batch: `executing` until every member has settled. */
export type BatchState = (typeof BATCH_STATES)[number];

/** How a job waiting on a parent (a job or a batch) wants it to end: the `on` of `after`, `then/catch/finally`. */
export const DEPENDENCY_TRIGGERS = ['success', 'failure', 'any-failure', 'always'] as const;
/**
 * The outcome of a parent that lets a dependent run: `success`; `failure`
 * (this parent failed for good: on several parents, every one of them);
 * `any-failure` (at least one of the parents waited on so failed); `always`.
 */
export type DependencyOn = (typeof DEPENDENCY_TRIGGERS)[number];

/** The triggers as a message lists them: 'success', 'failure', 'any-failure' or 'always'. */
export const DEPENDENCY_TRIGGER_LIST = `${DEPENDENCY_TRIGGERS.slice(0, -1)
  .map((t) => `'${t}'`)
  .join(', ')} or '${DEPENDENCY_TRIGGERS[DEPENDENCY_TRIGGERS.length - 1]}'`;

/** Whether a parent that ended in `outcome` meets its edge's trigger `on` by itself. */
export function triggerMet(on: DependencyOn, outcome: string): boolean {
  if (on === 'always') return true;
  if (on === 'success') return outcome === 'succeeded';
  return outcome === 'failed';
}

/**
 * Whether a child whose parents all settled runs: every `success`,
 * `failure` and `always` edge is met by its own parent, and, when it has
 * `any-failure` edges, at least one of their parents failed. The SQL of
 * release_children says the same.
 */
export function dependenciesMet(edges: ReadonlyArray<{ on: DependencyOn; outcome: string }>): boolean {
  const anyFailure = edges.filter((e) => e.on === 'any-failure');
  const each = edges.filter((e) => e.on !== 'any-failure');
  return (
    each.every((e) => triggerMet(e.on, e.outcome)) &&
    (anyFailure.length === 0 || anyFailure.some((e) => e.outcome === 'failed'))
  );
}

export function isDependencyTrigger(value: unknown): value is DependencyOn {
  return (DEPENDENCY_TRIGGERS as readonly unknown[]).includes(value);
}

/** The last error of a job skipped because a parent did not end the way it waited for. */
export const DEPENDENCY_NOT_MET = Object.freeze({
  name: 'DependencyNotMet',
  message: 'Skipped: a parent did not end the way this job waited for',
});

/**
 * The last error of a job staged into a batch that was already stopping
 * (cancelled, or failed without allowFailures): it is written cancelled, as
 * the batch's other unstarted members were.
 */
export const BATCH_STOPPED = Object.freeze({
  name: 'BatchStopped',
  message: 'Cancelled: its batch had failed or been cancelled when this job was added to it',
});
