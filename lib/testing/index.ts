export { ManualClock } from './manual-clock.js';
export { JobsTestingModule } from './jobs-testing.module.js';
export type { JobsTestingOptions, JobsTestingAsyncOptions, JobsTestingMode } from './jobs-testing-options.interface.js';
export { JobsTester, type DrainOptions, type HistoryFilter } from './jobs-tester.service.js';
export type { AttemptReport } from './job-drainer.service.js';
export type { WaitForOptions } from './job-waiter.js';
export type { EnqueuedFilter, EnqueuedExpectation } from './enqueued-jobs.js';
export { JobsAssertionError } from './jobs-assertion.error.js';
