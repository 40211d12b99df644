import { PostgresAdminStorage } from '../admin/postgres-admin-storage.js';
import { PostgresJobControlStorage } from '../jobs/control/postgres-job-control-storage.js';
import type { PostgresEnqueueStorage } from '../jobs/enqueue/postgres-enqueue-storage.js';
import type { PostgresOutcomeStorage } from '../jobs/outcomes/postgres-outcome-storage.js';
import { PostgresQueueStorage } from '../queues/postgres-queue-storage.js';
import { PostgresScheduleStorage } from '../schedules/postgres-schedule-storage.js';
import type { StorageContext } from '../sql/storage-context.js';
import { PostgresWorkflowStorage } from '../workflows/postgres-workflow-storage.js';
import type { MonitoringReads } from './monitoring-reads.interface.js';
import { PostgresMonitoringStorage } from './postgres-monitoring-storage.js';
import { measureReplicaLag } from './replica-lag.js';

/** The storages operators read, as the primary's module has them. */
export type OperatorStorages = Omit<MonitoringReads, 'source' | 'lag'>;

/**
 * Operators' reads: the primary's own storages when there is no replica,
 * otherwise the same storages built on the replica's context.
 */
export function monitoringReads(
  primary: OperatorStorages,
  replica: {
    context: StorageContext;
    /** The primary's context: where the lag's other end is read. */
    primary: StorageContext;
    /** The workflow storage's write partners; its read methods, the only ones reachable here, never call them. */
    writes: { enqueue: PostgresEnqueueStorage; outcomes: PostgresOutcomeStorage };
  } | null,
): MonitoringReads {
  if (!replica) return { source: 'primary', ...primary, lag: async () => null };
  const c = replica.context;
  return {
    source: 'replica',
    monitoring: new PostgresMonitoringStorage(c),
    admin: new PostgresAdminStorage(c),
    jobs: new PostgresJobControlStorage(c),
    batches: new PostgresWorkflowStorage(c, replica.writes.enqueue, replica.writes.outcomes),
    queues: new PostgresQueueStorage(c),
    schedules: new PostgresScheduleStorage(c),
    lag: () => measureReplicaLag(replica.primary.executor, c.executor),
  };
}
