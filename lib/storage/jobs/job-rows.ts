import type { JobState, JobSummary, SerializedError } from '../../model/index.js';

type Row = Record<string, unknown>;

/** A `job` row as the public summary: the columns every read of a job shares. */
export function jobSummaryFromRow(r: Row): JobSummary {
  return {
    id: r.id as string,
    name: r.name as string,
    queue: r.queue as string,
    state: r.state as JobState,
    priority: r.priority as number,
    attempt: r.attempt as number,
    maxAttempts: r.max_attempts as number,
    runAt: r.run_at as Date,
    createdAt: r.created_at as Date,
    startedAt: (r.started_at as Date | null) ?? null,
    completedAt: (r.completed_at as Date | null) ?? null,
    progress: (r.progress as number | null) ?? null,
    lastError: (r.last_error as SerializedError | null) ?? null,
    workerId: (r.worker_id as string | null) ?? null,
    batchId: (r.batch_id as string | null) ?? null,
  };
}
