import { Injectable, type Type } from '@nestjs/common';
import { JobsError, type JobOptions } from '../model/index.js';

export type { JobOptions };

export interface JobMetadata {
  name: string;
  options: JobOptions;
}

export const JOB_METADATA = 'nestjs-durable-jobs:job';
/** Nest's own marker for @Injectable(); read, never written, to respect an explicit scope. */
const INJECTABLE_WATERMARK = '__injectable__';

/**
 * Every class that carried `@Job` in this process, so the start can tell a
 * handler that was decorated but never registered as a provider.
 */
export const DECORATED_JOB_CLASSES = new Set<Type>();

/** Marks a provider class as the handler of the job `name`. */
export function Job(name: string, options: JobOptions = {}): ClassDecorator {
  return (target) => {
    const cls = target as unknown as Type;
    if (typeof name !== 'string' || name.trim() === '') {
      throw new JobsError(
        `@Job() on class ${cls.name} needs a non-empty name. Potential fix: @Job('send-receipt') — the name is what is stored in the database, so keep it stable across deploys.`,
      );
    }
    validateJobOptions(`@Job('${name}') on ${cls.name}`, options);
    Reflect.defineMetadata(JOB_METADATA, { name, options } satisfies JobMetadata, cls);
    DECORATED_JOB_CLASSES.add(cls);
    // Keep an explicit @Injectable({ scope }) applied below us intact.
    if (!Reflect.hasOwnMetadata(INJECTABLE_WATERMARK, cls)) Injectable()(cls);
  };
}

export function getJobMetadata(target: unknown): JobMetadata | undefined {
  if (typeof target !== 'function') return undefined;
  return Reflect.getOwnMetadata(JOB_METADATA, target) as JobMetadata | undefined;
}

/** Checks the numbers a job runs with, naming where they came from. */
export function validateJobOptions(where: string, o: JobOptions & { delay?: unknown }): void {
  const positiveInt = (field: string, v: unknown, min: number) => {
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < min)) {
      throw new JobsError(
        `${where}: "${field}" must be an integer >= ${min}, got ${String(v)}. Potential fix: pass a whole number such as ${Math.max(min, 1) * (field === 'timeout' ? 30_000 : 5)}.`,
      );
    }
  };
  positiveInt('maxAttempts', o.maxAttempts, 1);
  positiveInt('timeout', o.timeout, 1);
  if (o.priority !== undefined && (typeof o.priority !== 'number' || !Number.isInteger(o.priority))) {
    throw new JobsError(
      `${where}: "priority" must be an integer, got ${String(o.priority)}. Potential fix: priority: 10 (higher runs first).`,
    );
  }
  if (o.queue !== undefined && (typeof o.queue !== 'string' || o.queue.trim() === '')) {
    throw new JobsError(`${where}: "queue" must be a non-empty string. Potential fix: queue: 'emails'.`);
  }
  const b = o.backoff;
  if (b !== undefined && typeof b !== 'function') {
    if (!b || (b.type !== 'fixed' && b.type !== 'exponential') || typeof b.delay !== 'number' || b.delay < 0) {
      throw new JobsError(
        `${where}: "backoff" must be { type: 'fixed' | 'exponential', delay: ms >= 0 } or a function (attempt, error) => ms. Potential fix: backoff: { type: 'exponential', delay: 1000, jitter: true }.`,
      );
    }
  }
}
