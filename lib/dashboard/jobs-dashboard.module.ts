import {
  Controller,
  Get,
  Header,
  HttpCode,
  Module,
  NotFoundException,
  Param,
  Post,
  Query,
  UseFilters,
  UseGuards,
  type CanActivate,
  type DynamicModule,
  type Type,
} from '@nestjs/common';
import { JobsErrorFilter } from './jobs-error.filter.js';
import { JobsError, type JobState } from '../model/index.js';
import { JobQueue } from '../queue/job-queue.service.js';
import { JobsMonitor } from '../monitoring/jobs-monitor.service.js';
import { dashboardPage } from './dashboard-page.js';

export interface JobsDashboardOptions {
  /** Where the page is served; its JSON endpoints live under `<path>/api`. Default 'jobs-dashboard'. */
  path?: string;
  /**
   * Guards on every route. The page shows payloads and errors and can retry
   * and cancel jobs: in production, pass your authentication guard.
   */
  guards?: Array<Type<CanActivate> | CanActivate>;
  /** The page's heading; default 'Jobs'. */
  title?: string;
}

/** One value of a query parameter: given twice it is ambiguous, and the JobsErrorFilter answers 400. */
function single(field: string, value: string | string[] | undefined): string | undefined {
  if (Array.isArray(value)) {
    throw new JobsError(
      `Jobs dashboard: "${field}" was given ${value.length} times. Potential fix: pass it once, e.g. ?${field}=${value[0] ?? ''}.`,
    );
  }
  return value || undefined;
}

function dashboardController(path: string, guards: JobsDashboardOptions['guards'], title: string) {
  const page = dashboardPage(title);

  @Controller(path)
  @UseGuards(...(guards ?? []))
  @UseFilters(JobsErrorFilter)
  class JobsDashboardController {
    constructor(
      readonly monitor: JobsMonitor,
      readonly jobs: JobQueue,
    ) {}

    @Get()
    @Header('content-type', 'text/html; charset=utf-8')
    @Header('cache-control', 'no-store')
    page(): string {
      return page;
    }

    @Get('api/stats')
    stats() {
      return this.monitor.counts();
    }

    @Get('api/workers')
    workers() {
      return this.monitor.workers();
    }

    @Get('api/jobs')
    list(
      @Query('state') state?: string | string[],
      @Query('queue') queue?: string | string[],
      @Query('before') before?: string | string[],
      @Query('limit') limit?: string | string[],
    ) {
      // A query string may repeat a key (?state=failed&state=queued): states add up, anything else is one value.
      const states = state === undefined ? [] : [state].flat().flatMap((s) => s.split(','));
      return this.monitor.jobs({
        state: states.length ? (states as JobState[]) : undefined,
        queue: single('queue', queue),
        before: single('before', before),
        limit: limit === undefined || limit === '' ? undefined : Number(single('limit', limit)),
      });
    }

    @Get('api/jobs/:id')
    async job(@Param('id') id: string) {
      const job = await this.jobs.get(id);
      if (!job) throw new NotFoundException(`No job ${id}`);
      return job;
    }

    @Post('api/jobs/:id/retry')
    @HttpCode(204)
    retry(@Param('id') id: string) {
      return this.jobs.retry(id);
    }

    @Post('api/jobs/:id/cancel')
    @HttpCode(204)
    cancel(@Param('id') id: string) {
      return this.jobs.cancel(id);
    }
  }
  return JobsDashboardController;
}

/**
 * A page for operators: queues by state, workers, jobs by state with their
 * detail and history, retry and cancel. Import it next to JobsModule (whose
 * JobsMonitor and JobQueue it uses) in an app that serves HTTP.
 */
@Module({})
export class JobsDashboardModule {
  static register(options: JobsDashboardOptions = {}): DynamicModule {
    const path = (options.path ?? 'jobs-dashboard').replace(/^\/+|\/+$/g, '');
    return {
      module: JobsDashboardModule,
      controllers: [dashboardController(path, options.guards, options.title ?? 'Jobs')],
    };
  }
}
