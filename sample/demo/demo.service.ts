import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { BatchBuilder, JobEvents, JobQueue, JobQueues, RecurringSchedules } from 'nestjs-durable-jobs';
import { ImportCleanup, ImportFile, NotifyAdmin, NotifyUser } from '../imports/import.jobs.js';
import { FlakySync } from '../jobs/flaky-sync.job.js';
import { Heartbeat } from '../jobs/heartbeat.job.js';
import { SendReceipt } from '../jobs/send-receipt.job.js';
import { SlowReport } from '../jobs/slow-report.job.js';
import { Order } from '../orders/order.entity.js';

/** The demo's dynamic schedule, and how many of its runs it shows before pausing it. */
export const DEMO_SCHEDULE = 'demo-heartbeat';
export const DEMO_HEARTBEATS = 3;

const url = (path: string) => `http://localhost:${process.env.PORT ?? 3000}${path}`;

/** Puts a little work on the queue at start so `npm start` shows jobs running, retrying and succeeding. */
@Injectable()
export class DemoService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Demo');
  private stopCounting: (() => void) | null = null;

  constructor(
    private readonly jobs: JobQueue,
    private readonly dataSource: DataSource,
    private readonly batches: BatchBuilder,
    private readonly schedules: RecurringSchedules,
    private readonly queues: JobQueues,
    private readonly events: JobEvents,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const receipt = await this.dataSource.transaction(async (manager) => {
      const order = await manager.save(manager.create(Order, { email: 'ada@example.com', totalCents: 4200 }));
      return this.jobs.enqueue(SendReceipt, { orderId: order.id }, { manager });
    });
    const flaky = await this.jobs.enqueue(FlakySync, { account: 'acme' });
    const report = await this.jobs.enqueue(SlowReport, { steps: 5, stepMs: 400 });
    const later = await this.jobs.enqueue(FlakySync, { account: 'globex' }, { delay: 3_000, priority: 5 });
    this.logger.log(
      `Enqueued demo jobs: send-receipt ${receipt.id}, flaky-sync ${flaky.id} (fails twice, then succeeds), ` +
        `slow-report ${report.id} (reports progress), flaky-sync ${later.id} (delayed 3 s)`,
    );
    const batch = await this.batches
      .create('demo-import')
      .add(ImportFile, { file: 'customers.csv' })
      .add(ImportFile, { file: 'orders.csv' })
      .then(NotifyUser, { userId: 7, batch: 'demo-import' })
      .catch(NotifyAdmin, { batch: 'demo-import' })
      .finally(ImportCleanup, { batch: 'demo-import' })
      .dispatch();
    this.logger.log(`Dispatched batch demo-import ${batch.id}: two files, then notify-user, finally import-cleanup`);
    await this.dashboardExtras();
    this.logger.log(`Follow one: curl ${url(`/jobs/${flaky.id}`)}`);
    // A dynamic schedule: stored, so it also ticks on every other instance, once per tick in all.
    this.pauseAfterHeartbeats();
    const schedule = await this.schedules.upsert(DEMO_SCHEDULE, Heartbeat, '*/5 * * * * *', {
      payload: { message: 'Demo schedule tick' },
      overlap: 'skip',
    });
    // Paused by an earlier start (the schedule is stored): each start shows it ticking again.
    if (schedule.paused) await this.schedules.resume(DEMO_SCHEDULE);
    this.logger.log(
      `Schedule "${DEMO_SCHEDULE}" ticks every 5 s and pauses after ${DEMO_HEARTBEATS} runs; see curl ${url('/schedules')}`,
    );
  }

  /**
   * Two log lines every 5 s forever would bury everything else the demo
   * shows: once the schedule has run a few times, it is paused (a stored
   * change, so on every instance), which shows pausing too.
   */
  private pauseAfterHeartbeats(): void {
    let runs = 0;
    this.stopCounting = this.events.on(
      'succeeded',
      () => {
        if (++runs < DEMO_HEARTBEATS) return;
        this.stopCounting?.();
        this.stopCounting = null;
        this.schedules.pause(DEMO_SCHEDULE).then(
          () =>
            this.logger.log(
              `Schedule "${DEMO_SCHEDULE}" ran ${runs} times and is paused now, to keep the log quiet; ` +
                `resume it with curl -X POST ${url(`/schedules/${DEMO_SCHEDULE}/resume`)}`,
            ),
          (error: Error) => this.logger.warn(`Pausing schedule "${DEMO_SCHEDULE}" failed: ${error.message}`),
        );
      },
      { name: 'heartbeat', label: 'the demo heartbeat count' },
    );
  }

  onModuleDestroy(): void {
    this.stopCounting?.();
  }

  /** A little of everything else the dashboard shows: failures, a failed batch, a flow, a job for later, limits. */
  private async dashboardExtras(): Promise<void> {
    const broken = await this.batches
      .create('demo-import-broken')
      .add(ImportFile, { file: 'invoices.csv' })
      .add(ImportFile, { file: 'broken-upload.csv' })
      .then(NotifyUser, { userId: 7, batch: 'demo-import-broken' })
      .catch(NotifyAdmin, { batch: 'demo-import-broken' })
      .finally(ImportCleanup, { batch: 'demo-import-broken' })
      .dispatch();
    const failed = await this.jobs.enqueue(ImportFile, { file: 'broken-export.csv' });
    const flow = await this.jobs
      .flow()
      .add('sync', FlakySync, { account: 'initech' })
      .add('report', SlowReport, { steps: 3, stepMs: 300 }, { after: ['sync'] })
      .add('notify', NotifyUser, { userId: 9, batch: 'initech-report' }, { after: ['report'] })
      .add('alert', NotifyAdmin, { batch: 'initech-sync' }, { after: [{ key: 'sync', on: 'failure' }] })
      .dispatch();
    const nextHour = await this.jobs.enqueue(SlowReport, { steps: 2, stepMs: 200 }, { delay: 3_600_000 });
    // A limit changed at run time (the dashboard's Queues page shows it as "runtime").
    await this.queues.setLimits('imports', { concurrency: 4 });
    this.logger.log(
      `Dashboard demo: batch demo-import-broken ${broken.id} (one file fails), import-file ${failed.id} (fails), ` +
        `flow sync → report → notify ${flow.ids.sync}, slow-report ${nextHour.id} (due in an hour)`,
    );
  }
}
