import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import {
  isDependencyTrigger,
  isTerminal,
  databaseCall,
  isUuid,
  JobsError,
  triggerMet,
  uuidv7,
  type NewJob,
  type StepOptions,
} from '../model/index.js';
import {
  WORKFLOW_STORAGE,
  type NewDependency,
  type WorkflowStorage,
} from '../storage/workflows/workflow-storage.interface.js';
import { topologicalOrder } from './flow-graph.js';
import { JobFactory, type JobRef } from './job-factory.js';
import type { DependencyOn, EnqueueOptions, ParentRef } from './queue-options.js';

export type { StepOptions };

export interface FlowNode {
  key: string;
  job: JobRef;
  payload: unknown;
  options: StepOptions;
  after: Array<{ key: string; on: DependencyOn }>;
}

export interface BatchPlan {
  name: string | null;
  members: Array<{ job: JobRef; payload: unknown; options: StepOptions }>;
  callbacks: Array<{ on: DependencyOn; job: JobRef; payload: unknown; options: StepOptions }>;
  allowFailures: boolean;
}

/** Writes jobs that wait on others: continuations, flows, chains and batches, each atomically. */
@Injectable()
export class WorkflowWriter {
  constructor(
    private readonly factory: JobFactory,
    @Inject(WORKFLOW_STORAGE) private readonly storage: WorkflowStorage,
  ) {}

  async enqueueAfter(job: JobRef, payload: unknown, options: EnqueueOptions): Promise<{ id: string }> {
    const now = this.factory.clock.now();
    const { manager, after, ...rest } = options;
    const row = this.factory.build(job, payload, rest, now);
    const parents = normalizeParents(row.name, after!);
    await databaseCall(`enqueue('${row.name}')`, () =>
      this.storage.transaction(async (tx) => {
        const jobIds = parents.flatMap((p) => ('job' in p ? [p.job] : []));
        const batchIds = parents.flatMap((p) => ('batch' in p ? [p.batch] : []));
        const states = await this.storage.lockParents(jobIds, batchIds, tx);
        const deps: NewDependency[] = [];
        let remaining = 0;
        for (const parent of parents) {
          const on = parent.on ?? 'success';
          let outcome: string | null;
          if ('job' in parent) {
            const state = states.jobs.get(parent.job);
            if (!state) throw unknownParent(row.name, 'job', parent.job);
            outcome = isTerminal(state) ? state : null;
            deps.push({ childId: row.id, parentJobId: parent.job, trigger: on, parentOutcome: outcome });
          } else {
            const batch = states.batches.get(parent.batch);
            if (!batch) throw unknownParent(row.name, 'batch', parent.batch);
            // A batch's failure edges close at its first failure, which may be past.
            outcome =
              batch.state !== 'executing' ? batch.state : on === 'failure' && batch.failed > 0 ? 'failed' : null;
            deps.push({ childId: row.id, parentBatchId: parent.batch, trigger: on, parentOutcome: outcome });
          }
          if (outcome === null) remaining++;
        }
        const ready = deps.every((d) => triggerMet(d.trigger, d.parentOutcome!));
        const state = remaining > 0 ? 'waiting' : ready ? 'queued' : 'skipped';
        await this.storage.insertGraph(
          { jobs: [{ ...row, state: state as NewJob['state'], remainingDependencies: remaining }], dependencies: deps },
          now,
          tx,
        );
        await this.storage.markParents(jobIds, tx);
      }, manager),
    );
    return { id: row.id };
  }

