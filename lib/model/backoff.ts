/** How long to wait before attempt `attempt + 1`, given that `attempt` failed. */
export type BackoffFunction = (attempt: number, error: unknown) => number;

/** How long a failed attempt waits before the next one: fixed, exponential (optionally with jitter), or a function of the attempt and the error. */
export type BackoffOptions =
  | {
      /** The same wait before every retry. */
      type: 'fixed';
      /** The wait before each retry, in ms. */
      delay: number;
      /** Wait a random time from half of `delay` up to `delay` instead; default false. */
      jitter?: boolean;
    }
  | {
      /** A wait that doubles with each failed attempt. */
      type: 'exponential';
      /** The wait after the first failed attempt, in ms; after attempt n, `delay * 2^(n - 1)` up to `maxDelay`. */
      delay: number;
      /** The longest wait, in ms; default 3,600,000 (an hour). */
      maxDelay?: number;
      /** Wait a random time from half of the wait up to all of it instead; default false. */
      jitter?: boolean;
    }
  | BackoffFunction;

export const DEFAULT_BACKOFF: BackoffOptions = { type: 'exponential', delay: 1_000, maxDelay: 3_600_000, jitter: true };
const DEFAULT_MAX_DELAY = 3_600_000;

/**
 * Milliseconds until the next attempt. Jitter spreads retries of jobs that
 * failed together (a dead downstream) so they do not return as one herd; it
 * only ever shortens the delay, so "at least delay" never holds but "at most"
 * always does, and a test can bound it.
 */
export function computeBackoff(
  backoff: BackoffOptions,
  attempt: number,
  error: unknown,
  random: () => number = Math.random,
): number {
  if (typeof backoff === 'function') {
    return Math.max(0, Math.floor(backoff(attempt, error)));
  }
  let delay: number;
  if (backoff.type === 'fixed') {
    delay = backoff.delay;
  } else {
    const max = backoff.maxDelay ?? DEFAULT_MAX_DELAY;
    delay = Math.min(max, backoff.delay * 2 ** Math.max(0, attempt - 1));
  }
  if (backoff.jitter) {
    // "Equal jitter": keep half, randomise the other half.
    delay = delay / 2 + random() * (delay / 2);
  }
  return Math.max(0, Math.floor(delay));
}
