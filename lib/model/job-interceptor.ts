import type { JobClass, JobContext } from './job-context.js';

/** What an interceptor sees of an attempt: the handler's JobContext, and the payload the handler gets. */
export interface JobInterceptorContext<Payload = unknown> extends JobContext {
  /** The payload the handler gets (the same object). */
  readonly payload: Payload;
}

/** Runs the rest of the chain (the next interceptor, then the handler) and resolves with its result. */
export type JobCallHandler = () => Promise<unknown>;

/**
 * Code around each attempt of a job, as Nest's interceptors are around a
 * request: an ordinary injectable provider, named in `@Job(name, {
 * interceptors })` or in `JobsModule.forRoot({ interceptors })`. It runs the
 * attempt by calling `next()` (inside an AsyncLocalStorage context, a span,
 * a try/finally), and what it resolves with is the job's result. It may
 * instead end the attempt with `ctx.snooze()`, or throw to fail it as the
 * handler would. Returning without any of these is a JobsError that fails
 * the attempt.
 */
export interface JobInterceptor {
  /**
   * Called once per attempt: call `next()` once to run the rest of the chain; what this resolves with
   * is the job's result.
   */
  intercept(ctx: JobInterceptorContext, next: JobCallHandler): Promise<unknown>;
}

/** An interceptor's class, as `interceptors` lists name them: Nest resolves the instance. */
export type JobInterceptorClass = JobClass<JobInterceptor>;
