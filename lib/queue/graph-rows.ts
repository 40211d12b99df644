import { dependenciesMet, isTerminal, JobsError, triggerMet, type DependencyOn, type NewJob } from '../model/index.js';
import type { JobGraph, NewDependency, ParentStates } from '../storage/workflows/workflow-storage.interface.js';
import { topologicalOrder } from './flow-graph.js';
import { internalEdges, type GraphPlan } from './graph-plan.js';

/** What a graph waits on outside itself, when it waits on nothing there. */
export const NO_PARENTS: ParentStates = { jobs: new Map(), batches: new Map() };

/**
 * The plan's keys and edges, checked: each key once, each key an edge names
 * in the plan, no cycle, and (in a batch that does not allow failures) no
 * member waiting on another's failure, which that failure would cancel
 * first. Returns the keys parents first.
 */
export function checkGraph(plan: GraphPlan): string[] {
  const { where, nodes } = plan;
  const keys = new Set<string>();
  for (const node of nodes) {
    if (keys.has(node.key)) {
      throw new JobsError(
        `${where}: the key "${node.key}" is used twice. Nothing was written. Potential fix: give every ${noun(plan)} its own key.`,
      );
    }
    keys.add(node.key);
  }
  for (const node of nodes) {
    for (const edge of internalEdges(node.after)) {
      if (!keys.has(edge.key)) {
        throw new JobsError(
          `${where}: ${label(plan, node.key)} waits on "${edge.key}", which is not in the ${plan.batch && !isFlow(plan) ? 'batch' : 'flow'}. ` +
            `Nothing was written. Potential fix: ${isFlow(plan) ? `add("${edge.key}", …)` : `add(Job, payload, { key: '${edge.key}' })`} first, or fix the key.`,
        );
      }
      if (plan.batch && !plan.batch.allowFailures && (edge.on === 'failure' || edge.on === 'any-failure')) {
        throw new JobsError(
          `${where}: ${label(plan, node.key)} waits on the failure of "${edge.key}", but a member's failure cancels the members ` +
            `that have not started, this one included, so it could never run. Nothing was written. ` +
            `Potential fix: call allowFailures() on the batch, or use catch() for work that follows a failure.`,
        );
      }
    }
  }
  return topologicalOrder(new Map(nodes.map((n) => [n.key, internalEdges(n.after).map((e) => e.key)])), where);
}

/**
 * The rows of a graph: its batch record, its nodes (waiting on the parents
 * not yet settled; queued, or skipped when every parent had settled and not
 * the way it waits for) with their edges, and its callbacks. `skipped`: the
 * nodes written skipped, whose workflow rows then settle.
 */
export function graphRows(
  plan: GraphPlan,
  rows: ReadonlyMap<string, NewJob>,
  callbacks: ReadonlyArray<{ on: DependencyOn; row: NewJob }>,
  batchId: string | null,
  states: ParentStates,
): Required<JobGraph> & { skipped: string[] } {
  const dependencies: NewDependency[] = [];
  const jobs: JobGraph['jobs'] = [];
  const skipped: string[] = [];
  const withChildren = new Set(plan.nodes.flatMap((n) => internalEdges(n.after).map((e) => e.key)));
  for (const node of plan.nodes) {
    const row = rows.get(node.key)!;
    const edges: NewDependency[] = [];
    let remaining = 0;
    for (const edge of node.after) {
      if ('key' in edge) {
        edges.push({ childId: row.id, parentJobId: rows.get(edge.key)!.id, trigger: edge.on });
        remaining++;
        continue;
      }
      const outcome = parentOutcome(edge, states, `${plan.where}: ${label(plan, node.key)}`);
      edges.push({ childId: row.id, ...parentColumns(edge), trigger: edge.on, parentOutcome: outcome });
      if (outcome === null) remaining++;
    }
    const state =
      remaining > 0
        ? 'waiting'
        : dependenciesMet(edges.map((d) => ({ on: d.trigger, outcome: d.parentOutcome! })))
          ? 'queued'
          : 'skipped';
    if (state === 'skipped') skipped.push(row.id);
    jobs.push({ ...row, state, remainingDependencies: remaining, hasDependents: withChildren.has(node.key) });
    dependencies.push(...edges);
  }
  const empty = plan.nodes.length === 0;
  for (const { on, row } of callbacks) {
    // An empty batch has already succeeded: its callbacks are decided now.
    const state = empty ? (triggerMet(on, 'succeeded') ? 'queued' : 'skipped') : 'waiting';
    jobs.push({ ...row, state, remainingDependencies: empty ? 0 : 1 });
    dependencies.push({
      childId: row.id,
      parentBatchId: batchId!,
      trigger: on,
      parentOutcome: empty ? 'succeeded' : null,
    });
  }
  const batches: JobGraph['batches'] =
    plan.batch && batchId
      ? [
          {
            id: batchId,
            name: plan.batch.name,
            state: empty ? 'succeeded' : 'executing',
            total: plan.nodes.length,
            options: { allowFailures: plan.batch.allowFailures },
          },
        ]
      : [];
  return { batches, jobs, dependencies, skipped };
}

/**
 * How a parent outside the call has ended, if it has: a job's final state;
 * a batch's, or `failed` for a failure edge of a batch that is still running
 * but already had a failure (its failure edges closed then). `where` names
 * the call and the job for the message of a parent that does not exist.
 */
export function parentOutcome(
  parent: { job: string; on?: DependencyOn } | { batch: string; on?: DependencyOn },
  states: ParentStates,
  where: string,
): string | null {
  const on = parent.on ?? 'success';
  if ('job' in parent) {
    const state = states.jobs.get(parent.job);
    if (!state) throw unknownParent(where, 'job', parent.job);
    return isTerminal(state) ? state : null;
  }
  const batch = states.batches.get(parent.batch);
  if (!batch) throw unknownParent(where, 'batch', parent.batch);
  if (batch.state !== 'executing') return batch.state;
  return (on === 'failure' || on === 'any-failure') && batch.failed > 0 ? 'failed' : null;
}

/** The columns of an edge to a parent job or batch. */
export function parentColumns(
  parent: { job: string } | { batch: string },
): Pick<NewDependency, 'parentJobId' | 'parentBatchId'> {
  return 'job' in parent ? { parentJobId: parent.job } : { parentBatchId: parent.batch };
}

function unknownParent(where: string, kind: 'job' | 'batch', id: string): JobsError {
  return new JobsError(
    `${where}: the parent ${kind} ${id} does not exist, so nothing was written. Potential fix: pass the id returned when the parent was ${kind === 'job' ? 'enqueued' : 'dispatched'}.`,
  );
}

/** A flow's steps are named by their keys; a batch's members by key, or by their place when they have none. */
function label(plan: GraphPlan, key: string): string {
  if (key.startsWith(UNKEYED)) return `member ${key.slice(UNKEYED.length)}`;
  return isFlow(plan) ? `step "${key}"` : `member "${key}"`;
}

function noun(plan: GraphPlan): string {
  return isFlow(plan) ? 'step' : 'member';
}

function isFlow(plan: GraphPlan): boolean {
  return !plan.where.startsWith('batch');
}

/**
 * The key of a batch member given none: its place, behind a control
 * character that a member's own key cannot hold (checkName refuses them).
 */
export const UNKEYED = '\u0000';
