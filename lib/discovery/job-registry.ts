import { Injectable, Logger, type Type } from '@nestjs/common';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { DEFAULT_BACKOFF, JobsError, type BackoffOptions, type JobHandler } from '../model/index.js';
import { getJobMetadata, type JobOptions } from './job.decorator.js';

export interface ResolvedJobOptions {
  queue: string;
  maxAttempts: number;
  backoff: BackoffOptions;
  timeout: number | null;
  priority: number;
}

export interface RegisteredJob {
  name: string;
  metatype: Type<JobHandler>;
  options: ResolvedJobOptions;
  /** One logger per job name, shared by its runs. */
  logger: Logger;
  /** The static instance; absent for request-scoped or durable handlers. */
  instance?: JobHandler;
  wrapper: InstanceWrapper;
}

export interface JobDefaults {
  maxAttempts?: number;
  backoff?: BackoffOptions;
  timeout?: number;
}

/** The job names this application knows, found once at start by the explorer. */
@Injectable()
export class JobRegistry {
  private readonly byName = new Map<string, RegisteredJob>();
  private readonly external = new Set<string>();
  private defaults: JobDefaults = {};

  configure(defaults: JobDefaults, externalJobs: readonly string[]): void {
    this.defaults = defaults;
    for (const name of externalJobs) this.external.add(name);
  }

  register(metatype: Type<JobHandler>, wrapper: InstanceWrapper): RegisteredJob {
    const meta = getJobMetadata(metatype)!;
    const existing = this.byName.get(meta.name);
    if (existing && existing.metatype !== metatype) {
      throw new JobsError(
        `Job name "${meta.name}" is used by two classes: ${existing.metatype.name} and ${metatype.name}. ` +
          `Potential fix: give one of them another name in @Job('...'); names identify stored jobs, so they must be unique in an application.`,
      );
    }
    const job: RegisteredJob = {
      name: meta.name,
      metatype,
      options: this.resolve(meta.options),
      wrapper,
      logger: new Logger(`Job ${meta.name}`),
    };
    this.byName.set(meta.name, job);
    return job;
  }

  private resolve(o: JobOptions): ResolvedJobOptions {
    return {
      queue: o.queue ?? 'default',
      maxAttempts: o.maxAttempts ?? this.defaults.maxAttempts ?? 3,
      backoff: o.backoff ?? this.defaults.backoff ?? DEFAULT_BACKOFF,
      timeout: o.timeout ?? this.defaults.timeout ?? null,
      priority: o.priority ?? 0,
    };
  }

  get(name: string): RegisteredJob | undefined {
    return this.byName.get(name);
  }

  isExternal(name: string): boolean {
    return this.external.has(name);
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  all(): RegisteredJob[] {
    return [...this.byName.values()];
  }

  queues(): string[] {
    return [...new Set(this.all().map((j) => j.options.queue))];
  }

  /** Knows the name of every job this app may start, or says why not. */
  resolveName(job: Type | string): string {
    if (typeof job === 'function') {
      const meta = getJobMetadata(job);
      if (!meta) {
        throw new JobsError(
          `${job.name} is not a job handler. Potential fix: decorate it with @Job('name') and register it as a provider.`,
        );
      }
      if (!this.get(meta.name) && !this.isExternal(meta.name)) {
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
    if (!this.get(job) && !this.isExternal(job)) {
      const known = this.names();
      throw new JobsError(
        `Unknown job "${job}": no @Job('${job}') handler is registered${known.length ? ` (known: ${known.join(', ')})` : ''}. ` +
          `Potential fix: check the spelling, or list '${job}' in JobsModule's "externalJobs" if another service runs it.`,
      );
    }
    return job;
  }
}
