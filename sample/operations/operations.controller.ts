import { Controller, Get, Query } from '@nestjs/common';
import { JobsMonitor, type JobState } from 'nestjs-durable-jobs';

/** What an operator looks at: counts, workers, lists of jobs (one job: GET /jobs/:id). Bad filters: 400 (JobsErrorFilter). */
@Controller()
export class OperationsController {
  constructor(private readonly monitor: JobsMonitor) {}

  @Get('jobs')
  async list(
    @Query('state') state?: string,
    @Query('queue') queue?: string,
    @Query('name') name?: string,
    @Query('before') before?: string,
    @Query('limit') limit?: string,
  ) {
    return this.monitor.jobs({
      state: state ? (state.split(',') as JobState[]) : undefined,
      queue,
      name,
      before,
      limit: limit === undefined ? undefined : Number(limit),
    });
  }

  @Get('stats')
  async stats(@Query('since') since?: string) {
    return this.monitor.counts({ since: since ? new Date(since) : undefined });
  }

  @Get('workers')
  async workers() {
    return this.monitor.workers();
  }
}
