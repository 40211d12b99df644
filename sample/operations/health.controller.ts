import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { JobsHealthIndicator } from 'nestjs-durable-jobs/health';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly jobs: JobsHealthIndicator,
  ) {}

  /** Readiness of this instance: its jobs database answers and its worker runs. For a readinessProbe. */
  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.jobs.isHealthy('jobs')]);
  }

  /**
   * The jobs system as a whole (queues no live worker serves, jobs nothing handles, a backlog past
   * 10 000): for the alerting to poll, never for a probe, since another deployment's trouble shows here.
   */
  @Get('system')
  @HealthCheck()
  system() {
    return this.health.check([() => this.jobs.checkSystem('jobs', { maxQueued: 10_000 })]);
  }
}
