import { Controller, Get, Query } from '@nestjs/common';
import { JobsMonitor } from 'nestjs-durable-jobs';
import { ListJobsQueryDto } from './list-jobs-query.dto.js';
import { StatsQueryDto } from './stats-query.dto.js';

/** What an operator looks at: counts, workers, lists of jobs (one job: GET /jobs/:id). */
@Controller()
export class OperationsController {
  constructor(private readonly monitor: JobsMonitor) {}

  @Get('jobs')
  async list(@Query() query: ListJobsQueryDto) {
    return this.monitor.jobs(query);
  }

  @Get('stats')
  async stats(@Query() query: StatsQueryDto) {
    return this.monitor.counts({ since: query.since === undefined ? undefined : new Date(query.since) });
  }

  @Get('workers')
  async workers() {
    return this.monitor.workers();
  }
}
