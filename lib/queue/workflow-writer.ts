import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import {
  dependenciesMet,
  databaseCall,
  JobEvents,
  JobsError,
  JOB_WRITE_RULES,
  uuidv7,
  type NewJob,
  type JobWriteRules,
  type StepOptions,
} from '../model/index.js';
import { ENQUEUE_STORAGE, type EnqueueStorage } from '../storage/jobs/enqueue/enqueue-storage.interface.js';
import type { StorageTx } from '../storage/sql/storage-tx.interface.js';
import {
  WORKFLOW_STORAGE,
  type NewDependency,
  type WorkflowStorage,
} from '../storage/workflows/workflow-storage.interface.js';
import { enqueueAfterForm, parseAfter } from './after-parser.js';
import { internalEdges, type GraphPlan } from './graph-plan.js';
import { checkGraph, graphRows, NO_PARENTS, parentColumns, parentOutcome } from './graph-rows.js';
import { defaultContext, withDefaultContext } from './job-context-capture.js';
import { JobFactory, type JobRef } from './job-factory.js';
import { stepContexts } from './workflow-contexts.js';
import type { EnqueueOptions } from './queue-options.js';

export type { StepOptions };
export type { BatchCallback, GraphNode, GraphPlan } from './graph-plan.js';

/** Writes jobs that wait on others: continuations, flows, chains and batches, each atomically. */
@Injectable()
export class WorkflowWriter {
  constructor(
    private readonly factory: JobFactory,
    @Inject(WORKFLOW_STORAGE) private readonly storage: WorkflowStorage,
    @Inject(ENQUEUE_STORAGE) private readonly enqueue: EnqueueStorage,
    private readonly events: JobEvents,
    @Inject(JOB_WRITE_RULES) private readonly writeRules: JobWriteRules,
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
    const parents = parseAfter(after, enqueueAfterForm(row.name));
    let wrote: NewJob | null = null;
    const result = await databaseCall(`enqueue('${row.name}')`, () =>
      this.storage.transaction(async (tx) => {
        const jobIds = parents.flatMap((p) => ('job' in p ? [p.job] : []));
        const batchIds = parents.flatMap((p) => ('batch' in p ? [p.batch] : []));
        const states = await this.storage.lockParents(jobIds, batchIds, tx);
        const deps: NewDependency[] = [];
        let remaining = 0;
        for (const parent of parents) {
          const outcome = parentOutcome(parent, states, `enqueue('${row.name}')`);
          deps.push({ childId: row.id, ...parentColumns(parent), trigger: parent.on, parentOutcome: outcome });
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

  /**
   * Writes a flow, a chain or a batch whole: its jobs, the edges between
   * them and to the jobs and batches they wait on outside it, and (but for
   * a chain) its batch record and callbacks. Keys, cycles and parents are
   * checked first; nothing is written when one is wrong. Resolves with each
   * node's id by key, and the batch's id.
   */
  async dispatchGraph(
    plan: GraphPlan,
    manager?: EntityManager,
  ): Promise<{ ids: Record<string, string>; batchId: string | null }> {
    const now = this.factory.clock.now();
    const { where, nodes, batch } = plan;
    const order = checkGraph(plan);
    const fallback = this.defaultContext(`${where}.dispatch()`);
    const contexts = stepContexts(
      nodes.map((n) => ({ key: n.key, options: n.options, after: internalEdges(n.after) })),
      order,
      fallback,
      where,
    );
    const batchId = batch ? uuidv7(now.getTime()) : null;
    const rows = new Map(
      nodes.map((n) => [n.key, { ...this.factory.build(n.job, n.payload, contexts.get(n.key)!, now), batchId }]),
    );
    const callbacks = (batch?.callbacks ?? []).map((c) => ({
      on: c.on,
      row: this.factory.build(c.job, c.payload, withDefaultContext(c.options, fallback), now),
    }));
    const outside = nodes.flatMap((n) => n.after.filter((e) => !('key' in e)));
    const jobIds = [...new Set(outside.flatMap((e) => ('job' in e ? [e.job] : [])))];
    const batchIds = [...new Set(outside.flatMap((e) => ('batch' in e ? [e.batch] : [])))];
    const write = async (tx?: StorageTx): Promise<NewJob[]> => {
      const states = tx ? await this.storage.lockParents(jobIds, batchIds, tx) : NO_PARENTS;
      const graph = graphRows(plan, rows, callbacks, batchId, states);
      await this.storage.insertGraph(graph, now, tx ?? manager);
      if (tx) {
        await this.storage.markParents(jobIds, tx);
        await this.storage.settleSkipped(graph.skipped, now, tx);
      }
      return graph.jobs;
    };
    const written = await databaseCall(`${where}.dispatch()`, () =>
      outside.length ? this.storage.transaction((tx) => write(tx), manager) : write(),
    );
    this.written(written, manager);
    return { ids: Object.fromEntries([...rows].map(([key, row]) => [key, row.id])), batchId };
  }

  /** The context of the call's jobs that give none, read once for all of them (see defaultContext). */
  private defaultContext(where: string): unknown {
    return defaultContext(where, this.writeRules.contextFrom);
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
