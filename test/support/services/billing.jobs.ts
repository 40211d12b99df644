import { Cron, Job } from 'nestjs-durable-jobs';
import { RanBy } from './ran-by.js';

@Cron('* * * * * *')
@Job('billing-tick', { queue: 'billing' })
export class BillingTick extends RanBy {}

@Job('billing-work', { queue: 'billing', rateLimit: { max: 100, per: 1_000 } })
export class BillingWork extends RanBy {}
