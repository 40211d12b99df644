import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { describeValue, JobsError, type JobInterceptor, type JobInterceptorClass } from '../model/index.js';

/** One interceptor of a job, as the module provides it: its class, the provider, and its instance once known. */
export interface RegisteredInterceptor {
  metatype: JobInterceptorClass;
  wrapper: InstanceWrapper;
  /** The static instance; absent for a request-scoped or transient one, resolved per attempt. */
  instance?: JobInterceptor;
}

const EXAMPLE = 'interceptors: [TenantScope], with TenantScope an @Injectable() class that has intercept(ctx, next)';

/** Checks an `interceptors` list where it is written (`@Job`, JobsModule): classes with an intercept method. */
export function checkInterceptorClasses(where: string, value: unknown): void {
  if (value === undefined) return;
  if (!Array.isArray(value)) {
    throw new JobsError(
      `${where}: "interceptors" must be a list of classes, got ${describeValue(value)}. Potential fix: ${EXAMPLE}.`,
    );
  }
  value.forEach((cls: unknown, i) => {
    if (typeof cls !== 'function') {
      throw new JobsError(
        `${where}: "interceptors" entry ${i} must be a class, got ${describeValue(cls)}. Potential fix: ${EXAMPLE}.`,
      );
    }
    if (typeof (cls.prototype as Partial<JobInterceptor> | undefined)?.intercept !== 'function') {
      throw new JobsError(
        `${where}: "interceptors" entry ${i} (${cls.name || 'an anonymous class'}) has no intercept(ctx, next) method. ` +
          `Potential fix: implement JobInterceptor: "async intercept(ctx, next) { return next(); }".`,
      );
    }
  });
}

/**
 * The providers of the interceptor classes `wanted`, found among every
 * module's providers, or the JobsError naming the first class no module
 * provides and `owner` (the job, or JobsModule) that names it.
 */
export function interceptorProviders(
  owner: string,
  wanted: readonly JobInterceptorClass[],
  providers: ReadonlyMap<unknown, InstanceWrapper>,
): RegisteredInterceptor[] {
  return wanted.map((metatype) => {
    const wrapper = providers.get(metatype);
    if (!wrapper) {
      throw new JobsError(
        `${owner} names the interceptor ${metatype.name}, but no module provides it, so nothing can build it. ` +
          `Potential fix: add ${metatype.name} to the "providers" of a module (the one that provides the job's handler will do).`,
      );
    }
    return { metatype, wrapper };
  });
}
