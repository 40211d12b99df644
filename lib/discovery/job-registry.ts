import { Injectable, Logger, type Type } from '@nestjs/common';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import {
  checkDeclaredKeys,
  checkJobUnique,
  type DeclaredKeyField,
  JobsError,
  resolveJobOptions,
  type JobDefaults,
  type JobHandler,
  type JobOptions,
  type JobUniqueOptions,
  type ResolvedJobOptions,
} from '../model/index.js';
import type { RegisteredInterceptor } from './job-interceptors.js';
import { getJobMetadata, validateFailureHookRetries } from './job.decorator.js';

export type { JobDefaults, ResolvedJobOptions };

/**
 * Jobs this app enqueues while another service runs them: their names, or
 * their names with the options the other service's `@Job` declares (at
 * least the queue, which is where its workers look).
 */
export type ExternalJobs = readonly string[] | Readonly<Record<string, JobOptions>>;

export interface RegisteredJob {
  name: string;
  metatype: Type<JobHandler>;
  options: ResolvedJobOptions;
  /** The options as @Job declares them (flow-control limits are read from here). */
  declared: JobOptions;
  /** One logger per job name, shared by its runs. */
  logger: Logger;
  /** The static instance; absent for request-scoped or durable handlers. */
  instance?: JobHandler;
  wrapper: InstanceWrapper;
  /** Around each attempt, outermost first: the module's, then the job's own (set by the explorer). */
  interceptors: RegisteredInterceptor[];
}

/** The job names this application knows, found once at start by the explorer. */
@Injectable()
export class JobRegistry {
  private readonly byName = new Map<string, RegisteredJob>();
  /** External job names; options are null when only the name was given. */
  private readonly external = new Map<string, ResolvedJobOptions | null>();
  /** The unique options external jobs declare, for this app's enqueues of them. */
  private readonly externalUnique = new Map<string, JobUniqueOptions>();
  /** The serial keys and groups external jobs declare, for this app's enqueues of them. */
  private readonly externalKeys = new Map<string, Pick<JobOptions, DeclaredKeyField>>();
  private defaults: JobDefaults = {};
  private keepSucceeded = true;

  /** `keepSucceeded`: whether job types that leave `keep.succeeded` out keep their successes. */
  configure(defaults: JobDefaults, externalJobs: ExternalJobs, keepSucceeded = true): void {
    validateFailureHookRetries('JobsModule.forRoot() defaults', defaults.onFailureRetries);
    this.defaults = defaults;
    this.keepSucceeded = keepSucceeded;
    if (Array.isArray(externalJobs)) {
      for (const name of externalJobs as readonly string[]) this.external.set(name, null);
    } else {
      for (const [name, options] of Object.entries(externalJobs)) {
        this.external.set(name, resolveJobOptions(options, defaults, keepSucceeded));
        const where = `JobsModule's "externalJobs" entry '${name}'`;
        if (options.interceptors !== undefined) {
          throw new JobsError(
            `${where}: "interceptors" run around attempts, and this app does not run '${name}'. ` +
              `Potential fix: declare them on the @Job of the service that runs it, and leave them out here.`,
          );
        }
        if (options.keep !== undefined) {
          throw new JobsError(
            `${where}: "keep" is decided by the worker that runs the job, and this app does not run '${name}'. ` +
              `Potential fix: declare keep on the @Job of the service that runs it, and leave it out here.`,
          );
        }
        checkJobUnique(where, options.unique);
        checkDeclaredKeys(where, options);
        if (options.unique) this.externalUnique.set(name, options.unique);
        if (options.serialKey !== undefined || options.group !== undefined) {
          this.externalKeys.set(name, { serialKey: options.serialKey, group: options.group });
        }
      }
    }
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
      options: resolveJobOptions(meta.options, this.defaults, this.keepSucceeded),
      declared: meta.options,
      wrapper,
      logger: new Logger(`Job ${meta.name}`),
      interceptors: [],
    };
    this.byName.set(meta.name, job);
    return job;
  }

  get(name: string): RegisteredJob | undefined {
    return this.byName.get(name);
  }

  isExternal(name: string): boolean {
    return this.external.has(name);
  }

  externalNames(): string[] {
    return [...this.external.keys()];
  }

  /**
   * What a job of this name is enqueued with when the call leaves an option
   * out. `queueKnown` is false for an external job listed by name only: the
   * queue its workers serve is unknown here.
   */
  optionsOf(name: string): ResolvedJobOptions & { queueKnown: boolean } {
    const registered = this.byName.get(name)?.options ?? this.external.get(name);
    if (registered) return { ...registered, queueKnown: true };
    return { ...resolveJobOptions({}, this.defaults, this.keepSucceeded), queueKnown: false };
  }

  /** The unique options the job type declares (`@Job` or `externalJobs`), if any. */
  uniqueOf(name: string): JobUniqueOptions | undefined {
    return this.byName.get(name)?.declared.unique ?? this.externalUnique.get(name);
  }

  /** The serial key and group the job type declares (`@Job` or `externalJobs`); fields left out when none. */
  keysOf(name: string): Pick<JobOptions, DeclaredKeyField> {
    const declared = this.byName.get(name)?.declared;
    if (declared) return { serialKey: declared.serialKey, group: declared.group };
    return this.externalKeys.get(name) ?? {};
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  all(): RegisteredJob[] {
    return [...this.byName.values()];
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
        `enqueue(): the job must be a @Job class or a job name, got ${describe(job)}. Potential fix: enqueue(SendReceipt, payload).`,
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

function describe(value: unknown): string {
  if (value === '') return 'an empty string';
  if (typeof value === 'string') return JSON.stringify(value);
  return value === null ? 'null' : typeof value;
}
