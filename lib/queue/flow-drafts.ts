import type { Type } from '@nestjs/common';
import {
  checkOptionKeys,
  checkOptions,
  describeValue,
  isDependencyTrigger,
  DEPENDENCY_TRIGGERS,
  JobsError,
  optionShape,
  STEP_FIELDS,
  type JobHandler,
  type PayloadOf,
} from '../model/index.js';
import { checkManager } from './manager.js';
import { ENQUEUE_OPTIONS_SHAPE, WRITE_OPTIONS_SHAPE, type DependencyOn, type WriteOptions } from './queue-options.js';
import type { FlowNode, StepOptions, WorkflowWriter } from './workflow-writer.js';

/** A parent of a flow step: its key (runs on success), or the key and the outcome that lets the step run. */
export type FlowEdge =
  | string
  | {
      /** The key of the step waited on. */
      key: string;
      /** What that step must do for this one to run: `success` (default), `failure` (failed for good) or `always`. */
      on?: DependencyOn;
    };

/** What a step of a flow takes: a job's options and the steps it waits on. */
export type FlowStepOptions = StepOptions & {
  /** The steps this one waits on, by key; default none: the step is queued at dispatch. */
  after?: FlowEdge[];
};

/** "manager" as everywhere per job: refused with its own message once given a value (JobFactory). */
const FLOW_STEP_SHAPE = optionShape<FlowStepOptions, 'manager'>({ ...STEP_FIELDS, after: true, manager: true });
const FLOW_EDGE_SHAPE = optionShape<Exclude<FlowEdge, string>>({ key: true, on: true });

/** A DAG of jobs by key, written in one statement by `dispatch()`. */
export class FlowDraft {
  private readonly nodes: FlowNode[] = [];
  private dispatched = false;

  constructor(private readonly writer: WorkflowWriter) {}

  /**
   * Adds a step: its key (unique in the flow), the job, its payload, and its options with `after`,
   * the keys of the steps it waits on. An empty key, a malformed `after`, an unknown option key or a
   * call after `dispatch()` throws a JobsError; unknown or duplicate keys and cycles are refused at
   * `dispatch()`.
   */
  add<H extends JobHandler>(
    key: string,
    job: Type<H> | string,
    payload: PayloadOf<H>,
    options: FlowStepOptions = {},
  ): this {
    refuseAfterDispatch('flow()', 'add', this.dispatched);
    if (typeof key !== 'string' || key === '') {
      throw new JobsError(
        `flow().add(): every step needs a non-empty string key. Potential fix: add('resize', Resize, payload).`,
      );
    }
    const where = `flow().add('${key}')`;
    const { after = [], ...rest } = checkOptions(where, options, '{ after: [...] }', FLOW_STEP_SHAPE) ?? {};
    if (!Array.isArray(after)) {
      throw new JobsError(
        `flow().add('${key}'): "after" must be an array of step keys, got ${describeValue(after)}. Potential fix: { after: ['resize'] }.`,
      );
    }
    const edges: FlowNode['after'] = [];
    // By index, not map(): map() skips the holes of a sparse array, which then broke dispatch() with a TypeError.
    for (let i = 0; i < after.length; i++) {
      const e = after[i] as FlowEdge | undefined;
      checkOptionKeys(`${where}: "after" entry ${i}`, e, FLOW_EDGE_SHAPE);
      const edge =
        typeof e === 'string' ? { key: e, on: 'success' as const } : e && { key: e.key, on: e.on ?? 'success' };
      if (!edge || typeof edge.key !== 'string' || !isDependencyTrigger(edge.on)) {
        throw new JobsError(
          `flow().add('${key}'): each "after" entry is a step key or { key, on: ${DEPENDENCY_TRIGGERS.map((t) => `'${t}'`).join(' | ')} }, got ${describeValue(e)} at index ${i}. Potential fix: { after: ['resize', { key: 'scan', on: 'always' }] }.`,
        );
      }
      edges.push(edge);
    }
    this.nodes.push({ key, job, payload, options: rest, after: edges });
    return this;
  }

