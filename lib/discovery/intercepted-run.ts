import type { ContextId, ModuleRef } from '@nestjs/core';
import type { RegisteredInterceptor } from './job-interceptors.js';
import { JobsError, type JobContext, type JobInterceptor, type JobInterceptorContext } from '../model/index.js';

/** An interceptor of one attempt, with the name its errors give it. */
export interface AttemptInterceptor {
  name: string;
  instance: JobInterceptor;
}

/**
 * The attempt's interceptors, outermost first: static ones as the module
 * built them, scoped ones resolved in the attempt's own DI sub-tree (the
 * handler's, when it is scoped too). Here, beside the registry, rather than
 * in worker/: JobQueue.runInline() runs a handler inside them too.
 */
export async function attemptInterceptors(
  registered: readonly RegisteredInterceptor[],
  moduleRef: ModuleRef,
  contextId: () => ContextId,
): Promise<AttemptInterceptor[]> {
  const out: AttemptInterceptor[] = [];
  for (const { metatype, wrapper, instance } of registered) {
    const resolved =
      instance ?? ((await moduleRef.resolve(wrapper.token, contextId(), { strict: false })) as JobInterceptor);
    out.push({ name: metatype.name, instance: resolved });
  }
  return out;
}

/**
 * Runs `run` (the handler) inside `chain`, each interceptor around the
 * next, and resolves with what the outermost resolves with. An
 * interceptor that returns before the rest of the chain has finished (it
 * never called next(), or did not wait for it) is a JobsError: the
 * attempt would end as a success with the handler not run, or still running.
 */
export function interceptedRun(
  chain: readonly AttemptInterceptor[],
  ctx: JobContext,
  payload: unknown,
  run: () => unknown,
): Promise<unknown> {
  // A view of ctx with the payload: inherited, so ctx.signal stays made on first use.
  const view = Object.create(ctx, { payload: { value: payload, enumerable: true } }) as JobInterceptorContext;
  const call = async (i: number): Promise<unknown> => {
    if (i === chain.length) return run();
    const { name, instance } = chain[i]!;
    let called = false;
    let settled = false;
    const next = () => {
      if (called) {
        return Promise.reject(
          new JobsError(
            `Job "${ctx.name}" (${ctx.jobId}): its interceptor ${name} called next() twice; the attempt runs once. Potential fix: call next() once and keep its promise.`,
          ),
        );
      }
      called = true;
      const rest = call(i + 1);
      void rest.then(
        () => (settled = true),
        () => (settled = true),
      );
      return rest;
    };
    const result = await instance.intercept(view, next);
    if (!called) {
      throw new JobsError(
        `Job "${ctx.name}" (${ctx.jobId}): its interceptor ${name} returned without calling next(), snoozing or throwing, so the attempt did not run. ` +
          `Potential fix: return next() from intercept(), or end the attempt with ctx.snooze(ms) or by throwing.`,
      );
    }
    if (!settled) {
      throw new JobsError(
        `Job "${ctx.name}" (${ctx.jobId}): its interceptor ${name} returned before the attempt it wraps had finished. ` +
          `Potential fix: await next() (or return it) in intercept().`,
      );
    }
    return result;
  };
  return call(0);
}
