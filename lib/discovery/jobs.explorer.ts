import { Inject, Injectable, Logger, type OnModuleInit, type Type } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { JobCipher, JobsError, type JobHandler } from '../model/index.js';
import { checkInterceptorClasses, interceptorProviders } from './job-interceptors.js';
import { DECORATED_JOB_CLASSES, getJobMetadata } from './job.decorator.js';
import { JobRegistry } from './job-registry.js';
import { JOBS_DISCOVERY_OPTIONS, type JobsDiscoveryOptions } from './discovery-options.js';

/**
 * Finds `@Job` classes among the providers of every module. It reads class
 * metadata only: touching instances of unrelated providers could run their
 * getters or resolve scoped trees for nothing.
 */
@Injectable()
export class JobsExplorer implements OnModuleInit {
  private readonly logger = new Logger('JobsExplorer');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly registry: JobRegistry,
    @Inject(JOBS_DISCOVERY_OPTIONS) private readonly options: JobsDiscoveryOptions,
    private readonly cipher: JobCipher,
  ) {}

  onModuleInit(): void {
    this.registry.configure(
      this.options.defaults ?? {},
      this.options.externalJobs ?? [],
      this.options.keepSucceeded ?? true,
    );
    const found = new Set<Type>();
    const byClass = new Map<unknown, InstanceWrapper>();
    for (const wrapper of this.discovery.getProviders()) {
      if (wrapper.metatype && !wrapper.inject && !byClass.has(wrapper.metatype)) byClass.set(wrapper.metatype, wrapper);
    }
    const shared = this.options.interceptors ?? [];
    checkInterceptorClasses('JobsModule', shared);
    const sharedProviders = interceptorProviders(`JobsModule's "interceptors"`, shared, byClass);
    for (const wrapper of this.discovery.getProviders()) {
      const metatype = wrapper.metatype as Type | undefined;
      // Factory and value providers have no class of their own to read.
      if (!metatype || wrapper.inject || !getJobMetadata(metatype)) continue;
      if (typeof (metatype.prototype as Partial<JobHandler>).run !== 'function') {
        throw new JobsError(
          `${metatype.name} is marked @Job('${getJobMetadata(metatype)!.name}') but has no run(payload, ctx) method. ` +
            `Potential fix: implement JobHandler and add "async run(payload, ctx) { … }".`,
        );
      }
      const job = this.registry.register(metatype as Type<JobHandler>, wrapper);
      const own = job.declared.interceptors ?? [];
      job.interceptors = [
        ...sharedProviders,
        ...interceptorProviders(`@Job('${job.name}') on ${metatype.name}`, own, byClass),
      ];
      found.add(metatype);
    }
    for (const cls of DECORATED_JOB_CLASSES) {
      const name = getJobMetadata(cls)!.name;
      const mode = this.options.unregisteredJobs ?? 'error';
      if (found.has(cls) || this.registry.isExternal(name) || mode === 'ignore') continue;
      const message =
        `${cls.name} is marked @Job('${name}') but is not registered as a provider in any module, so nothing would run it. ` +
        `Potential fix: add ${cls.name} to the "providers" of a module, or list '${name}' in JobsModule's "externalJobs" when another service runs it` +
        ` (in a test module that registers only some handlers: unregisteredJobs: 'warn').`;
      if (mode === 'warn') this.logger.warn(message);
      else throw new JobsError(message);
    }
    const encrypted = this.registry.all().filter((j) => j.options.encrypted);
    if (encrypted.length && !this.cipher.enabled) {
      const j = encrypted[0]!;
      throw new JobsError(
        `@Job('${j.name}') on class ${j.metatype.name} is { encrypted: true }, but JobsModule has no "encryption" keys, so its payloads would be stored in plain text. ` +
          `Potential fix: JobsModule.forRoot({ encryption: { keys: { '2026-12': process.env.JOBS_KEY }, current: '2026-12' } }).`,
      );
    }
    this.logger.log(`Found ${found.size} job handler(s): ${this.registry.names().join(', ') || '(none)'}`);
  }
}
