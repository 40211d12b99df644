// @ts-check
/**
 * The dashboard page's script, an ES module served beside the page with the
 * modules it imports: no build step, nothing from elsewhere. Each view draws
 * from the JSON endpoints under `<path>/api`.
 */
import { batch, batches } from './batches.js';
import { job } from './job.js';
import { jobs } from './jobs.js';
import { queues, schedules } from './operations.js';
import { overview } from './overview.js';
import { start } from './router.js';

start({ overview, jobs, job, batches, batch, schedules, queues });