  /** Returns the id of each step by its key. */
  async dispatch(options: WriteOptions = {}): Promise<{
    /** Each step's job id, by the step's key. */
    ids: Record<string, string>;
  }> {
    refuseAfterDispatch('flow()', 'dispatch', this.dispatched);
    const manager = checkManager(
      'flow().dispatch()',
      checkOptions('flow().dispatch()', options, '{ manager }', WRITE_OPTIONS_SHAPE)?.manager,
    );
    this.dispatched = true;
    return { ids: await this.writer.dispatchFlow(this.nodes, 'flow()', manager) };
  }
}

/** Jobs that run one after another; a job that fails for good skips the rest. */
export class ChainDraft {
  private readonly steps: Array<{ job: Type | string; payload: unknown; options: StepOptions }> = [];
  private dispatched = false;

  constructor(private readonly writer: WorkflowWriter) {}

  /**
   * Adds the next job of the chain: it waits for the one before it to succeed. A key no option has,
   * or a call after `dispatch()`, throws a JobsError; the rest is checked at `dispatch()`.
   */
  then<H extends JobHandler>(job: Type<H> | string, payload: PayloadOf<H>, options: StepOptions = {}): this {
    refuseAwait('chain()', job, payload);
    refuseAfterDispatch('chain()', 'then', this.dispatched);
    // Checked in full at dispatch(); a key no option has is refused at the line that wrote it.
    checkOptions(`chain().then(${jobLabel(job)})`, options, '{ delay: 5000 }', ENQUEUE_OPTIONS_SHAPE);
    this.steps.push({ job, payload, options });
    return this;
  }

  /**
   * Writes every job of the chain in one statement (with `manager`, in the caller's transaction): the
   * first one queued, each other one `waiting`. Resolves with their ids in chain order. Bad input, a
   * unique key already held (nothing is written), or a second call throws a JobsError.
   */
  async dispatch(options: WriteOptions = {}): Promise<{
    /** The jobs' ids, in chain order. */
    ids: string[];
  }> {
    refuseAfterDispatch('chain()', 'dispatch', this.dispatched);
    const nodes: FlowNode[] = this.steps.map((s, i) => ({
      key: String(i),
      job: s.job,
      payload: s.payload,
      options: s.options,
      after: i === 0 ? [] : [{ key: String(i - 1), on: 'success' }],
    }));
    const manager = checkManager(
      'chain().dispatch()',
      checkOptions('chain().dispatch()', options, '{ manager }', WRITE_OPTIONS_SHAPE)?.manager,
    );
    this.dispatched = true;
    const ids = await this.writer.dispatchFlow(nodes, 'chain()', manager);
    return { ids: nodes.map((n) => ids[n.key]!) };
  }
}

/**
 * A draft with a then() method is a thenable: `await chain.then(A, a)`
 * (dispatch() forgotten) makes the promise machinery call then(resolve,
 * reject), which took the two functions as a job and its payload and never
 * settled, so the caller hung. A job is a class or a name, and a payload is
 * never a function: those two arguments mean an await, which this turns
 * into a rejection.
 */
export function refuseAwait(draft: string, job: unknown, payload: unknown): void {
  if (typeof job === 'function' && !('prototype' in job) && typeof payload === 'function') {
    throw new JobsError(
      `${draft} was awaited (or given two functions to then()), but a draft is not a promise and nothing was written. ` +
        `Potential fix: await ${draft.startsWith('batch') ? 'batch' : 'chain'}.dispatch().`,
    );
  }
}

/** A job as a message names it: 'send-receipt' by name, SendReceipt by class. */
export function jobLabel(job: unknown): string {
  return typeof job === 'string' ? `'${job}'` : typeof job === 'function' ? job.name : '';
}

/**
 * A draft writes its jobs once: a second dispatch() would write them all
 * again, and a step added after the first would be lost.
 */
function refuseAfterDispatch(draft: 'flow()' | 'chain()', call: string, dispatched: boolean): void {
  if (!dispatched) return;
  throw new JobsError(
    `${draft}.${call}(): this ${draft.slice(0, -2)} was already dispatched, so ${call === 'dispatch' ? 'its jobs would be written twice' : 'this step would be lost'}. ` +
      `Potential fix: start a new one with jobs.${draft} for more work.`,
  );
}
