import { Injectable } from '@nestjs/common';
import { JobQueue } from 'nestjs-durable-jobs';
import { SendWelcomeEmail } from './send-welcome-email.job.js';

@Injectable()
export class Signups {
  constructor(private readonly jobs: JobQueue) {}

  async signUp(email: string): Promise<{ welcomeJobId: string }> {
    const { id } = await this.jobs.enqueue(SendWelcomeEmail, { email });
    return { welcomeJobId: id };
  }
}
