import { Injectable, type Type } from '@nestjs/common';
import { checkName, checkOptions, JobsError, type JobHandler, type PayloadOf } from '../model/index.js';
import { jobLabel, refuseAwait } from './flow-drafts.js';
import { checkManager } from './manager.js';
import { ENQUEUE_OPTIONS_SHAPE, WRITE_OPTIONS_SHAPE, type DependencyOn, type WriteOptions } from './queue-options.js';
import { WorkflowWriter, type BatchPlan, type StepOptions } from './workflow-writer.js';

/**
 * A batch being described. Nothing is written until `dispatch()`, which
 * writes the batch, its members and its callbacks in one statement.
 */
export class BatchDraft {
  private readonly plan: BatchPlan;
  private dispatched = false;

  constructor(
    private readonly writer: WorkflowWriter,
    name: string | null,
  ) {
    this.plan = { name, members: [], callbacks: [], allowFailures: false };
  }

  /**
   * Adds a member: a job (class or name), its payload and its options. Members run in parallel once
   * dispatched. A key no option has, or a call after `dispatch()`, throws a JobsError; the rest of
   * the member is checked at `dispatch()`.
   */
  add<H extends JobHandler>(job: Type<H> | string, payload: PayloadOf<H>, options: StepOptions = {}): this {
    this.checkOpen('add');
    this.checkStep('add', job, options);
    this.plan.members.push({ job, payload, options });
    return this;
  }

  /** Runs once every member has succeeded. */
  then<H extends JobHandler>(job: Type<H> | string, payload: PayloadOf<H>, options: StepOptions = {}): this {
    refuseAwait(`batch${this.plan.name ? ` "${this.plan.name}"` : ''}`, job, payload);
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
    this.plan.allowFailures = true;
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
  }> {
    if (this.dispatched) {
      throw new JobsError(
        `Batch${this.plan.name ? ` "${this.plan.name}"` : ''} was already dispatched. Potential fix: call batches.create() again for another batch.`,
      );
    }
    const where = `batch${this.plan.name ? ` "${this.plan.name}"` : ''}.dispatch()`;
    const manager = checkManager(where, checkOptions(where, options, '{ manager }', WRITE_OPTIONS_SHAPE)?.manager);
    this.dispatched = true;
    return this.writer.dispatchBatch(this.plan, manager);
  }

  private callback(on: DependencyOn, job: Type | string, payload: unknown, options: StepOptions): this {
    const call = on === 'success' ? 'then' : on === 'failure' ? 'catch' : 'finally';
    this.checkOpen(call);
    this.checkStep(call, job, options);
    this.plan.callbacks.push({ on, job, payload, options });
    return this;
  }

  /**
   * A job's options are checked in full at dispatch(), when the whole batch
   * is built; a key no option has is refused here already, at the line
   * that wrote it.
   */
  private checkStep(call: string, job: unknown, options: StepOptions): void {
    const where = `batch${this.plan.name ? ` "${this.plan.name}"` : ''}.${call}(${jobLabel(job)})`;
    checkOptions(where, options, '{ delay: 5000 }', ENQUEUE_OPTIONS_SHAPE);
  }

  /** The batch is written whole at dispatch(): a job added later would never be written. */
  private checkOpen(call: string): void {
    if (this.dispatched) {
      throw new JobsError(
        `batch${this.plan.name ? ` "${this.plan.name}"` : ''}.${call}(): the batch was already dispatched, so this would be lost. ` +
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
