import { Job, type JobContext, type JobHandler } from 'nestjs-durable-jobs';

/** Fails its first two attempts, like a partner API that needs a moment. */
@Job('flaky-sync', { maxAttempts: 5, backoff: { type: 'exponential', delay: 1_000 } })
export class FlakySync implements JobHandler<{ account: string }, { syncedAt: string }> {
  async run(payload: { account: string }, ctx: JobContext): Promise<{ syncedAt: string }> {
    if (ctx.attempt < 3) {
      throw new Error(`partner API busy for ${payload.account} (attempt ${ctx.attempt})`);
    }
    ctx.logger.log(`Synced ${payload.account} on attempt ${ctx.attempt}`);
    return { syncedAt: new Date().toISOString() };
  }
}
