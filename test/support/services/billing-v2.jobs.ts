import { Cron, Job } from 'nestjs-durable-jobs';
import { RanBy } from './ran-by.js';

/** What billing's next release adds. */
@Cron('*/2 * * * * *')
@Job('billing-report', { queue: 'billing' })
export class BillingReport extends RanBy {}
