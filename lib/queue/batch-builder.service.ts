import { Injectable, type Type } from '@nestjs/common';
import {
  checkName,
  checkOptions,
  JobsError,
  optionShape,
  STEP_FIELDS,
  type JobHandler,
  type PayloadOf,
} from '../model/index.js';
import { jobLabel, refuseAwait } from './flow-drafts.js';
import { graphAfterForm, parseAfter } from './after-parser.js';
import type { FlowEdge } from './graph-plan.js';
import { UNKEYED } from './graph-rows.js';
import { checkManager } from './manager.js';
import { ENQUEUE_OPTIONS_SHAPE, WRITE_OPTIONS_SHAPE, type DependencyOn, type WriteOptions } from './queue-options.js';
import { WorkflowWriter, type GraphPlan, type StepOptions } from './workflow-writer.js';

/** What a member of a batch takes: a job's options, its key in the batch, and what it waits on. */
export type BatchMemberOptions = StepOptions & {
  /** Its name among the batch's members, for other members' `after` and dispatch()'s `ids`. */
  key?: string;
  /**
   * What the member waits on: other members by key (`'extract'`, `{ key: 'extract', on: 'always' }`),
   * and jobs or batches outside the batch by id (`{ job: id }`, `{ batch: id }`). Default none.
   */
  after?: FlowEdge[];
};

/** "manager" as everywhere per job: refused with its own message once given a value (JobFactory). */
const BATCH_MEMBER_SHAPE = optionShape<BatchMemberOptions, 'manager'>({
  ...STEP_FIELDS,
  key: true,
  after: true,
  manager: true,
});

/**
 * A batch being described. Nothing is written until `dispatch()`, which
 * writes the batch, its members and its callbacks in one statement.
 */
export class BatchDraft {
  private readonly plan: GraphPlan & { batch: NonNullable<GraphPlan['batch']> };
  private dispatched = false;

  constructor(
    private readonly writer: WorkflowWriter,
    name: string | null,
  ) {
    this.plan = {
      where: `batch${name ? ` "${name}"` : ''}`,
      nodes: [],
      batch: { name, callbacks: [], allowFailures: false },
    };
  }

  /**
   * Adds a member: a job (class or name), its payload and its options. Members run in parallel once
   * dispatched, but for those that wait (`after`) on other members by `key`, or on jobs and batches
   * outside the batch. A key no option has, a bad `key` or `after`, or a call after `dispatch()`,
   * throws a JobsError; the rest of the member (unknown keys, cycles, parents that do not exist) is
   * checked at `dispatch()`.
   */
  add<H extends JobHandler>(job: Type<H> | string, payload: PayloadOf<H>, options: BatchMemberOptions = {}): this {
    this.checkOpen('add');
    const where = `${this.plan.where}.add(${jobLabel(job)})`;
    const {
      key,
      after = [],
      ...rest
    } = checkOptions(where, options, "{ key: 'load', after: ['extract'] }", BATCH_MEMBER_SHAPE) ?? {};
    const edges = parseAfter(after, graphAfterForm(where, "{ after: ['extract', { job: parentId }] }"));
    const index = this.plan.nodes.length;
    this.plan.nodes.push({
      key: key === undefined ? `${UNKEYED}${index}` : checkName(where, 'key', key, 'extract'),
      job,
      payload,
      options: rest,
      after: edges,
    });
    return this;
  }

  /** Runs once every member has succeeded. */
  then<H extends JobHandler>(job: Type<H> | string, payload: PayloadOf<H>, options: StepOptions = {}): this {
    refuseAwait(this.plan.where, job, payload);
    return this.callback('success', job, payload, options);
  }

  /** Runs once, at the first member that fails for good. */
  catch<H extends JobHandler>(job: Type<H> | string, payload: PayloadOf<H>, options: StepOptions = {}): this {
    return this.callback('failure', job, payload, options);
  }

  /** Runs once every member has settled, whatever the outcome. */
  finally<H extends JobHandler>(job: Type<H> | string, payload: PayloadOf<H>, options: StepOptions = {}): this {
    return this.callback('always', job, payload, options);
  }

  /** A failed member does not cancel the members that have not started. */
  allowFailures(): this {
    this.checkOpen('allowFailures');
    this.plan.batch.allowFailures = true;
    return this;
  }

  /**
   * Writes the batch, its members and its callbacks in one statement (with `manager`, in the caller's
   * transaction) and resolves with the batch's id. A batch without members has succeeded at once,
   * and its callbacks are decided then. Bad input, a member's unique key already held (nothing is
   * written), or a second call throws a JobsError.
   */
  async dispatch(options: WriteOptions = {}): Promise<{
    /** The batch's id. */
    id: string;
    /** The job id of each member given a `key`, by key. */
    ids: Record<string, string>;
  }> {
    if (this.dispatched) {
      throw new JobsError(
        `B${this.plan.where.slice(1)} was already dispatched. Potential fix: call batches.create() again for another batch.`,
      );
    }
    const where = `${this.plan.where}.dispatch()`;
    const manager = checkManager(where, checkOptions(where, options, '{ manager }', WRITE_OPTIONS_SHAPE)?.manager);
    this.dispatched = true;
    const { ids, batchId } = await this.writer.dispatchGraph(this.plan, manager);
    return { id: batchId!, ids: Object.fromEntries(Object.entries(ids).filter(([key]) => !key.startsWith(UNKEYED))) };
  }

  private callback(on: DependencyOn, job: Type | string, payload: unknown, options: StepOptions): this {
    const call = on === 'success' ? 'then' : on === 'failure' ? 'catch' : 'finally';
    this.checkOpen(call);
    // Checked in full at dispatch(), when the whole batch is built; a key no option has is refused
    // here already, at the line that wrote it.
    checkOptions(`${this.plan.where}.${call}(${jobLabel(job)})`, options, '{ delay: 5000 }', ENQUEUE_OPTIONS_SHAPE);
    this.plan.batch.callbacks.push({ on, job, payload, options });
    return this;
  }

  /** The batch is written whole at dispatch(): a job added later would never be written. */
  private checkOpen(call: string): void {
    if (this.dispatched) {
      throw new JobsError(
        `${this.plan.where}.${call}(): the batch was already dispatched, so this would be lost. ` +
          `Potential fix: add everything before dispatch(), or call batches.create() again for another batch.`,
      );
    }
  }
}

/** Starts batches: `batches.create('import').add(…).then(…).dispatch()`. */
@Injectable()
export class BatchBuilder {
  constructor(private readonly writer: WorkflowWriter) {}

  /**
   * A new batch draft; `name` (optional) is stored as the batch's name and shown in lists and
   * messages. Nothing is written until its `dispatch()`. A name that is blank, over 200 characters
   * or holds control characters throws a JobsError.
   */
  create(name?: string): BatchDraft {
    if (name !== undefined) checkName('batches.create()', 'name', name, 'import-october');
    return new BatchDraft(this.writer, name ?? null);
  }
}
