import { DataSource } from 'typeorm';
import { Job, PermanentJobError, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { Mailer } from '../orders/mailer.service.js';
import { Order } from '../orders/order.entity.js';

export interface SendReceiptPayload {
  orderId: number;
}

@Job('send-receipt', {
  queue: 'emails',
  maxAttempts: 5,
  timeout: 30_000,
  backoff: { type: 'exponential', delay: 1_000, jitter: true },
})
export class SendReceipt implements JobHandler<SendReceiptPayload, { sentTo: string }> {
  constructor(
    private readonly mailer: Mailer,
    private readonly dataSource: DataSource,
  ) {}

  async run(payload: SendReceiptPayload, ctx: JobContext): Promise<{ sentTo: string }> {
    const order = await this.dataSource.getRepository(Order).findOneBy({ id: payload.orderId });
    // The job is written in the order's transaction, so a missing order is a bug, not a race.
    if (!order) throw new PermanentJobError(`Order #${payload.orderId} does not exist`);
    await this.mailer.sendReceipt(order.id, order.email, ctx.signal);
    return { sentTo: order.email };
  }

  onFailure(payload: SendReceiptPayload, error: Error, ctx: JobContext): void {
    ctx.logger.error(`Giving up on the receipt for order #${payload.orderId}: ${error.message}`);
  }
}
