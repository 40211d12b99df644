/**
 * Waits for `work` at most `ms`: true when it settled in time (resolved or
 * rejected), false when the wait gave up. The work itself goes on; this is
 * for shutdown paths that must end whatever a silent database does.
 */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
        timer.unref();
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `work`'s answer, or a rejection `no answer within <ms> ms` once `ms` have
 * passed without one (the work itself goes on): for checks that must answer
 * in time whatever a silent database does.
 */
export async function answerWithin<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
