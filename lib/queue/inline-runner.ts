import type { Type } from '@nestjs/common';
import { ContextIdFactory, type ContextId, type ModuleRef } from '@nestjs/core';
import { attemptInterceptors, interceptedRun } from '../discovery/intercepted-run.js';
import type { JobRegistry, RegisteredJob } from '../discovery/job-registry.js';
import {
  describeValue,
  frozenContext,
  JobsError,
  JobTimeoutError,
  NO_CONTEXT,
  serializeContext,
  serializePayload,
  uuidv7,
  type Clock,
  type JobContextData,
  type JobContextSource,
  type JobHandler,
} from '../model/index.js';
import { inlineContext } from './inline-context.js';
import { defaultContext } from './job-context-capture.js';

/**
 * `JobQueue.runInline()`: a registered handler run now, in this process, as
 * one attempt with no retry, no queue and no row. The payload is checked as
 * enqueue checks it and handed over as a worker hands it (its JSON, parsed
 * again), the job type's interceptors and timeout apply, and the handler's
 * result or error goes back to the caller as it is.
 */
export class InlineRunner {
  constructor(
    private readonly registry: JobRegistry,
    private readonly moduleRef: ModuleRef,
    private readonly clock: Clock,
    private readonly maxPayloadBytes: number,
    private readonly contextFrom?: JobContextSource,
  ) {}

  /** The context an enqueue here would give the job, checked and copied as a worker's handler gets it. */
  private contextOf(where: string): JobContextData {
    const json = serializeContext(`${where} (the default context)`, defaultContext(where, this.contextFrom));
    return json == null ? NO_CONTEXT : frozenContext(JSON.parse(json));
  }

  async run(job: Type<JobHandler> | string, payload: unknown): Promise<unknown> {
    const where =
      typeof job === 'string'
        ? `runInline('${job}')`
        : typeof job === 'function'
          ? `runInline(${job.name})`
          : 'runInline()';
    const registered = this.handlerOf(where, job);
    const given = this.payloadCopy(where, registered.name, payload);
    const { timeout } = registered.options;
    const controller = new AbortController();
    const ctx = inlineContext({
      jobId: uuidv7(this.clock.now().getTime()),
      name: registered.name,
      queue: registered.options.queue,
      where,
      logger: registered.logger,
      signal: controller.signal,
      context: this.contextOf(where),
    });
    let contextId: ContextId | null = null;
    // A scoped handler or interceptor gets its own DI sub-tree, as on a worker: REQUEST is { job, payload }.
    const scope = (): ContextId => {
      if (contextId) return contextId;
      contextId = ContextIdFactory.create();
      this.moduleRef.registerRequestByContextId({ job: ctx, payload: given }, contextId);
      return contextId;
    };
    const { wrapper } = registered;
    // The worker keeps the static instance on the registration once it starts; without one, it is the wrapper's.
    const handler =
      registered.instance ??
      (wrapper.isDependencyTreeStatic() && !wrapper.isTransient
        ? (wrapper.instance as JobHandler)
        : await this.moduleRef.resolve<JobHandler>(registered.metatype, scope(), { strict: false }));
    const chain = registered.interceptors.length
      ? await attemptInterceptors(registered.interceptors, this.moduleRef, scope)
      : null;
    const run = async () =>
      chain ? interceptedRun(chain, ctx, given, () => handler.run(given, ctx)) : handler.run(given, ctx);
    if (!timeout) return run();
    // As on a worker: at the timeout the signal aborts and the call ends; the handler may run on.
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const error = new JobTimeoutError(registered.name, timeout);
        controller.abort(error);
        reject(error);
      }, timeout);
      run().then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }

  /** The job's registration here: a job another service runs has no handler in this app. */
  private handlerOf(where: string, job: unknown): RegisteredJob {
    if (typeof job !== 'function' && (typeof job !== 'string' || job === '')) {
      throw new JobsError(
        `${where}: the job must be a @Job class or a job name, got ${describeValue(job)}. Potential fix: runInline(SendReceipt, payload).`,
      );
    }
    let name: string;
    try {
      name = this.registry.resolveName(job as Type | string);
    } catch (error) {
      if (!(error instanceof JobsError)) throw error;
      throw new JobsError(`${where}: ${error.message}`);
    }
    const registered = this.registry.get(name);
    if (!registered) {
      throw new JobsError(
        `${where}: "${name}" is an external job: another service runs it, and this app has no handler for it. ` +
          `Potential fix: enqueue it (JobQueue.enqueue('${name}', payload)) for that service's workers.`,
      );
    }
    return registered;
  }

  /** The payload as a worker would get it: checked as enqueue checks it, then its JSON parsed again. */
  private payloadCopy(where: string, name: string, payload: unknown): unknown {
    let json: string;
    try {
      json = serializePayload(name, payload, this.maxPayloadBytes);
    } catch (error) {
      if (!(error instanceof JobsError)) throw error;
      throw new JobsError(`${where}: ${error.message}`);
    }
    return JSON.parse(json) as unknown;
  }
}
