import { Job, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { Mailer } from './mailer.service.js';

export interface WelcomePayload {
  email: string;
}

@Job('send-welcome-email', { queue: 'emails', maxAttempts: 5, backoff: { type: 'fixed', delay: 30_000 } })
export class SendWelcomeEmail implements JobHandler<WelcomePayload> {
  constructor(private readonly mailer: Mailer) {}

  async run({ email }: WelcomePayload, ctx: JobContext): Promise<void> {
    // Keyed by the job's id: a run repeated after a crash sends nothing twice.
    await this.mailer.send(ctx.jobId, email, 'Welcome!');
  }
}
