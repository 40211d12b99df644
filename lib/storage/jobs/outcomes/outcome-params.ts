/* The named parameters of the outcome writes (outcome-statements.ts). */

/**
 * What every outcome write of a batch takes: the ids (a uuid[] literal), the worker, the time,
 * the channel its settle notifies on.
 */
export interface OutcomeBatch {
  ids: string;
  workerId: string;
  now: Date;
  channel: string;
}

/**
 * The success write's values: `attempts` and `results` JSON objects keyed by id; `traces` each traced
 * attempt's `trace/span/handler start in epoch ms`, or null when the batch had none.
 */
export interface SucceedParams extends OutcomeBatch {
  attempts: string;
  results: string;
  traces: string | null;
}

/**
 * succeed's, and `successors`: a JSON object from a success's id to the id of the job claimed
 * ahead that took its place.
 */
export interface SucceedWithSuccessorsParams extends SucceedParams {
  successors: string;
}

/** succeed's, and the controlled claim's of the queue whose slots the successes free (see the claim statements). */
export interface SucceedAndClaimParams extends SucceedParams {
  queue: string;
  names: readonly string[];
  limit: number;
  leaseMs: number;
  share: boolean;
  ahead: number;
  successors: string | null;
}

/** A forgetting success write's: `forget`, a uuid[] literal of the successes whose job types keep none. */
export interface ForgetParams {
  forget: string;
}

/** A lease renewal: `attempts` a JSON object of each held job's attempt by id. */
export interface RenewParams {
  ids: readonly string[];
  workerId: string;
  now: Date;
  leaseMs: number;
  attempts: string;
}

/** One running job's fenced row. */
export interface HeldRow {
  jobId: string;
  attempt: number;
  workerId: string;
}
