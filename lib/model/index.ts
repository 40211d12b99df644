export * from './job-state.js';
export * from './errors.js';
export * from './backoff.js';
export * from './clock.js';
export * from './records.js';
export { uuidv7 } from './uuid.js';
export * from './job-context.js';
export * from './schedule.js';
export * from './payload.js';
