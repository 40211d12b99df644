import { ServiceUnavailableException, type INestApplicationContext } from '@nestjs/common';
import { HealthCheckService } from '@nestjs/terminus';
import { JobsHealthIndicator, type JobsHealthOptions, type JobsSystemHealthOptions } from 'nestjs-durable-jobs/health';

/**
 * The app's jobs health check through terminus, as a health controller
 * would run it: its result, or for a 503 `{ http: 503, ...its body }`.
 */
export function checkHealth(app: INestApplicationContext, options: JobsHealthOptions = {}) {
  return app
    .get(HealthCheckService)
    .check([() => app.get(JobsHealthIndicator).isHealthy('jobs', options)])
    .catch((error: unknown) => {
      if (error instanceof ServiceUnavailableException) return { http: 503, ...(error.getResponse() as object) };
      throw error;
    });
}

/** The app's jobs system check (`checkSystem`) through terminus, as an alerting endpoint would run it. */
export function checkSystemHealth(app: INestApplicationContext, options: JobsSystemHealthOptions = {}) {
  return app
    .get(HealthCheckService)
    .check([() => app.get(JobsHealthIndicator).checkSystem('jobs-system', options)])
    .catch((error: unknown) => {
      if (error instanceof ServiceUnavailableException) return { http: 503, ...(error.getResponse() as object) };
      throw error;
    });
}
