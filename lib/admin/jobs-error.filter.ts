import {
  BadRequestException,
  Catch,
  NotFoundException,
  ServiceUnavailableException,
  type ArgumentsHost,
} from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { JobsDatabaseError, JobsError, JobsNotFoundError } from '../model/index.js';

/**
 * A `JobsError` over HTTP: bad input from the caller (an unknown state, a
 * malformed id, retrying a job that is still running) is a 400 carrying the
 * error's message, fix included; a job, batch or schedule that does not
 * exist is a 404; a database that failed the call is a 503. Use it with
 * `@UseFilters(JobsErrorFilter)` on a controller, or app-wide through APP_FILTER.
 */
@Catch(JobsError)
export class JobsErrorFilter extends BaseExceptionFilter {
  /**
   * Called by Nest with a JobsError a handler threw: answers it as a NotFoundException (404) for a
   * JobsNotFoundError, a ServiceUnavailableException (503) for a JobsDatabaseError, and a
   * BadRequestException (400) otherwise, each with the error's message.
   */
  override catch(error: JobsError, host: ArgumentsHost): void {
    const http =
      error instanceof JobsNotFoundError
        ? new NotFoundException(error.message)
        : error instanceof JobsDatabaseError
          ? new ServiceUnavailableException(error.message)
          : new BadRequestException(error.message);
    super.catch(http, host);
  }
}
