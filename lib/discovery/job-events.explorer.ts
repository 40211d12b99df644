import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit, type Type } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { JobEvents, JobsError } from '../model/index.js';
import { getJobEventListeners, hasJobEventListeners } from './on-job-event.decorator.js';

/**
 * Subscribes the `@OnJobEvent` methods of every module's providers to the
 * JobEvents hub. Only classes marked by the decorator have their methods
 * scanned; other providers are not touched.
 */
@Injectable()
export class JobEventsExplorer implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('JobEvents');
  private readonly unsubscribe: Array<() => void> = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly events: JobEvents,
  ) {}

  onModuleInit(): void {
    const found: string[] = [];
    for (const wrapper of this.discovery.getProviders()) {
      const metatype = wrapper.metatype as Type | undefined;
      // Factory and value providers have no class of their own to read.
      if (!metatype || wrapper.inject || !hasJobEventListeners(metatype)) continue;
      if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) {
        throw new JobsError(
          `${metatype.name} has @OnJobEvent methods but is request-scoped or transient (itself or through a dependency), so there is no one instance to call. ` +
            `Potential fix: move the listeners to a singleton provider, which may resolve scoped ones through ModuleRef.`,
        );
      }
      const instance = wrapper.instance as Record<string, (event: unknown) => unknown>;
      for (const method of this.scanner.getAllMethodNames(metatype.prototype as object)) {
        for (const { events, filter } of getJobEventListeners(
          (metatype.prototype as Record<string, unknown>)[method],
        )) {
          const label = `${metatype.name}.${method}`;
          this.unsubscribe.push(this.events.on(events, (event) => instance[method]!(event), { ...filter, label }));
          found.push(label);
        }
      }
    }
    if (found.length) this.logger.log(`Job event listener(s): ${found.join(', ')}`);
  }

  /** Not at module destroy: the worker stops after it, and the attempts it ends then still raise events. */
  onApplicationShutdown(): void {
    for (const off of this.unsubscribe.splice(0)) off();
  }
}
