import { Body, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { JobsAdmin } from '../../admin/jobs-admin.service.js';
import {
  JobsNotFoundError,
  MAX_EXECUTIONS_PAGE,
  type CancelAllFilter,
  type JobListState,
  type JobSearch,
  type RetryAllFilter,
} from '../../model/index.js';
import { JobQueue } from '../../queue/job-queue.service.js';
import { DashboardGraphs } from '../dashboard-graphs.service.js';
import { bulkBody, integer, one, onlyKnown, retryBody, stateList, type Query as Q } from '../dashboard-input.js';
import type { DashboardConfig } from '../dashboard-options.js';
import { withTraceLinks } from '../trace-links.js';
import { DashboardRoutes } from './dashboard-routes.js';

const SEARCH_PARAMS = ['state', 'queue', 'name', 'nameContains', 'batchId', 'id', 'before', 'limit'];

/** Jobs: search, one job's detail and flow graph, and the actions on one job or many. */
export function jobsController(config: DashboardConfig) {
  @DashboardRoutes(config)
  class JobsDashboardJobsController {
    constructor(
      readonly admin: JobsAdmin,
      readonly jobs: JobQueue,
      readonly graphs: DashboardGraphs,
    ) {}

    /** ?state=failed,scheduled&queue=&name=&nameContains=&batchId=&id=<prefix>&before=<next>&limit= — newest first. */
    @Get('api/jobs')
    search(@Query() query: Q) {
      const q = onlyKnown(query, SEARCH_PARAMS);
      const search: JobSearch = {};
      const state = stateList(q);
      if (state) search.state = state as JobListState[];
      for (const [param, field] of [
        ['queue', 'queue'],
        ['name', 'name'],
        ['nameContains', 'nameContains'],
        ['batchId', 'batchId'],
        ['id', 'idPrefix'],
        ['before', 'before'],
      ] as const) {
        const value = one(q, param);
        if (value !== undefined) search[field] = value;
      }
      const limit = integer(q, 'limit', 1, 500);
      if (limit !== undefined) search.limit = limit;
      return this.admin.search(search);
    }

    @Get('api/jobs/:id')
    async detail(@Param('id') id: string) {
      const job = await this.admin.detail(id);
      if (!job) {
        throw new JobsNotFoundError(
          `Jobs dashboard: no job ${id}. Potential fix: it may have been deleted or purged; search by the start of its id.`,
        );
      }
      return withTraceLinks(job, config.traceUrl);
    }

    /** The job's steps with their stored results (the detail lists them without). */
    @Get('api/jobs/:id/steps')
    async steps(@Param('id') id: string) {
      const job = await this.admin.get(id, { stepResults: true });
      if (!job) {
        throw new JobsNotFoundError(
          `Jobs dashboard: no job ${id}. Potential fix: it may have been deleted or purged; search by the start of its id.`,
        );
      }
      return job.steps;
    }

    /** ?after=<cursor>&limit= — the job's older attempts, newest first (the detail holds the latest). */
    @Get('api/jobs/:id/executions')
    async executions(@Param('id') id: string, @Query() query: Q) {
      const q = onlyKnown(query, ['after', 'limit']);
      const after = one(q, 'after');
      const limit = integer(q, 'limit', 1, MAX_EXECUTIONS_PAGE);
      const page = await this.admin.executions(id, {
        ...(after === undefined ? {} : { after }),
        ...(limit === undefined ? {} : { limit }),
      });
      if (!page) {
        throw new JobsNotFoundError(
          `Jobs dashboard: no job ${id}. Potential fix: it may have been deleted or purged; search by the start of its id.`,
        );
      }
      return withTraceLinks(page, config.traceUrl);
    }

    @Get('api/jobs/:id/graph')
    graph(@Param('id') id: string) {
      return this.graphs.jobGraph(id);
    }

    /** No body: a plain retry; { fromStep: '<name>' }: that step and the ones recorded after it run again. */
    @Post('api/jobs/:id/retry')
    @HttpCode(204)
    retry(@Param('id') id: string, @Body() body: unknown) {
      return this.jobs.retry(id, retryBody(body));
    }

    @Post('api/jobs/:id/cancel')
    @HttpCode(204)
    cancel(@Param('id') id: string) {
      return this.jobs.cancel(id);
    }

    @Post('api/jobs/:id/run-now')
    @HttpCode(200)
    runNow(@Param('id') id: string) {
      return this.admin.runNow(id);
    }

    @Post('api/jobs/:id/delete')
    @HttpCode(200)
    delete(@Param('id') id: string) {
      return this.admin.delete(id);
    }

    /** { ids: [...] } or { all: true, state, queue, name, batchId, idPrefix }. */
    @Post('api/jobs/retry')
    @HttpCode(200)
    retryAll(@Body() body: unknown) {
      return this.admin.retryAll(bulkBody('retry', body) as RetryAllFilter);
    }

    @Post('api/jobs/cancel')
    @HttpCode(200)
    cancelAll(@Body() body: unknown) {
      return this.admin.cancelAll(bulkBody('cancel', body) as CancelAllFilter);
    }
  }
  return JobsDashboardJobsController;
}
