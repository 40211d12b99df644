import type { JobDefaults } from './job-registry.js';

export interface JobsDiscoveryOptions {
  defaults?: JobDefaults;
  externalJobs?: readonly string[];
  unregisteredJobs?: 'error' | 'warn' | 'ignore';
}

export const JOBS_DISCOVERY_OPTIONS = Symbol('JOBS_DISCOVERY_OPTIONS');
