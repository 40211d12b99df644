export * from './job.decorator.js';
export * from './job-registry.js';
export * from './jobs.explorer.js';
export * from './discovery-options.js';
