export { JobsModule } from './jobs.module.js';
export { JobsErrorFilter } from './admin/jobs-error.filter.js';
export type {
  JobsModuleOptions,
  JobsModuleRootOptions,
  JobsModuleAsyncOptions,
  JobsOptionsFactory,
  JobsConnectionOptions,
  JobsMonitoringOptions,
  UnhandledJobsOptions,
} from './jobs-options.interface.js';
export { JOBS_DATA_SOURCE } from './jobs-options.interface.js';
export { Job, type JobOptions } from './discovery/job.decorator.js';
export { OnJobEvent } from './discovery/on-job-event.decorator.js';
export type { JobDefaults, ExternalJobs } from './discovery/job-registry.js';
export { JobQueue, type EnqueueItem, type EnqueueResult, type JobRef } from './queue/job-queue.service.js';
export {
  JobQueues,
  type GroupLimitsChange,
  type LimitsChange,
  type SetLimitsOptions,
} from './queue/job-queues.service.js';
export type { EnqueueOptions, ParentRef, DependencyOn, GetJobOptions, RetryJobOptions } from './queue/queue-options.js';
export type { WaitForJobOptions } from './queue/queue-options.js';
export type { GetEventOptions, SignalOptions } from './queue/durable-options.js';
export { BatchBuilder, BatchDraft } from './queue/batch-builder.service.js';
export { ChainDraft, FlowDraft, type FlowEdge, type FlowStepOptions } from './queue/flow-drafts.js';
export type { StepOptions } from './queue/workflow-writer.js';
export type { BatchMember, BatchGraph } from './storage/workflows/workflow-storage.interface.js';
export type { WorkerOptions, WorkerQueueOptions } from './worker/worker-options.js';
export { RetentionService } from './worker/retention.service.js';
export type { RetentionOptions } from './worker/retention-options.js';
export { JobsMonitor } from './monitoring/jobs-monitor.service.js';
export { JobsAdmin, MAX_DETAIL_CHILDREN } from './admin/jobs-admin.service.js';
export { BULK_CHUNK } from './admin/bulk-actions.js';
export { Cron, type CronOptions } from './scheduler/cron.decorator.js';
export { RecurringSchedules, type DynamicScheduleOptions } from './scheduler/recurring-schedules.service.js';
export type { SchedulerOptions } from './scheduler/scheduler-options.js';
export { createJobsMigrations } from './storage/migrations/schema-migrator.js';
export {
  startEmbeddedPostgres,
  type EmbeddedPostgresOptions,
  type EmbeddedPostgresHandle,
} from './storage/embedded/embedded-postgres.js';
export {
  Clock,
  SystemClock,
  JobEvents,
  type AttemptEnded,
  JOB_EVENT_NAMES,
  type JobEvent,
  type JobEventName,
  type JobEventJob,
  type JobEventDetails,
  type JobEventFilter,
  type JobEventListenerFilter,
  type JobEventListener,
  type StallReason,
  JobsError,
  JobsDatabaseError,
  JobsNotFoundError,
  PermanentJobError,
  ChildJobFailedError,
  JobTimeoutError,
  JobCancelledError,
  LeaseLostError,
  DeadlineExceededError,
  SnoozeJob,
  EncryptionKeyMissingError,
  EncryptedValueError,
  type EncryptionOptions,
  type EncryptionStatus,
  type ReencryptResult,
  type QueueOptions,
  type RateLimit,
  type RateLimitInfo,
  type QueueInfo,
  type LimitInfo,
  type GroupLimitsInfo,
  type LimitSource,
  type UniqueOptions,
  type JobUniqueOptions,
  type JobInterceptor,
  type JobInterceptorContext,
  type JobInterceptorClass,
  type JobCallHandler,
  type UniqueWhile,
  DEFAULT_QUEUE,
  type BackoffOptions,
  type BackoffFunction,
  type JobHandler,
  type JobContext,
  type JobContextData,
  type JobContextSource,
  MAX_CONTEXT_BYTES,
  type JobLogger,
  type PayloadOf,
  type JobInfo,
  type FailureHookInfo,
  type FailureHookRetries,
  type KeepOptions,
  type BatchInfo,
  type BatchState,
  type JobClass,
  type JobExecution,
  type JobExecutionPage,
  type ExecutionPageOptions,
  LATEST_EXECUTIONS,
  DEFAULT_MAX_ERROR_BYTES,
  type JobStep,
  type JobStepOptions,
  type PlacementOptions,
  MAX_STEP_NAME_LENGTH,
  type JobState,
  type ExecutionState,
  type SerializedError,
  type ScheduleInfo,
  type ScheduleSource,
  type CatchUpMode,
  type OverlapMode,
  type JobCounts,
  type StateCounts,
  type WorkerInfo,
  type QueueLag,
  type UnhandledJob,
  type ServiceInfo,
  type ServiceBuildInfo,
  type ForgottenService,
  type JobSummary,
  type JobListFilter,
  type JobPage,
  JOB_LIST_STATES,
  RETRY_STATES,
  CANCEL_STATES,
  type JobListState,
  type JobSearch,
  type JobSearchPage,
  type JobDetail,
  type InvokedJob,
  type DependencyEdge,
  type EdgeEnd,
  type BulkFilter,
  type RetryState,
  type CancelState,
  type RetryAllFilter,
  type CancelAllFilter,
  type RetryAllResult,
  type CancelAllResult,
  type PurgeOptions,
  type PurgeResult,
  type BatchSummary,
  type BatchListFilter,
  type BatchPage,
  type Throughput,
  type ThroughputPoint,
  type RunNowResult,
  type DeletedJob,
} from './model/index.js';
