import { PostgresAdminStorage } from '../admin/postgres-admin-storage.js';
import { PostgresJobControlStorage } from '../jobs/control/postgres-job-control-storage.js';
import type { PostgresEnqueueStorage } from '../jobs/enqueue/postgres-enqueue-storage.js';
import type { PostgresOutcomeStorage } from '../jobs/outcomes/postgres-outcome-storage.js';
import { PostgresQueueStorage } from '../queues/postgres-queue-storage.js';
import { PostgresScheduleStorage } from '../schedules/postgres-schedule-storage.js';
import type { StorageContext } from '../storage-context.js';
import { PostgresWorkflowStorage } from '../workflows/postgres-workflow-storage.js';
import type { MonitoringReads } from './monitoring-reads.interface.js';
import { PostgresMonitoringStorage } from './postgres-monitoring-storage.js';
import { measureReplicaLag } from './replica-lag.js';

/** The operators' read storages on the replica's context (or the primary's own, when there is no replica). */
export function monitoringReads(
  primary: StorageContext,
  replica: StorageContext | null,
  /** The workflow storage's write partners; its read methods, the only ones reachable here, never call them. */
  writes: { enqueue: PostgresEnqueueStorage; outcomes: PostgresOutcomeStorage },
): MonitoringReads {
  const c = replica ?? primary;
  return {
    source: replica ? 'replica' : 'primary',
    monitoring: new PostgresMonitoringStorage(c),
    admin: new PostgresAdminStorage(c),
    jobs: new PostgresJobControlStorage(c),
    batches: new PostgresWorkflowStorage(c, writes.enqueue, writes.outcomes),
    queues: new PostgresQueueStorage(c),
    schedules: new PostgresScheduleStorage(c),
    lag: async () => (replica ? measureReplicaLag(primary.executor, replica.executor) : null),
  };
}
