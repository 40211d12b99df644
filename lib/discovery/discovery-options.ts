import type { JobDefaults } from '../model/index.js';
import type { ExternalJobs } from './job-registry.js';

export interface JobsDiscoveryOptions {
  defaults?: JobDefaults;
  externalJobs?: ExternalJobs;
  unregisteredJobs?: 'error' | 'warn' | 'ignore';
}

export const JOBS_DISCOVERY_OPTIONS = Symbol('JOBS_DISCOVERY_OPTIONS');
