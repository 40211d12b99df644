import { Job, PermanentJobError, type JobContext, type JobHandler } from 'nestjs-durable-jobs';

/** Imports one file; a file named "broken*" fails for good, like a malformed upload. */
@Job('import-file', { queue: 'imports', maxAttempts: 2 })
export class ImportFile implements JobHandler<{ file: string }, { rows: number }> {
  async run({ file }: { file: string }, ctx: JobContext): Promise<{ rows: number }> {
    if (file.startsWith('broken')) throw new PermanentJobError(`${file} is not valid CSV`);
    for (let i = 1; i <= 4; i++) {
      await new Promise((r) => setTimeout(r, 50));
      await ctx.progress(i / 4, `${file}: chunk ${i} of 4`);
    }
    ctx.logger.log(`Imported ${file}`);
    return { rows: 100 * file.length };
  }
}

@Job('notify-user', { queue: 'emails' })
export class NotifyUser implements JobHandler<{ userId: number; batch: string }> {
  run(payload: { userId: number; batch: string }, ctx: JobContext): void {
    ctx.logger.log(`Told user #${payload.userId} that import "${payload.batch}" is done`);
  }
}

@Job('notify-admin', { queue: 'emails' })
export class NotifyAdmin implements JobHandler<{ batch: string }> {
  run(payload: { batch: string }, ctx: JobContext): void {
    ctx.logger.warn(`Import "${payload.batch}" has a failed file`);
  }
}

@Job('import-cleanup')
export class ImportCleanup implements JobHandler<{ batch: string }> {
  run(payload: { batch: string }, ctx: JobContext): void {
    ctx.logger.log(`Cleaned up after import "${payload.batch}"`);
  }
}
