import type { Logger } from '@nestjs/common';
import type { JobRegistry } from '../../discovery/job-registry.js';
import type { ClaimedJob, Clock } from '../../model/index.js';
import type { ClaimStorage } from '../../storage/jobs/claim/claim-storage.interface.js';
import type { OutcomeStorage } from '../../storage/jobs/outcomes/outcome-storage.interface.js';
import type { QueueStorage } from '../../storage/queues/queue-storage.interface.js';
import type { ResolvedWorkerOptions } from '../worker-options.js';

/** What a Claimer claims with and for. */
export interface ClaimerDeps {
  /** The worker id its claims carry. */
  workerId: string;
  claims: ClaimStorage;
  /** Where jobs that never started are handed back. */
  outcomes: OutcomeStorage;
  queueStorage: QueueStorage;
  /** The job names its passes ask for, and the queues of their handlers. */
  registry: JobRegistry;
  clock: Clock;
  options: ResolvedWorkerOptions;
  logger: Logger;
  /** Starts an attempt of a claimed job; it counts as running until attemptEnded. */
  runAttempt: (job: ClaimedJob) => void;
  /** Jobs a claim just handed this worker, before they join the unstarted ones (see supersede). */
  claimedAgain?: (jobs: readonly ClaimedJob[]) => void;
}
