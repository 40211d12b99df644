import type { Provider } from '@nestjs/common';
import { JOBS_MODULE_OPTIONS, type JobsModuleOptions } from './jobs-options.interface.js';
import { checkMaxErrorBytes, JobCipher } from './model/index.js';
import { ADMIN_STORAGE } from './storage/admin/admin-storage.interface.js';
import { PostgresAdminStorage } from './storage/admin/postgres-admin-storage.js';
import { JobsConnection } from './storage/connection/jobs-connection.js';
import { ReplicaConnection } from './storage/connection/replica-connection.js';
import { CLAIM_STORAGE } from './storage/jobs/claim/claim-storage.interface.js';
import { PostgresClaimStorage } from './storage/jobs/claim/postgres-claim-storage.js';
import { JOB_CONTROL_STORAGE } from './storage/jobs/control/job-control-storage.interface.js';
import { PostgresJobControlStorage } from './storage/jobs/control/postgres-job-control-storage.js';
import { ENQUEUE_STORAGE } from './storage/jobs/enqueue/enqueue-storage.interface.js';
import { PostgresEnqueueStorage } from './storage/jobs/enqueue/postgres-enqueue-storage.js';
import { MAINTENANCE_STORAGE } from './storage/jobs/maintenance/maintenance-storage.interface.js';
import { PostgresMaintenanceStorage } from './storage/jobs/maintenance/postgres-maintenance-storage.js';
import { OUTCOME_STORAGE } from './storage/jobs/outcomes/outcome-storage.interface.js';
import { PostgresOutcomeStorage } from './storage/jobs/outcomes/postgres-outcome-storage.js';
import { PostgresStepStorage } from './storage/jobs/postgres-step-storage.js';
import { STEP_STORAGE } from './storage/jobs/step-storage.interface.js';
import { WorkerConnections } from './storage/jobs/worker-connections.js';
import { MONITORING_READS } from './storage/monitoring/monitoring-reads.interface.js';
import { monitoringReads, type OperatorStorages } from './storage/monitoring/postgres-monitoring-reads.js';
import { MONITORING_STORAGE } from './storage/monitoring/monitoring-storage.interface.js';
import { PostgresMonitoringStorage } from './storage/monitoring/postgres-monitoring-storage.js';
import { PostgresSignalStorage } from './storage/jobs/signals/postgres-signal-storage.js';
import { SIGNAL_STORAGE } from './storage/jobs/signals/signal-storage.interface.js';
import { JobNotifications } from './storage/notifications/job-notifications.interface.js';
import { NotificationListener } from './storage/notifications/notification-listener.js';
import { PostgresQueueStorage } from './storage/queues/postgres-queue-storage.js';
import { QUEUE_STORAGE } from './storage/queues/queue-storage.interface.js';
import { PostgresScheduleStorage } from './storage/schedules/postgres-schedule-storage.js';
import { PostgresServiceStorage } from './storage/services/postgres-service-storage.js';
import { SERVICE_STORAGE } from './storage/services/service-storage.interface.js';
import { SCHEDULE_STORAGE } from './storage/schedules/schedule-storage.interface.js';
import { StorageContext } from './storage/sql/storage-context.js';
import { PostgresWorkflowStorage } from './storage/workflows/postgres-workflow-storage.js';
import { WORKFLOW_STORAGE } from './storage/workflows/workflow-storage.interface.js';

/** Claims, outcomes and step records commit without waiting for the WAL flush unless the app asks. */
const relaxedCommit = (o: JobsModuleOptions) => !(o.worker?.synchronousCommit ?? false);

/** A storage class made from the StorageContext alone, under the token the layers above inject. */
function fromContext<T>(token: symbol | (abstract new (...args: never[]) => unknown), make: (c: StorageContext) => T) {
  return { provide: token, inject: [StorageContext], useFactory: make };
}

/**
 * The storage of one JobsModule: every concern's PostgreSQL implementation,
 * each under the token of its contract (`*.interface.ts`), on one
 * StorageContext (the module's DataSource and schema).
 */
