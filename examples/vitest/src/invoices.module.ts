import { Module } from '@nestjs/common';
import { Invoices, RemindUnpaid, SendInvoice } from './invoice.jobs.js';
import { Outbox } from './outbox.service.js';

@Module({ providers: [Outbox, SendInvoice, RemindUnpaid, Invoices], exports: [Invoices, Outbox] })
export class InvoicesModule {}
