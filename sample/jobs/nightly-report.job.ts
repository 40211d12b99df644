import { Cron, Job, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { OrderStats } from '../orders/order-stats.service.js';

/**
 * Runs at 03:00 Berlin time, once per night however many instances run
 * (the tick becomes one job), and on the DST change days too.
 */
@Cron('0 3 * * *', { timeZone: 'Europe/Berlin' })
@Job('nightly-report', { queue: 'reports' })
export class NightlyReport implements JobHandler<null, { orders: number; totalCents: number }> {
  constructor(private readonly stats: OrderStats) {}

  async run(_payload: null, ctx: JobContext): Promise<{ orders: number; totalCents: number }> {
    const totals = await this.stats.totals();
    ctx.logger.log(`Nightly report: ${totals.orders} order(s), ${totals.totalCents} cents in all`);
    return totals;
  }
}
