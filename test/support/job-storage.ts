import type { INestApplicationContext } from '@nestjs/common';
import { CLAIM_STORAGE, type ClaimStorage } from '../../lib/storage/jobs/claim/claim-storage.interface.js';
import {
  MAINTENANCE_STORAGE,
  type MaintenanceStorage,
} from '../../lib/storage/jobs/maintenance/maintenance-storage.interface.js';
import { OUTCOME_STORAGE, type OutcomeStorage } from '../../lib/storage/jobs/outcomes/outcome-storage.interface.js';

/** The job storage an app's worker uses, by concern: the very instances it holds, so a test may wrap their methods. */
export interface WorkerStorage {
  claims: ClaimStorage;
  outcomes: OutcomeStorage;
  maintenance: MaintenanceStorage;
}

export function workerStorage(app: Pick<INestApplicationContext, 'get'>): WorkerStorage {
  return {
    claims: app.get<ClaimStorage>(CLAIM_STORAGE),
    outcomes: app.get<OutcomeStorage>(OUTCOME_STORAGE),
    maintenance: app.get<MaintenanceStorage>(MAINTENANCE_STORAGE),
  };
}
