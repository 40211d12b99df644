import { Job, type JobContext, type JobHandler } from 'nestjs-durable-jobs';

/** The job of the demo schedule (`npm start`): shows a tick every few seconds. */
@Job('heartbeat', { maxAttempts: 1 })
export class Heartbeat implements JobHandler<{ message: string }> {
  run(payload: { message: string }, ctx: JobContext): void {
    ctx.logger.log(`${payload.message} (job ${ctx.jobId})`);
  }
}
