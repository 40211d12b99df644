import { Injectable } from '@nestjs/common';
import { Job, JobQueue, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { Outbox } from './outbox.service.js';

const WEEK = 7 * 24 * 60 * 60 * 1000;

export interface InvoicePayload {
  invoiceId: number;
}

/** Reminds the customer a week after the invoice went out. */
@Job('remind-unpaid', { queue: 'billing' })
export class RemindUnpaid implements JobHandler<InvoicePayload> {
  constructor(private readonly outbox: Outbox) {}

  async run({ invoiceId }: InvoicePayload): Promise<void> {
    this.outbox.sent.push(`reminder for invoice ${invoiceId}`);
  }
}

@Job('send-invoice', { queue: 'billing' })
export class SendInvoice implements JobHandler<InvoicePayload> {
  constructor(
    private readonly outbox: Outbox,
    private readonly jobs: JobQueue,
  ) {}

  async run({ invoiceId }: InvoicePayload, ctx: JobContext): Promise<void> {
    this.outbox.sent.push(`invoice ${invoiceId}`);
    await this.jobs.enqueue(RemindUnpaid, { invoiceId }, { delay: WEEK });
    ctx.logger.log(`invoice ${invoiceId} sent`);
  }
}

@Injectable()
export class Invoices {
  constructor(private readonly jobs: JobQueue) {}

  issue(invoiceId: number): Promise<{ id: string }> {
    return this.jobs.enqueue(SendInvoice, { invoiceId });
  }
}
