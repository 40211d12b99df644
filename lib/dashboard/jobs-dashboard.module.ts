import { Module, type DynamicModule } from '@nestjs/common';
import { batchesController } from './controllers/batches.controller.js';
import { jobsController } from './controllers/jobs.controller.js';
import { pageController } from './controllers/page.controller.js';
import { queuesController } from './controllers/queues.controller.js';
import { schedulesController } from './controllers/schedules.controller.js';
import { DashboardGraphs } from './dashboard-graphs.service.js';
import { dashboardConfig, type JobsDashboardOptions } from './dashboard-options.js';

export type { JobsDashboardOptions } from './dashboard-options.js';

/**
 * A web page for operators, served by the app itself: overview (counts,
 * throughput, workers), jobs (filters, detail, bulk actions), batches and
 * their graphs, schedules and queues. Import it next to JobsModule, whose
 * JobsAdmin, JobQueue and JobsMonitor it uses, in an app that serves HTTP.
 * It is closed unless the app passes guards or says `public: true`.
 */
@Module({})
export class JobsDashboardModule {
  /**
   * The dashboard's module, serving the page at `path` (default `jobs-dashboard`). The options are
   * checked at the call: neither `guards` nor `public: true`, both, a guard that is neither a class
   * nor an object with `canActivate()`, an unknown key, or a bad `path`, `title`, `allowedOrigins` or
   * `traceUrl` throws a JobsError.
   */
  static register(options?: JobsDashboardOptions): DynamicModule {
    const config = dashboardConfig(options);
    return {
      module: JobsDashboardModule,
      controllers: [
        pageController(config),
        jobsController(config),
        batchesController(config),
        schedulesController(config),
        queuesController(config),
      ],
      providers: [DashboardGraphs],
    };
  }
}
