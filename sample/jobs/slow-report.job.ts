import { Job, type JobContext, type JobHandler } from 'nestjs-durable-jobs';

export interface SlowReportPayload {
  steps: number;
  stepMs: number;
}

/** Works in steps, reports progress after each and stops when its signal aborts. */
@Job('slow-report', { queue: 'reports', maxAttempts: 3 })
export class SlowReport implements JobHandler<SlowReportPayload, { steps: number }> {
  async run({ steps, stepMs }: SlowReportPayload, ctx: JobContext): Promise<{ steps: number }> {
    for (let step = 1; step <= steps; step++) {
      await sleep(stepMs, ctx.signal);
      await ctx.progress(step / steps, `step ${step} of ${steps}`);
    }
    ctx.logger.log(`Report ${ctx.jobId} finished ${steps} steps`);
    return { steps };
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
