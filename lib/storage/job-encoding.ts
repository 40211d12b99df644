import type { NewJob } from '../model/index.js';

/**
 * One job as a JSON record for `jsonb_to_recordset`, built by hand so the
 * payload, already JSON, is not encoded a second time.
 */
export function encodeNewJob(j: NewJob, hasDependents = false): string {
  return (
    `{"id":"${j.id}","name":${JSON.stringify(j.name)},"queue":${JSON.stringify(j.queue)},"payload":${j.payloadJson},` +
    `"state":"${j.state}","priority":${j.priority},"run_at":"${j.runAt.toISOString()}","max_attempts":${j.maxAttempts},` +
    `"timeout_ms":${j.timeoutMs ?? 'null'},"batch_id":${j.batchId ? `"${j.batchId}"` : 'null'},` +
    `"group_key":${j.groupKey == null ? 'null' : JSON.stringify(j.groupKey)},` +
    `"unique_key":${j.uniqueKey == null ? 'null' : JSON.stringify(j.uniqueKey)},` +
    `"remaining_dependencies":${j.remainingDependencies ?? 0},"has_dependents":${hasDependents},` +
    `"trace_context":${j.traceContext ? JSON.stringify(j.traceContext) : 'null'}}`
  );
}

export function encodeNewJobs(jobs: readonly NewJob[]): string {
  return `[${jobs.map((j) => encodeNewJob(j)).join(',')}]`;
}
