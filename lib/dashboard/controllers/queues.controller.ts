import { Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { JobsAdmin } from '../../admin/jobs-admin.service.js';
import { workerView, type WorkerView } from '../../model/index.js';
import { JobsMonitor } from '../../monitoring/jobs-monitor.service.js';
import { integer, one, onlyKnown, type Query as Q } from '../dashboard-input.js';
import type { DashboardConfig } from '../dashboard-options.js';
import { DashboardRoutes } from './dashboard-routes.js';

/** Queues and the overview: counts by state, workers, limits and pause, throughput per minute. */
export function queuesController(config: DashboardConfig) {
  @DashboardRoutes(config)
  class JobsDashboardQueuesController {
    constructor(
      readonly admin: JobsAdmin,
      readonly monitor: JobsMonitor,
    ) {}

    /** Jobs by queue and state (finished states: the last 24 hours). */
    @Get('api/stats')
    stats(@Query() query: Q) {
      onlyKnown(query, []);
      return this.monitor.counts();
    }

    /** Running workers and those stopped within the hour; `queues: 'all'` for one that serves every queue. */
    @Get('api/workers')
    async workers(@Query() query: Q): Promise<WorkerView[]> {
      onlyKnown(query, []);
      return (await this.monitor.workers()).map(workerView);
    }

    /** This instance's encryption: key ids (never keys), the current one, and those its worker met on jobs and lacks. */
    @Get('api/encryption')
    encryption(@Query() query: Q) {
      onlyKnown(query, []);
      return this.monitor.encryption();
    }

    /** Job names with due jobs that no live worker handles in their queue: they wait until one is deployed. */
    @Get('api/unhandled')
    unhandled(@Query() query: Q) {
      onlyKnown(query, []);
      return this.monitor.unhandledJobs();
    }

    /**
     * Where the dashboard reads (`monitoring.replica` or the primary) and,
     * for a replica, how far it is behind; actions always go to the primary.
     */
    @Get('api/replica')
    async replica(@Query() query: Q) {
      onlyKnown(query, []);
      const lag = await this.monitor.replicaLag();
      return { source: lag ? 'replica' : 'primary', lag };
    }

    /** Each queue's limits (with where each came from), paused flag and live counts, by name. */
    @Get('api/queues')
    queues(@Query() query: Q) {
      onlyKnown(query, []);
      return this.admin.listQueues();
    }

    /** ?minutes=60&queue= — jobs ended per queue and minute. */
    @Get('api/throughput')
    throughput(@Query() query: Q) {
      const q = onlyKnown(query, ['minutes', 'queue']);
      const minutes = integer(q, 'minutes', 1, 1_440);
      const queue = one(q, 'queue');
      return this.admin.throughput({
        ...(minutes !== undefined ? { minutes } : {}),
        ...(queue !== undefined ? { queue } : {}),
      });
    }

    @Post('api/queues/:name/pause')
    @HttpCode(204)
    pause(@Param('name') name: string) {
      return this.admin.pauseQueue(name);
    }

    @Post('api/queues/:name/resume')
    @HttpCode(204)
    resume(@Param('name') name: string) {
      return this.admin.resumeQueue(name);
    }
  }
  return JobsDashboardQueuesController;
}
