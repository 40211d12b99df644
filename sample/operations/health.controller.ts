import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { JobsHealthIndicator } from 'nestjs-durable-jobs/health';

/** Readiness: the jobs database answers and every queue with due work has a live worker. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly jobs: JobsHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.jobs.isHealthy('jobs', { maxQueued: 10_000 })]);
  }
}
