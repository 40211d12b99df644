/**
 * Compiled against the installed package's declarations with the required
 * peers only. The expected errors prove the types are real: were a
 * declaration missing, everything would be `any` and they would not occur.
 */
import { Injectable, Module } from '@nestjs/common';
import {
  Job,
  JobQueue,
  JobsModule,
  OnJobEvent,
  type JobContext,
  type JobEvent,
  type JobHandler,
  type JobInfo,
} from 'nestjs-durable-jobs';

@Job('resize', { queue: 'images', maxAttempts: 3 })
export class Resize implements JobHandler<{ url: string; width: number }, { bytes: number }> {
  async run({ width }: { url: string; width: number }, ctx: JobContext) {
    await ctx.progress(0.5);
    return { bytes: width * 3 };
  }
}

@Injectable()
export class ResizeWatch {
  @OnJobEvent('succeeded', { name: 'resize' })
  done(event: JobEvent<'succeeded'>): string {
    return `${event.job.id} in ${event.durationMs} ms`;
  }
}

@Module({ imports: [JobsModule.forRoot({ schema: 'media_jobs' })], providers: [Resize, ResizeWatch] })
export class MediaModule {}

export async function resize(jobs: JobQueue): Promise<JobInfo | null> {
  const { id } = await jobs.enqueue(Resize, { url: 'https://example.com/a.png', width: 640 });
  // @ts-expect-error the payload is checked against the handler's
  await jobs.enqueue(Resize, { url: 'https://example.com/a.png', width: '640' });
  // @ts-expect-error only known events
  OnJobEvent('finished');
  return jobs.get(id);
}
