import type { JobDefaults, JobInterceptorClass } from '../model/index.js';
import type { ExternalJobs } from './job-registry.js';

export interface JobsDiscoveryOptions {
  defaults?: JobDefaults;
  /** `keep.succeeded` of job types that leave it out: false when retention's `succeeded` is 0. */
  keepSucceeded?: boolean;
  externalJobs?: ExternalJobs;
  unregisteredJobs?: 'error' | 'warn' | 'ignore';
  /** Interceptors around every job's attempts, outside each job's own. */
  interceptors?: readonly JobInterceptorClass[];
}

export const JOBS_DISCOVERY_OPTIONS = Symbol('JOBS_DISCOVERY_OPTIONS');
