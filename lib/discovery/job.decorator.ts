import { Injectable, type Type } from '@nestjs/common';
import {
  checkInteger,
  checkDeclaredKeys,
  checkLimits,
  checkName,
  checkJobUnique,
  checkOptions,
  describeValue,
  INT4_MAX,
  JOB_OPTIONS_SHAPE,
  JobsError,
  type BackoffOptions,
  type FailureHookRetries,
  type JobOptions,
} from '../model/index.js';
import { checkInterceptorClasses } from './job-interceptors.js';

export type { JobOptions };

interface JobMetadata {
  name: string;
  options: JobOptions;
}

const JOB_METADATA = 'nestjs-durable-jobs:job';
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
    const where = `@Job() on class ${cls.name}`;
    // The name is stored with every job and matched by every claim: it must be one PostgreSQL can store.
    checkName(where, 'name', name, 'send-receipt');
    const named = `@Job('${name}') on class ${cls.name}`;
    checkOptions(named, options, "@Job('send-receipt', { queue: 'emails' })", JOB_OPTIONS_SHAPE);
    validateJobOptions(named, options);
    checkJobUnique(named, options.unique);
    checkDeclaredKeys(named, options);
    checkInterceptorClasses(named, options.interceptors);
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

/** The most attempts a job may have: far beyond any sane retry policy, and far from int4's limit after retry(). */
const MAX_ATTEMPTS = 1_000_000;

/** Checks the options a job runs with, naming where they came from. */
export function validateJobOptions(where: string, o: JobOptions): void {
  if (o.maxAttempts !== undefined) checkInteger(where, 'maxAttempts', o.maxAttempts, 1, MAX_ATTEMPTS, 5);
  // An attempt's timer is a setTimeout, which holds at most 2^31 - 1 ms (about 24.8 days).
  if (o.timeout !== undefined) checkInteger(where, 'timeout', o.timeout, 1, INT4_MAX, 30_000);
  if (o.priority !== undefined) checkInteger(where, 'priority', o.priority, -INT4_MAX, INT4_MAX, 10);
  if (o.queue !== undefined) checkName(where, 'queue', o.queue, 'emails');
  // A string names a keyed limit of JobsModule's "rateLimits"; the start checks that it is declared.
  if (typeof o.rateLimit === 'string') checkName(where, 'rateLimit', o.rateLimit, 'partner-api');
  checkLimits(where, {
    concurrency: o.concurrency,
    rateLimit: typeof o.rateLimit === 'string' ? undefined : o.rateLimit,
  });
  if (o.encrypted !== undefined && typeof o.encrypted !== 'boolean') {
    throw new JobsError(
      `${where}: "encrypted" must be true or false, got ${describeValue(o.encrypted)}. Potential fix: encrypted: true.`,
    );
  }
  checkBackoff(where, 'backoff', o.backoff);
  validateFailureHookRetries(where, o.onFailureRetries);
  if (o.keep !== undefined) {
    if (typeof o.keep !== 'object' || o.keep === null || Array.isArray(o.keep)) {
      throw new JobsError(
        `${where}: "keep" must be an object { succeeded }, got ${describeValue(o.keep)}. Potential fix: keep: { succeeded: false }.`,
      );
    }
    if (o.keep.succeeded !== undefined && typeof o.keep.succeeded !== 'boolean') {
      throw new JobsError(
        `${where}: "keep.succeeded" must be true or false, got ${describeValue(o.keep.succeeded)}. ` +
          `Potential fix: keep: { succeeded: false } to delete each job as it succeeds.`,
      );
    }
  }
}

/** Checks `onFailureRetries` (of `@Job`, an external job or JobsModule's `defaults`), naming where it came from. */
export function validateFailureHookRetries(where: string, retries: FailureHookRetries | undefined): void {
  if (retries === undefined) return;
  if (retries === null || typeof retries !== 'object') {
    throw new JobsError(
      `${where}: "onFailureRetries" must be an object { attempts, backoff }, got ${describeValue(retries)}. Potential fix: onFailureRetries: { attempts: 5, backoff: { type: 'exponential', delay: 1000 } }.`,
    );
  }
  if (retries.attempts !== undefined) {
    checkInteger(where, 'onFailureRetries.attempts', retries.attempts, 1, MAX_ATTEMPTS, 5);
  }
  checkBackoff(where, 'onFailureRetries.backoff', retries.backoff);
}

function checkBackoff(where: string, field: string, b: BackoffOptions | undefined): void {
  if (b !== undefined && typeof b !== 'function') {
    const ok =
      b !== null &&
      typeof b === 'object' &&
      (b.type === 'fixed' || b.type === 'exponential') &&
      typeof b.delay === 'number' &&
      Number.isFinite(b.delay) &&
      b.delay >= 0 &&
      (b.type !== 'exponential' || b.maxDelay === undefined || (typeof b.maxDelay === 'number' && b.maxDelay >= 0));
    if (ok && b.type === 'fixed' && 'maxDelay' in b) {
      // A fixed delay never grows, so a cap on it would be ignored.
      throw new JobsError(
        `${where}: "${field}.maxDelay" caps an exponential backoff; a fixed one never grows. Potential fix: ${field}: { type: 'exponential', delay, maxDelay }, or leave maxDelay out.`,
      );
    }
    if (!ok) {
      throw new JobsError(
        `${where}: "${field}" must be { type: 'fixed' | 'exponential', delay: ms >= 0 } or a function (attempt, error) => ms, got ${describeValue(b)}. Potential fix: ${field}: { type: 'exponential', delay: 1000, jitter: true }.`,
      );
    }
  }
}
