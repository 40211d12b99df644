import { AWAITED_JOB_ENDED } from './awaited-job-ended.routine.js';
import { CLAIM_CONTROLLED } from './claim-controlled.routine.js';
import { JOB_DELETED } from './job-deleted.routine.js';
import { RELEASE_CHILDREN } from './release-children.routine.js';
import { REOPEN_JOB } from './reopen-job.routine.js';
import type { Routine } from './routine.js';
import { SETTLE_JOBS } from './settle-jobs.routine.js';

/** Every routine this build calls, callees before their callers. */
export const ROUTINES: readonly Routine[] = [
  RELEASE_CHILDREN,
  SETTLE_JOBS,
  REOPEN_JOB,
  CLAIM_CONTROLLED,
  AWAITED_JOB_ENDED,
  JOB_DELETED,
];

/** The installed names the statements call, each carrying the hash of its routine's text. */
export const ROUTINE_NAMES = Object.freeze({
  claimControlled: CLAIM_CONTROLLED.name,
  settleJobs: SETTLE_JOBS.name,
  releaseChildren: RELEASE_CHILDREN.name,
  reopenJob: REOPEN_JOB.name,
  /** Called by its trigger on job, never by a statement. */
  awaitedJobEnded: AWAITED_JOB_ENDED.name,
  /** Called by its trigger on job, never by a statement. */
  jobDeleted: JOB_DELETED.name,
});
