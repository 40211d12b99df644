import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { JobsTester, JobsTestingModule, type JobsTestingMode } from 'nestjs-durable-jobs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { Invoices, RemindUnpaid } from '../src/invoice.jobs.js';
import { InvoicesModule } from '../src/invoices.module.js';
import { Outbox } from '../src/outbox.service.js';

const WEEK = 7 * 24 * 60 * 60 * 1000;
let app: INestApplication | undefined;

async function start(mode: JobsTestingMode): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [JobsTestingModule.forRoot({ connection: process.env.DATABASE_URL, mode }), InvoicesModule],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

afterEach(async () => {
  await app?.close(); // drops the app's schema
  app = undefined;
});

describe("invoices, jobs run inline (mode 'inline')", () => {
  it('sends the invoice before issue() returns, and the reminder once a week has passed', async () => {
    const app = await start('inline');
    const jobs = app.get(JobsTester);
    const outbox = app.get(Outbox);

    await app.get(Invoices).issue(42);

    expect(outbox.sent).toEqual(['invoice 42']);
    await jobs.expectEnqueued({ name: RemindUnpaid, payload: { invoiceId: 42 } });

    const ran = await jobs.advance(WEEK); // inline: what falls due runs now
    expect(ran.map((r) => [r.name, r.outcome])).toEqual([['remind-unpaid', 'succeeded']]);
    expect(outbox.sent).toEqual(['invoice 42', 'reminder for invoice 42']);
  });
});

describe("invoices, run by the real worker (mode 'worker')", () => {
  it('sends the invoice; waitFor() waits for the worker', async () => {
    const app = await start('worker');
    const { id } = await app.get(Invoices).issue(7);

    const job = await app.get(JobsTester).waitForJob(id);

    expect(job.state).toBe('succeeded');
    expect(app.get(Outbox).sent).toEqual(['invoice 7']);
  });
});