export function storageProviders(): Provider[] {
  return [
    {
      provide: StorageContext,
      inject: [JobsConnection, JobCipher, JOBS_MODULE_OPTIONS],
      useFactory: (c: JobsConnection, cipher: JobCipher, o: JobsModuleOptions) =>
        new StorageContext(c.dataSource, c.schema, c.timeouts, cipher, checkMaxErrorBytes(o.maxErrorBytes), c.plan),
    },
    {
      provide: WorkerConnections,
      inject: [StorageContext, JOBS_MODULE_OPTIONS],
      useFactory: (c: StorageContext, o: JobsModuleOptions) => new WorkerConnections(c, relaxedCommit(o)),
    },
    fromContext(PostgresEnqueueStorage, (c) => new PostgresEnqueueStorage(c)),
    { provide: ENQUEUE_STORAGE, useExisting: PostgresEnqueueStorage },
    {
      provide: PostgresClaimStorage,
      inject: [StorageContext, WorkerConnections],
      useFactory: (c: StorageContext, w: WorkerConnections) => new PostgresClaimStorage(c, w),
    },
    { provide: CLAIM_STORAGE, useExisting: PostgresClaimStorage },
    {
      provide: PostgresOutcomeStorage,
      inject: [StorageContext, WorkerConnections],
      useFactory: (c: StorageContext, w: WorkerConnections) => new PostgresOutcomeStorage(c, w),
    },
    { provide: OUTCOME_STORAGE, useExisting: PostgresOutcomeStorage },
    {
      provide: MAINTENANCE_STORAGE,
      inject: [StorageContext, JobsConnection, WorkerConnections, JobNotifications],
      useFactory: (c: StorageContext, connection: JobsConnection, w: WorkerConnections, n: JobNotifications) =>
        new PostgresMaintenanceStorage(c, () => ({
          open: connection.openSessions + w.openSessions + (n.connected ? 1 : 0),
          max: c.plan.budget.max,
        })),
    },
    fromContext(JOB_CONTROL_STORAGE, (c) => new PostgresJobControlStorage(c)),
    {
      provide: STEP_STORAGE,
      inject: [StorageContext, JobsConnection, WorkerConnections],
      useFactory: (c: StorageContext, connection: JobsConnection, w: WorkerConnections) =>
        new PostgresStepStorage(c, connection.owned ? 'own' : 'shared', w),
    },
    {
      provide: SIGNAL_STORAGE,
      inject: [StorageContext, WorkerConnections],
      useFactory: (c: StorageContext, w: WorkerConnections) => new PostgresSignalStorage(c, w),
    },
    {
      provide: WORKFLOW_STORAGE,
      inject: [StorageContext, PostgresEnqueueStorage, PostgresOutcomeStorage],
      useFactory: (c: StorageContext, enqueue: PostgresEnqueueStorage, outcomes: PostgresOutcomeStorage) =>
        new PostgresWorkflowStorage(c, enqueue, outcomes),
    },
    fromContext(SCHEDULE_STORAGE, (c) => new PostgresScheduleStorage(c)),
    fromContext(SERVICE_STORAGE, (c) => new PostgresServiceStorage(c)),
    fromContext(MONITORING_STORAGE, (c) => new PostgresMonitoringStorage(c)),
    {
      provide: MONITORING_READS,
      inject: [
        StorageContext,
        ReplicaConnection,
        PostgresEnqueueStorage,
        PostgresOutcomeStorage,
        MONITORING_STORAGE,
        ADMIN_STORAGE,
        JOB_CONTROL_STORAGE,
        WORKFLOW_STORAGE,
        QUEUE_STORAGE,
        SCHEDULE_STORAGE,
      ],
      useFactory: (
        c: StorageContext,
        replica: ReplicaConnection,
        enqueue: PostgresEnqueueStorage,
        outcomes: PostgresOutcomeStorage,
        monitoring: OperatorStorages['monitoring'],
        admin: OperatorStorages['admin'],
        jobs: OperatorStorages['jobs'],
        batches: OperatorStorages['batches'],
        queues: OperatorStorages['queues'],
        schedules: OperatorStorages['schedules'],
      ) =>
        monitoringReads(
          { monitoring, admin, jobs, batches, queues, schedules },
          replica.dataSource && { context: c.on(replica.dataSource), primary: c, writes: { enqueue, outcomes } },
        ),
    },
    fromContext(QUEUE_STORAGE, (c) => new PostgresQueueStorage(c)),
    fromContext(ADMIN_STORAGE, (c) => new PostgresAdminStorage(c)),
    fromContext(JobNotifications, (c) => new NotificationListener(c)),
  ];
}
