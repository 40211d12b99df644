import type { BatchInfo, BatchState, BatchSummary } from '../../model/index.js';

type Row = Record<string, unknown>;

/** A batch row with its member counts (total, pending and one per ending), as every batch read returns it. */
export function batchSummaryFromRow(row: Row): BatchSummary {
  const total = row.total as number;
  const pending = row.pending as number;
  return {
    id: row.id as string,
    name: (row.name as string | null) ?? null,
    state: row.state as BatchState,
    total,
    pending,
    succeeded: row.succeeded as number,
    failed: row.failed as number,
    cancelled: row.cancelled as number,
    skipped: row.skipped as number,
    progress: total === 0 ? 1 : (total - pending) / total,
    createdAt: row.created_at as Date,
    completedAt: (row.completed_at as Date | null) ?? null,
  };
}

/** The same with when its first member started, which a batch's own status reads. */
export function batchInfoFromRow(row: Row): BatchInfo {
  return { ...batchSummaryFromRow(row), startedAt: (row.first_started_at as Date | null) ?? null };
}
