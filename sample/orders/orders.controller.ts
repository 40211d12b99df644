import { Body, Controller, Delete, Get, HttpCode, NotFoundException, Param, Post } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { JobQueue } from 'nestjs-durable-jobs';
import { SendReceipt } from '../jobs/send-receipt.job.js';
import { CreateOrderDto } from './create-order.dto.js';
import { JobIdDto } from './job-id.dto.js';
import { Order } from './order.entity.js';

@Controller()
export class OrdersController {
  constructor(
    private readonly dataSource: DataSource,
    private readonly jobs: JobQueue,
  ) {}

  /** The order and its receipt job commit together, or neither exists. */
  @Post('orders')
  async create(@Body() body: CreateOrderDto) {
    return this.dataSource.transaction(async (manager) => {
      const order = await manager.save(manager.create(Order, { email: body.email, totalCents: body.totalCents ?? 0 }));
      const job = await this.jobs.enqueue(SendReceipt, { orderId: order.id }, { manager });
      return { orderId: order.id, jobId: job.id };
    });
  }

  @Get('jobs/:id')
  async job(@Param() { id }: JobIdDto) {
    const job = await this.jobs.get(id);
    if (!job) throw new NotFoundException(`No job ${id}`);
    return job;
  }

  @Delete('jobs/:id')
  @HttpCode(202)
  async cancel(@Param() { id }: JobIdDto) {
    // An unknown id is a JobsNotFoundError, which JobsErrorFilter answers with a 404.
    await this.jobs.cancel(id);
    return { id, cancelRequested: true };
  }

  /** A failed, cancelled or skipped job runs again with fresh attempts; any other state is a 400 saying why. */
  @Post('jobs/:id/retry')
  @HttpCode(200)
  async retry(@Param() { id }: JobIdDto) {
    await this.jobs.retry(id);
    return { id, retried: true };
  }
}
