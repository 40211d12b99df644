/** Polls until `check` returns a truthy value, or fails naming what it waited for. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T> | T,
  timeoutMs = 15_000,
  everyMs = 25,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await check();
    if (last) return last as NonNullable<T>;
    await sleep(everyMs);
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what} (last value: ${JSON.stringify(last)})`);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Sleeps `ms`, ending early (rejected with the signal's reason) when `signal` aborts: no timer outlives a cancelled job. */
export function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    });
  });
}
