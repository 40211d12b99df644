import { BadRequestException, Catch, type ArgumentsHost } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { JobsError } from '../model/index.js';

/**
 * A `JobsError` is bad input from the caller (an unknown job, a bad filter,
 * retrying a job that is still running): over HTTP it is a 400 carrying the
 * error's message, fix included. Use it with `@UseFilters(JobsErrorFilter)`
 * on a controller, or app-wide through APP_FILTER.
 */
@Catch(JobsError)
export class JobsErrorFilter extends BaseExceptionFilter {
  override catch(error: JobsError, host: ArgumentsHost): void {
    super.catch(new BadRequestException(error.message), host);
  }
}
