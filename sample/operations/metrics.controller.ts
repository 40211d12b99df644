import { Controller, Get, Header, Inject } from '@nestjs/common';
import { JOBS_METRICS_REGISTRY } from 'nestjs-durable-jobs/metrics';
import type { Registry } from 'prom-client';

/** Prometheus scrape endpoint: this app's own registry (tests run several apps in one process). */
@Controller('metrics')
export class MetricsController {
  constructor(@Inject(JOBS_METRICS_REGISTRY) private readonly registry: Registry) {}

  @Get()
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}
