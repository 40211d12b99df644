import { Controller, Get, Query } from '@nestjs/common';
import { JobsAdmin, JobsMonitor } from 'nestjs-durable-jobs';
import { ListJobsQueryDto } from './list-jobs-query.dto.js';
import { StatsQueryDto } from './stats-query.dto.js';

/** What an operator looks at: counts, workers, lists of jobs (one job: GET /jobs/:id). */
@Controller()
export class OperationsController {
  constructor(
    private readonly monitor: JobsMonitor,
    private readonly admin: JobsAdmin,
  ) {}

  /**
   * Lists by the states GET /stats counts: queued is due now, scheduled is
   * queued for later, so a list and its count agree.
   */
  @Get('jobs')
  async list(@Query() query: ListJobsQueryDto) {
    return this.admin.search(query);
  }

  @Get('stats')
  async stats(@Query() query: StatsQueryDto) {
    return this.monitor.counts({ since: query.since === undefined ? undefined : new Date(query.since) });
  }

  /** `queues: 'all'` for a worker that serves every queue (JobsMonitor says so with an empty list). */
  @Get('workers')
  async workers() {
    return (await this.monitor.workers()).map((w) => ({ ...w, queues: w.queues.length ? w.queues : 'all' }));
  }
}
