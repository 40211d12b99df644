import type { NewDependency } from './workflow-storage.interface.js';

/** An edge as the statements' JSON names its columns. */
export function edgeRow(d: NewDependency) {
  return {
    child_id: d.childId,
    parent_job_id: d.parentJobId ?? null,
    parent_batch_id: d.parentBatchId ?? null,
    trigger: d.trigger,
    parent_outcome: d.parentOutcome ?? null,
  };
}

/**
 * The edges of jobs `ids` placed before `dependents` (beforeDependents):
 * each dependent waits on them as it waited on their adder: for their
 * success where it waited for the adder's success, for their end (always)
 * otherwise. `outcome`: set when the new jobs are settled already.
 */
export function edgesBefore(
  ids: string[],
  dependents: Array<Record<string, unknown>>,
  outcome: string | null,
): NewDependency[] {
  return ids.flatMap((id) =>
    dependents.map((d) => ({
      childId: d.id as string,
      parentJobId: id,
      trigger: d.trigger === 'success' ? ('success' as const) : ('always' as const),
      parentOutcome: outcome,
    })),
  );
}