  async dispatchFlow(nodes: FlowNode[], where: string, manager?: EntityManager): Promise<Record<string, string>> {
    const now = this.factory.clock.now();
    const byKey = new Map<string, FlowNode>();
    for (const node of nodes) {
      if (byKey.has(node.key)) {
        throw new JobsError(
          `${where}: the key "${node.key}" is used twice. Potential fix: give every step its own key.`,
        );
      }
      byKey.set(node.key, node);
    }
    for (const node of nodes) {
      for (const edge of node.after) {
        if (!byKey.has(edge.key)) {
          throw new JobsError(
            `${where}: step "${node.key}" waits on "${edge.key}", which is not in the flow. Nothing was written. Potential fix: add("${edge.key}", …) first, or fix the key.`,
          );
        }
      }
    }
    topologicalOrder(new Map(nodes.map((n) => [n.key, n.after.map((e) => e.key)])), where);
    const rows = new Map(nodes.map((n) => [n.key, this.factory.build(n.job, n.payload, n.options, now)]));
    const parentsWithChildren = new Set(nodes.flatMap((n) => n.after.map((e) => e.key)));
    const jobs = nodes.map((n) => ({
      ...rows.get(n.key)!,
      state: (n.after.length ? 'waiting' : 'queued') as NewJob['state'],
      remainingDependencies: n.after.length,
      hasDependents: parentsWithChildren.has(n.key),
    }));
    const dependencies: NewDependency[] = nodes.flatMap((n) =>
      n.after.map((e) => ({ childId: rows.get(n.key)!.id, parentJobId: rows.get(e.key)!.id, trigger: e.on })),
    );
    await databaseCall(`${where}.dispatch()`, () => this.storage.insertGraph({ jobs, dependencies }, now, manager));
    return Object.fromEntries([...rows].map(([key, row]) => [key, row.id]));
  }

  async dispatchBatch(plan: BatchPlan, manager?: EntityManager): Promise<{ id: string }> {
    const now = this.factory.clock.now();
    const batchId = uuidv7(now.getTime());
    const members = plan.members.map((m) => ({
      ...this.factory.build(m.job, m.payload, m.options, now),
      batchId,
    }));
    const empty = members.length === 0;
    const callbacks = plan.callbacks.map((c) => {
      const row = this.factory.build(c.job, c.payload, c.options, now);
      // An empty batch has already succeeded: its callbacks are decided now.
      const state: NewJob['state'] = empty ? (triggerMet(c.on, 'succeeded') ? 'queued' : 'skipped') : 'waiting';
      return { row: { ...row, state, remainingDependencies: empty ? 0 : 1 }, on: c.on };
    });
    await databaseCall(`batch${plan.name ? ` "${plan.name}"` : ''}.dispatch()`, () =>
      this.storage.insertGraph(
        {
          batches: [
            {
              id: batchId,
              name: plan.name,
              state: empty ? 'succeeded' : 'executing',
              total: members.length,
              options: { allowFailures: plan.allowFailures },
            },
          ],
          jobs: [...members, ...callbacks.map((c) => c.row)],
          dependencies: callbacks.map((c) => ({
            childId: c.row.id,
            parentBatchId: batchId,
            trigger: c.on,
            parentOutcome: empty ? 'succeeded' : null,
          })),
        },
        now,
        manager,
      ),
    );
    return { id: batchId };
  }
}

function normalizeParents(jobName: string, after: string | ParentRef[]): ParentRef[] {
  const list = typeof after === 'string' ? [{ job: after }] : after;
  if (!Array.isArray(list) || list.length === 0) {
    throw new JobsError(
      `enqueue('${jobName}'): "after" must be a job id or a non-empty list of { job | batch, on }. Potential fix: after: parentId.`,
    );
  }
  for (const p of list) {
    // A bare id in the list is refused like any other entry without one ('in' would throw on a string).
    const id =
      typeof p === 'object' && p !== null ? ('job' in p ? p.job : 'batch' in p ? p.batch : undefined) : undefined;
    if (!isUuid(id)) {
      throw new JobsError(
        `enqueue('${jobName}'): "after" has an entry without a valid job or batch id (${JSON.stringify(p)}). Potential fix: { job: '<uuid>', on: 'success' }.`,
      );
    }
    if (p.on !== undefined && !isDependencyTrigger(p.on)) {
      throw new JobsError(`enqueue('${jobName}'): "on" must be 'success', 'failure' or 'always', got ${String(p.on)}.`);
    }
  }
  return list;
}

function unknownParent(jobName: string, kind: 'job' | 'batch', id: string): JobsError {
  return new JobsError(
    `enqueue('${jobName}'): the parent ${kind} ${id} does not exist, so nothing was written. Potential fix: pass the id returned when the parent was ${kind === 'job' ? 'enqueued' : 'dispatched'}.`,
  );
}
