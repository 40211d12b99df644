import { applyDecorators, Controller, UseFilters, UseGuards } from '@nestjs/common';
import type { DashboardConfig } from '../dashboard-options.js';
import { JobsErrorFilter } from '../../admin/jobs-error.filter.js';
import { SameOriginGuard } from '../same-origin.guard.js';

/**
 * What every dashboard controller carries: the dashboard's path, the
 * cross-site check before the app's guards, and JobsError answered as
 * 400/404/503.
 */
export function DashboardRoutes(config: DashboardConfig): ClassDecorator {
  return applyDecorators(
    Controller(config.path),
    UseGuards(new SameOriginGuard(config.allowedHosts), ...config.guards),
    UseFilters(JobsErrorFilter),
  );
}
