import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import {
  checkOptionKeys,
  describeValue,
  isDependencyTrigger,
  dependenciesMet,
  DEPENDENCY_TRIGGER_LIST,
  isTerminal,
  databaseCall,
  isUuid,
  JobEvents,
  JobsError,
  QUEUE_SETTINGS,
  triggerMet,
  uuidv7,
  type NewJob,
  type QueueSettings,
  type StepOptions,
} from '../model/index.js';
import { ENQUEUE_STORAGE, type EnqueueStorage } from '../storage/jobs/enqueue/enqueue-storage.interface.js';
import {
  WORKFLOW_STORAGE,
  type NewDependency,
  type WorkflowStorage,
} from '../storage/workflows/workflow-storage.interface.js';
import { topologicalOrder } from './flow-graph.js';
import { defaultContext, withDefaultContext } from './job-context-capture.js';
import { JobFactory, type JobRef } from './job-factory.js';
import { stepContexts } from './workflow-contexts.js';
import { PARENT_REF_SHAPE, type DependencyOn, type EnqueueOptions, type ParentRef } from './queue-options.js';

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
    @Inject(ENQUEUE_STORAGE) private readonly enqueue: EnqueueStorage,
    private readonly events: JobEvents,
    @Inject(QUEUE_SETTINGS) private readonly settings: QueueSettings,
  ) {}

  /**
   * One job that waits on `after`. Its unique key, when held, is answered
   * with the holder (`created: false`) and nothing is written, as a lone
   * enqueue does. A debounce (`replace`) is refused instead: the holder
   * waits on parents of its own, and replacing its payload would start
   * that payload on them.
   */
  async enqueueAfter(
    job: JobRef,
    payload: unknown,
    options: EnqueueOptions,
  ): Promise<{ id: string; created: boolean }> {
    const now = this.factory.clock.now();
    const { manager, after, ...rest } = options;
    const row = this.factory.build(job, payload, rest, now, true);
    const parents = normalizeParents(row.name, after!);
    let wrote: NewJob | null = null;
    const result = await databaseCall(`enqueue('${row.name}')`, () =>
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
              batch.state !== 'executing'
                ? batch.state
                : (on === 'failure' || on === 'any-failure') && batch.failed > 0
                  ? 'failed'
                  : null;
            deps.push({ childId: row.id, parentBatchId: parent.batch, trigger: on, parentOutcome: outcome });
          }
          if (outcome === null) remaining++;
        }
        const ready = dependenciesMet(deps.map((d) => ({ on: d.trigger, outcome: d.parentOutcome! })));
        const state = remaining > 0 ? 'waiting' : ready ? 'queued' : 'skipped';
        const graph = {
          jobs: [{ ...row, state: state as NewJob['state'], remainingDependencies: remaining }],
          dependencies: deps,
        };
        if (!row.uniqueKey) {
          await this.storage.insertGraph(graph, now, tx);
        } else {
          // A key taken by another enqueue between the holder's read and the insert is read again.
          for (let round = 1; ; round++) {
            const holder = await this.enqueue.uniqueHolder(row, now, tx);
            if (holder !== null) {
              if (row.uniqueReplace) throw debounceAfterHeld(row.name, row.uniqueKey, holder);
              return { id: holder, created: false };
            }
            if (await this.storage.insertGraphUnlessHeld(graph, now, tx)) break;
            if (round === HELD_ROUNDS) throw keyKeptChanging(row.name, row.uniqueKey);
          }
        }
        await this.storage.markParents(jobIds, tx);
        wrote = graph.jobs[0]!;
        return { id: row.id, created: true };
      }, manager),
    );
    // Told once the write committed (its own transaction), or was written in the caller's.
    if (wrote) this.written([wrote], manager);
    return result;
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
    const order = topologicalOrder(new Map(nodes.map((n) => [n.key, n.after.map((e) => e.key)])), where);
    const options = stepContexts(nodes, order, this.defaultContext(`${where}.dispatch()`), where);
    const rows = new Map(nodes.map((n) => [n.key, this.factory.build(n.job, n.payload, options.get(n.key)!, now)]));
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
    this.written(jobs, manager);
    return Object.fromEntries([...rows].map(([key, row]) => [key, row.id]));
  }

  async dispatchBatch(plan: BatchPlan, manager?: EntityManager): Promise<{ id: string }> {
    const now = this.factory.clock.now();
    const batchId = uuidv7(now.getTime());
    const fallback = this.defaultContext(`batch${plan.name ? ` "${plan.name}"` : ''}.dispatch()`);
    const members = plan.members.map((m) => ({
      ...this.factory.build(m.job, m.payload, withDefaultContext(m.options, fallback), now),
      batchId,
    }));
    const empty = members.length === 0;
    const callbacks = plan.callbacks.map((c) => {
      const row = this.factory.build(c.job, c.payload, withDefaultContext(c.options, fallback), now);
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
    this.written([...members, ...callbacks.map((c) => c.row)], manager);
    return { id: batchId };
  }

  /** The context of the call's jobs that give none, read once for all of them (see defaultContext). */
  private defaultContext(where: string): unknown {
    return defaultContext(where, this.settings.contextFrom);
  }

  /** Tells enqueue observers (metrics) of the jobs a call wrote. */
  private written(jobs: readonly NewJob[], manager: EntityManager | undefined): void {
    if (this.events.enqueuesObserved) this.events.enqueued({ jobs, inTransaction: manager !== undefined });
  }
}

/** Rounds of holder read and insert before a key that keeps being taken and given up is refused. */
const HELD_ROUNDS = 3;

function debounceAfterHeld(name: string, key: string, holder: string): JobsError {
  return new JobsError(
    `enqueue('${name}'): the unique key "${key}" is held by job ${holder}, and a debounce (unique.replace) cannot replace ` +
      `the payload of a job when the new one waits on "after"; nothing was written. ` +
      `Potential fix: leave replace out (the call then answers { id: holder, created: false }), or enqueue without "after".`,
  );
}

function keyKeptChanging(name: string, key: string): JobsError {
  return new JobsError(
    `enqueue('${name}'): the unique key "${key}" was taken by another job each of the ${HELD_ROUNDS} times it read free, ` +
      `and given up again before its holder could be read; nothing was written. Potential fix: retry the call.`,
  );
}

function normalizeParents(jobName: string, after: unknown): ParentRef[] {
  const where = `enqueue('${jobName}')`;
  const list: unknown = typeof after === 'string' ? [{ job: after }] : after;
  if (!Array.isArray(list) || list.length === 0) {
    throw new JobsError(
      `${where}: "after" must be a job id or a non-empty list of { job | batch, on }, got ${describeValue(after)}. Potential fix: after: parentId.`,
    );
  }
  const parents: ParentRef[] = [];
  // By index, not map(): map() skips the holes of a sparse array, and a missing entry must be refused.
  for (let i = 0; i < list.length; i++) {
    const p: unknown = list[i];
    checkOptionKeys(`${where}: "after" entry ${i}`, p, PARENT_REF_SHAPE);
    const entry = p !== null && typeof p === 'object' ? (p as { job?: unknown; batch?: unknown; on?: unknown }) : null;
    if (entry && 'job' in entry && 'batch' in entry) {
      // One of the two would be waited on, and the other dropped without a word.
      throw new JobsError(
        `${where}: "after" entry ${i} names both a job and a batch. Potential fix: one entry each, after: [{ job: jobId }, { batch: batchId }].`,
      );
    }
    const kind = entry && 'job' in entry ? 'job' : entry && 'batch' in entry ? 'batch' : null;
    const id = kind && entry![kind];
    if (!kind || !isUuid(id)) {
      throw new JobsError(
        `${where}: "after" entry ${i} is not { job: id } or { batch: id } with a valid id (got ${kind ? `${kind} ${describeValue(id)}` : describeValue(p)}). Potential fix: { job: '<uuid>', on: 'success' }.`,
      );
    }
    const on = entry!.on;
    if (on !== undefined && !isDependencyTrigger(on)) {
      throw new JobsError(
        `${where}: "on" of "after" entry ${i} must be ${DEPENDENCY_TRIGGER_LIST}, got ${describeValue(on)}. Potential fix: { ${kind}: id, on: 'always' }.`,
      );
    }
    // Ids come back from PostgreSQL in lower case, and the parents are looked up by them.
    const parentId = id.toLowerCase();
    parents.push(kind === 'job' ? { job: parentId, on } : { batch: parentId, on });
  }
  return parents;
}

function unknownParent(jobName: string, kind: 'job' | 'batch', id: string): JobsError {
  return new JobsError(
    `enqueue('${jobName}'): the parent ${kind} ${id} does not exist, so nothing was written. Potential fix: pass the id returned when the parent was ${kind === 'job' ? 'enqueued' : 'dispatched'}.`,
  );
}
