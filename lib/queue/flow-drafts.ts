import type { Type } from '@nestjs/common';
import { checkOptions, JobsError, optionShape, STEP_FIELDS, type JobHandler, type PayloadOf } from '../model/index.js';
import { graphAfterForm, parseAfter } from './after-parser.js';
import type { FlowEdge } from './graph-plan.js';
import { checkManager } from './manager.js';
import { ENQUEUE_OPTIONS_SHAPE, WRITE_OPTIONS_SHAPE, type DependencyOn, type WriteOptions } from './queue-options.js';
import type { BatchCallback, GraphNode, StepOptions, WorkflowWriter } from './workflow-writer.js';

export type { FlowEdge };

/** What a step of a flow takes: a job's options and what it waits on. */
export type FlowStepOptions = StepOptions & {
  /**
   * What the step waits on: other steps by key (`'resize'`, `{ key: 'scan', on: 'always' }`), and jobs
   * or batches outside the flow by id (`{ job: id }`, `{ batch: id, on: 'failure' }`). Default none:
   * the step is queued at dispatch.
   */
  after?: FlowEdge[];
};

/** "manager" as everywhere per job: refused with its own message once given a value (JobFactory). */
const FLOW_STEP_SHAPE = optionShape<FlowStepOptions, 'manager'>({ ...STEP_FIELDS, after: true, manager: true });

/**
 * A DAG of jobs by key, written in one statement by `dispatch()` with its
 * batch record: status and progress (`JobQueue.batchStatus(batchId)`),
 * then/catch/finally, cancel and delete as one. A failed step skips the
 * steps that waited on its success and cancels nothing else: a flow's batch
 * allows failures.
 */
export class FlowDraft {
  private readonly nodes: GraphNode[] = [];
  private readonly callbacks: BatchCallback[] = [];
  private dispatched = false;

  constructor(
    private readonly writer: WorkflowWriter,
    private readonly name: string | null = null,
  ) {}

  /**
   * Adds a step: its key (unique in the flow), the job, its payload, and its options with `after`,
   * what it waits on. An empty key, a malformed `after`, an unknown option key or a call after
   * `dispatch()` throws a JobsError; unknown or duplicate keys, cycles and parents that do not exist
   * are refused at `dispatch()`.
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
    const edges = parseAfter(after, graphAfterForm(where, "{ after: ['resize', { key: 'scan', on: 'always' }] }"));
    this.nodes.push({ key, job, payload, options: rest, after: edges });
    return this;
  }

  /** Runs once every step has succeeded. */
  then<H extends JobHandler>(job: Type<H> | string, payload: PayloadOf<H>, options: StepOptions = {}): this {
    refuseAwait('flow()', job, payload);
    return this.callback('success', job, payload, options);
  }

  /** Runs once, at the first step that fails for good. */
  catch<H extends JobHandler>(job: Type<H> | string, payload: PayloadOf<H>, options: StepOptions = {}): this {
    return this.callback('failure', job, payload, options);
  }

  /** Runs once every step has settled, whatever the outcome. */
  finally<H extends JobHandler>(job: Type<H> | string, payload: PayloadOf<H>, options: StepOptions = {}): this {
    return this.callback('always', job, payload, options);
  }

  /** Returns the id of each step by its key, and the id of the flow's batch record. */
  async dispatch(options: WriteOptions = {}): Promise<{
    /** Each step's job id, by the step's key. */
    ids: Record<string, string>;
    /** The flow's batch record: `JobQueue.batchStatus()`, `cancelBatch()`, `deleteBatch()`, `after: [{ batch }]`. */
    batchId: string;
  }> {
    refuseAfterDispatch('flow()', 'dispatch', this.dispatched);
    const manager = checkManager(
      'flow().dispatch()',
      checkOptions('flow().dispatch()', options, '{ manager }', WRITE_OPTIONS_SHAPE)?.manager,
    );
    this.dispatched = true;
    const batch = { name: this.name, allowFailures: true, callbacks: this.callbacks };
    const { ids, batchId } = await this.writer.dispatchGraph({ where: 'flow()', nodes: this.nodes, batch }, manager);
    return { ids, batchId: batchId! };
  }

  private callback(on: DependencyOn, job: Type | string, payload: unknown, options: StepOptions): this {
    const call = on === 'success' ? 'then' : on === 'failure' ? 'catch' : 'finally';
    refuseAfterDispatch('flow()', call, this.dispatched);
    // Checked in full at dispatch(); a key no option has is refused at the line that wrote it.
    checkOptions(`flow().${call}(${jobLabel(job)})`, options, '{ delay: 5000 }', ENQUEUE_OPTIONS_SHAPE);
    this.callbacks.push({ on, job, payload, options });
    return this;
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
    const nodes: GraphNode[] = this.steps.map((s, i) => ({
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
    const { ids } = await this.writer.dispatchGraph({ where: 'chain()', nodes, batch: null }, manager);
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
        `Potential fix: await ${draft.startsWith('batch') ? 'batch' : draft.startsWith('flow') ? 'flow' : 'chain'}.dispatch().`,
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
