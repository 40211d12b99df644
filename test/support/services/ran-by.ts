import type { JobHandler } from 'nestjs-durable-jobs';

/** A handler whose result names the service that ran it. */
export class RanBy implements JobHandler {
  run(): { ranBy: string } {
    return { ranBy: process.env.SERVICE! };
  }
}
