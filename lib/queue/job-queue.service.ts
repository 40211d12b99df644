import { Inject, Injectable, type Type } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { JobRegistry } from '../discovery/job-registry.js';
import { getJobMetadata, validateJobOptions } from '../discovery/job.decorator.js';
import {
  Clock,
  JobsError,
  uuidv7,
  type JobHandler,
  type JobInfo,
  type NewJob,
  type PayloadOf,
} from '../model/index.js';
import { JOB_STORAGE, type JobStorage } from '../storage/job-storage.interface.js';
import { ManagerExecutor } from '../storage/sql-executor.js';
import { serializePayload } from './payload.js';
import { QUEUE_SETTINGS, type EnqueueOptions, type QueueSettings } from './queue-options.js';

export type JobRef<H = JobHandler> = Type<H> | string;

export interface EnqueueItem<H extends JobHandler = JobHandler> {
  job: JobRef<H>;
  payload: PayloadOf<H>;
  options?: Omit<EnqueueOptions, 'manager'>;
}

/** Starts work: turns calls into job rows, validated at the call site. */
@Injectable()
export class JobQueue {
  constructor(
    @Inject(JOB_STORAGE) private readonly storage: JobStorage,
    private readonly registry: JobRegistry,
    private readonly clock: Clock,
    @Inject(QUEUE_SETTINGS) private readonly settings: QueueSettings,
  ) {}

  async enqueue<H extends JobHandler>(
    job: Type<H> | string,
    payload: PayloadOf<H>,
    options: EnqueueOptions = {},
  ): Promise<{ id: string }> {
    const now = this.clock.now();
    const row = this.toNewJob(job, payload, options, now);
    await this.storage.insertJobs([row], now, options.manager ? new ManagerExecutor(options.manager) : undefined);
    return { id: row.id };
  }

  /** Many jobs in one statement: all are written or none. */
  async enqueueMany(
    items: ReadonlyArray<EnqueueItem>,
    options: { manager?: EntityManager } = {},
  ): Promise<Array<{ id: string }>> {
    const now = this.clock.now();
    const rows = items.map((item, i) => {
      if (!item || (typeof item.job !== 'function' && typeof item.job !== 'string')) {
        throw new JobsError(`enqueueMany: item ${i} has no "job". Potential fix: pass { job: HandlerClass, payload }.`);
      }
      return this.toNewJob(item.job, item.payload, item.options ?? {}, now);
    });
    await this.storage.insertJobs(rows, now, options.manager ? new ManagerExecutor(options.manager) : undefined);
    return rows.map((r) => ({ id: r.id }));
  }

  get(id: string): Promise<JobInfo | null> {
    return this.storage.getJob(id);
  }

  /** Queued → cancelled now; active → its signal aborts and it ends cancelled. */
  async cancel(id: string): Promise<void> {
    const result = await this.storage.cancel(id, this.clock.now());
    if (result.outcome === 'not-found') {
      throw new JobsError(`cancel(${id}): no such job. Potential fix: check the id returned by enqueue().`);
    }
    if (result.outcome === 'finished') {
      throw new JobsError(
        `cancel(${id}): the job already ended "${result.state}", so there is nothing to cancel. Potential fix: only queued, waiting or active jobs can be cancelled; use retry() to run a finished job again.`,
      );
    }
  }

  /** Failed or cancelled → queued again, with a fresh set of attempts. */
  async retry(id: string): Promise<void> {
    const result = await this.storage.retry(id, this.clock.now());
    if (result.outcome === 'not-found') {
      throw new JobsError(`retry(${id}): no such job. Potential fix: check the id returned by enqueue().`);
    }
    if (result.outcome === 'not-retryable') {
      throw new JobsError(
        `retry(${id}): the job is "${result.state}"; only failed or cancelled jobs can be retried. Potential fix: wait until it has ended, or cancel() it first.`,
      );
    }
  }

  private toNewJob(job: JobRef, payload: unknown, options: EnqueueOptions, now: Date): NewJob {
    const name = this.resolveName(job);
    const where = `enqueue('${name}')`;
    validateJobOptions(where, options);
    const registered = this.registry.get(name);
    const defaults = registered?.options;
    let runAt = now;
    if (options.delay !== undefined) {
      if (typeof options.delay !== 'number' || !Number.isFinite(options.delay) || options.delay < 0) {
        throw new JobsError(
          `${where}: "delay" must be a number of milliseconds >= 0, got ${String(options.delay)}. Potential fix: delay: 5000, or runAt: new Date(...) for an absolute time.`,
        );
      }
      runAt = new Date(now.getTime() + options.delay);
    }
    if (options.runAt !== undefined) {
      if (!(options.runAt instanceof Date) || Number.isNaN(options.runAt.getTime())) {
        throw new JobsError(
          `${where}: "runAt" must be a valid Date, got ${String(options.runAt)}. Potential fix: runAt: new Date('2026-12-01T09:00:00Z').`,
        );
      }
      if (options.delay !== undefined) {
        throw new JobsError(
          `${where}: pass either "delay" or "runAt", not both. Potential fix: keep the one you mean.`,
        );
      }
      runAt = options.runAt;
    }
    return {
      id: uuidv7(now.getTime()),
      name,
      queue: options.queue ?? defaults?.queue ?? 'default',
      payloadJson: serializePayload(name, payload, this.settings.maxPayloadBytes),
      state: 'queued',
      priority: options.priority ?? defaults?.priority ?? 0,
      runAt,
      maxAttempts: options.maxAttempts ?? defaults?.maxAttempts ?? 3,
      timeoutMs: options.timeout ?? defaults?.timeout ?? null,
    };
  }

  /** Knows the name of every job this app may start, or says why not. */
  resolveName(job: JobRef): string {
    if (typeof job === 'function') {
      const meta = getJobMetadata(job);
      if (!meta) {
        throw new JobsError(
          `${job.name} is not a job handler. Potential fix: decorate it with @Job('name') and register it as a provider.`,
        );
      }
      if (!this.registry.get(meta.name) && !this.registry.isExternal(meta.name)) {
        throw new JobsError(
          `Job "${meta.name}" (${job.name}) is not registered in this application. Potential fix: add ${job.name} to a module's providers, or list '${meta.name}' in JobsModule's "externalJobs" if another service runs it.`,
        );
      }
      return meta.name;
    }
    if (typeof job !== 'string' || job === '') {
      throw new JobsError(
        `enqueue(): the job must be a @Job class or a job name, got ${String(job)}. Potential fix: enqueue(SendReceipt, payload).`,
      );
    }
    if (!this.registry.get(job) && !this.registry.isExternal(job)) {
      const known = this.registry.names();
      throw new JobsError(
        `Unknown job "${job}": no @Job('${job}') handler is registered${known.length ? ` (known: ${known.join(', ')})` : ''}. ` +
          `Potential fix: check the spelling, or list '${job}' in JobsModule's "externalJobs" if another service runs it.`,
      );
    }
    return job;
  }
}
