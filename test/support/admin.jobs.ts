import { Job, type JobContext, type JobHandler } from 'nestjs-durable-jobs';

/**
 * How the admin tests' jobs behave, by payload key: some fail, some run
 * until the test releases them (or their signal aborts), the rest succeed.
 */
export const behaviour = {
  failing: new Set<string>(),
  holding: new Set<string>(),
  /** Jobs running now under a holding key, by id: call to let one finish. */
  held: new Map<string, () => void>(),
  releaseAll(): void {
    this.holding.clear();
    for (const release of this.held.values()) release();
    this.held.clear();
  },
};

/** One attempt; the queue the admin tests' worker serves. */
@Job('admin-work', { queue: 'adm', maxAttempts: 1 })
export class AdminWork implements JobHandler<{ key: string }> {
  async run({ key }: { key: string }, ctx: JobContext): Promise<string> {
    if (behaviour.failing.has(key)) throw new Error(`${key} broke`);
    if (behaviour.holding.has(key)) {
      await new Promise<void>((resolve, reject) => {
        behaviour.held.set(ctx.jobId, resolve);
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error));
      });
    }
    return key;
  }
}

/** Fails its first attempt and then waits an hour for the next (a backoff runNow can cut short). */
@Job('admin-backoff', { queue: 'adm', maxAttempts: 2, backoff: { type: 'fixed', delay: 3_600_000 } })
export class AdminBackoff implements JobHandler<Record<string, never>> {
  run(_: Record<string, never>, ctx: JobContext): string {
    if (ctx.attempt === 1) throw new Error('first attempt fails');
    return 'second attempt';
  }
}

export const adminProviders = [AdminWork, AdminBackoff];
