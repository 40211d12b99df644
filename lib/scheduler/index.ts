export * from './cron.decorator.js';
export * from './recurring-schedules.service.js';
export * from './schedule-runner.service.js';
export * from './schedules.explorer.js';
export * from './scheduler-options.js';
