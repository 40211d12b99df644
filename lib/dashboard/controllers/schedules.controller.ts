import { Get, HttpCode, Param, Post } from '@nestjs/common';
import { JobsAdmin } from '../../admin/jobs-admin.service.js';
import type { DashboardConfig } from '../dashboard-options.js';
import { DashboardRoutes } from './dashboard-routes.js';

/** Recurring schedules: next and last run; pause, resume, one run now. */
export function schedulesController(config: DashboardConfig) {
  @DashboardRoutes(config)
  class JobsDashboardSchedulesController {
    constructor(readonly admin: JobsAdmin) {}

    @Get('api/schedules')
    list() {
      return this.admin.listSchedules();
    }

    @Post('api/schedules/:name/pause')
    @HttpCode(200)
    pause(@Param('name') name: string) {
      return this.admin.pauseSchedule(name);
    }

    @Post('api/schedules/:name/resume')
    @HttpCode(200)
    resume(@Param('name') name: string) {
      return this.admin.resumeSchedule(name);
    }

    @Post('api/schedules/:name/run')
    @HttpCode(200)
    run(@Param('name') name: string) {
      return this.admin.runSchedule(name);
    }
  }
  return JobsDashboardSchedulesController;
}
