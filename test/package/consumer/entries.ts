/** The subpath entries' declarations, with the optional peers installed. */
import { Controller, Get, Module, UseFilters, type CanActivate } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Registry } from 'prom-client';
import { JobsErrorFilter, JobsModule } from 'nestjs-durable-jobs';
import { JobsDashboardModule, type JobsDashboardOptions } from 'nestjs-durable-jobs/dashboard';
import { JobsHealthIndicator } from 'nestjs-durable-jobs/health';
import { JOBS_METRICS_REGISTRY, JobsMetrics } from 'nestjs-durable-jobs/metrics';
import { ManualClock } from 'nestjs-durable-jobs/testing';

@Controller('health')
@UseFilters(JobsErrorFilter)
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly jobs: JobsHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.jobs.isHealthy('jobs', { maxQueued: 10_000, timeout: 3_000 })]);
  }
}

const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
clock.advance(60_000);
// @ts-expect-error advance takes milliseconds
clock.advance('1 minute');

class OperatorsOnly implements CanActivate {
  canActivate() {
    return false;
  }
}
const dashboard: JobsDashboardOptions = { path: 'ops/jobs', guards: [OperatorsOnly], title: 'Jobs' };
// @ts-expect-error guards are guards, not strings
JobsDashboardModule.register({ guards: ['admin'] });

@Module({
  imports: [TerminusModule, JobsModule.forRoot({ clock, tracing: true }), JobsDashboardModule.register(dashboard)],
  controllers: [HealthController],
  providers: [JobsHealthIndicator, JobsMetrics, { provide: JOBS_METRICS_REGISTRY, useValue: new Registry() }],
})
export class OperationsModule {}
