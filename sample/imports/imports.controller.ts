import { Body, Controller, Get, NotFoundException, Param, Post } from '@nestjs/common';
import { BatchBuilder, JobQueue } from 'nestjs-durable-jobs';
import { BatchIdDto } from './batch-id.dto.js';
import { CreateImportDto } from './create-import.dto.js';
import { ImportCleanup, ImportFile, NotifyAdmin, NotifyUser } from './import.jobs.js';

@Controller()
export class ImportsController {
  constructor(
    private readonly batches: BatchBuilder,
    private readonly jobs: JobQueue,
  ) {}

  /** One job per file, written atomically with then/catch/finally callbacks. */
  @Post('imports')
  async create(@Body() body: CreateImportDto) {
    const name = body.name ?? `import-${Date.now()}`;
    const draft = this.batches.create(name);
    for (const file of body.files) draft.add(ImportFile, { file });
    const { id } = await draft
      .then(NotifyUser, { userId: body.userId ?? 1, batch: name })
      .catch(NotifyAdmin, { batch: name })
      .finally(ImportCleanup, { batch: name })
      .dispatch();
    return { batchId: id };
  }

  @Get('batches/:id')
  async status(@Param() { id }: BatchIdDto) {
    const status = await this.jobs.batchStatus(id);
    if (!status) throw new NotFoundException(`No batch ${id}`);
    return status;
  }
}
