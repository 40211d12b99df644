import {
  checkJobEventFilter,
  checkJobEventNames,
  JobsError,
  type JobEventFilter,
  type JobEventName,
} from '../model/index.js';

interface JobEventListenerMetadata {
  events: JobEventName[];
  filter: JobEventFilter;
}

const LISTENERS = 'nestjs-durable-jobs:on-job-event';
/** On the class, so the explorer scans the methods of marked classes only. */
const HAS_LISTENERS = 'nestjs-durable-jobs:has-job-event-listeners';

/**
 * Calls the method with a `JobEvent` whenever an attempt that ran on this
 * instance ends as `event` (one name or several), for the jobs `filter`
 * picks. Works on any singleton provider, found at start like `@Job`.
 *
 * ```ts
 * @OnJobEvent('failed', { queue: 'emails' })
 * alert(e: JobEvent<'failed'>) { … }
 * ```
 */
export function OnJobEvent<E extends JobEventName>(
  event: E | readonly E[],
  filter: JobEventFilter = {},
): MethodDecorator {
  return (target, key, descriptor) => {
    if (typeof target === 'function') {
      throw new JobsError(
        `@OnJobEvent() on static ${target.name}.${String(key)}: listeners are instance methods of a provider. Potential fix: drop "static".`,
      );
    }
    const where = `@OnJobEvent() on ${target.constructor.name}.${String(key)}`;
    const events = checkJobEventNames(where, event);
    checkJobEventFilter(where, filter);
    if (typeof descriptor.value !== 'function') {
      throw new JobsError(`${where}: it marks a method, and this is not one. Potential fix: put it on a method.`);
    }
    const method = descriptor.value as object;
    const listeners = (Reflect.getOwnMetadata(LISTENERS, method) as JobEventListenerMetadata[] | undefined) ?? [];
    Reflect.defineMetadata(LISTENERS, [...listeners, { events, filter: { ...filter } }], method);
    Reflect.defineMetadata(HAS_LISTENERS, true, target.constructor);
  };
}

/** Whether the class or one it extends has `@OnJobEvent` methods. */
export function hasJobEventListeners(cls: unknown): boolean {
  return typeof cls === 'function' && Reflect.getMetadata(HAS_LISTENERS, cls) === true;
}

export function getJobEventListeners(method: unknown): JobEventListenerMetadata[] {
  if (typeof method !== 'function') return [];
  return (Reflect.getOwnMetadata(LISTENERS, method) as JobEventListenerMetadata[] | undefined) ?? [];
}
