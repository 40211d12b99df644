import { Cron, Job } from 'nestjs-durable-jobs';
import { RanBy } from './ran-by.js';

@Cron('* * * * * *')
@Job('api-tick', { queue: 'api' })
export class ApiTick extends RanBy {}

@Job('api-work', { queue: 'api', concurrency: 3 })
export class ApiWork extends RanBy {}
