import { Cron, Job } from 'nestjs-durable-jobs';
import { RanBy } from './ran-by.js';

/** Declares api's schedule name with another timing. */
@Cron('*/5 * * * * *', { name: 'api-tick' })
@Job('rival-tick', { queue: 'rival' })
export class RivalTick extends RanBy {}
