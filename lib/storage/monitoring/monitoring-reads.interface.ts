import type { ReplicaLag } from '../../model/index.js';
import type { AdminStorage } from '../admin/admin-storage.interface.js';
import type { JobControlStorage } from '../jobs/control/job-control-storage.interface.js';
import type { QueueStorage } from '../queues/queue-storage.interface.js';
import type { ScheduleStorage } from '../schedules/schedule-storage.interface.js';
import type { WorkflowStorage } from '../workflows/workflow-storage.interface.js';
import type { MonitoringStorage } from './monitoring-storage.interface.js';

/**
 * What operators read (JobsMonitor, JobsAdmin's reads, the dashboard's
 * and the CLI's views), on the monitoring replica when one is configured
 * and on the primary otherwise. Only reads: every action goes through the
 * primary's storage, which checks it against the rows as they are there.
 */
export interface MonitoringReads {
  /** Where these reads go. */
  readonly source: 'primary' | 'replica';
  readonly monitoring: MonitoringStorage;
  readonly admin: Pick<AdminStorage, 'searchJobs' | 'jobEdges' | 'listBatches' | 'throughput'>;
  readonly jobs: Pick<JobControlStorage, 'getJob' | 'executions'>;
  readonly batches: Pick<WorkflowStorage, 'batchStatus' | 'batchMembers' | 'batchGraph'>;
  readonly queues: Pick<QueueStorage, 'configs' | 'groupLimits'>;
  readonly schedules: Pick<ScheduleStorage, 'list'>;
  /** How far the replica is behind the primary; null when reads go to the primary. */
  lag(): Promise<ReplicaLag | null>;
}

export const MONITORING_READS = Symbol('MONITORING_READS');
