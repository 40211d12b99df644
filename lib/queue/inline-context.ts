import {
  describeValue,
  JobsError,
  NO_CONTEXT,
  stepKey,
  type JobContext,
  type JobContextData,
  type JobLogger,
  type StepOptions,
} from '../model/index.js';

/** What the context of an inline run knows of it. */
export interface InlineRun {
  /** A fresh UUIDv7, stored nowhere: no job row is written for an inline run. */
  readonly jobId: string;
  readonly name: string;
  /** The queue the job type is declared in, though the run waited in none. */
  readonly queue: string;
  /** `runInline(…)`, as the errors name the call. */
  readonly where: string;
  readonly logger: JobLogger;
  /** Aborted when the job type's `timeout` passes. */
  readonly signal: AbortSignal;
  /** The context an enqueue here would give the job (see defaultContext); none when absent. */
  readonly context?: JobContextData;
}

/** The parents of a job that has none: shared, and frozen so that no handler can add to it. */
const NO_PARENTS: readonly string[] = Object.freeze([]);

const ENQUEUE_IT = 'enqueue the job (JobQueue.enqueue()) when it needs what a worker gives it';

/**
 * The JobContext of `JobQueue.runInline()`: one attempt, the first and the
 * last, of a job that has no row. What needs the row (a step's record, a
 * durable sleep, the success written in the handler's transaction, a
 * continuation or a batch member written with the outcome, a snooze back
 * to the queue) is refused with a JobsError saying so, rather than done
 * half: a step run without its record would look durable and not be.
 */
export function inlineContext(run: InlineRun): JobContext {
  const refuse = (call: string, why: string, fix: string): JobsError =>
    new JobsError(`${call} in ${run.where}: ${why}. Potential fix: ${fix}.`);
  return {
    jobId: run.jobId,
    name: run.name,
    queue: run.queue,
    attempt: 1,
    // An inline run is never retried: its first attempt is its last.
    maxAttempts: 1,
    batchId: null,
    parentIds: NO_PARENTS,
    context: run.context ?? NO_CONTEXT,
    signal: run.signal,
    logger: run.logger,
    stepKey: (name) => stepKey(run.jobId, name),
    snooze(): never {
      throw refuse(
        'ctx.snooze()',
        'a snooze puts the job back in its queue for a later attempt, and an inline run has neither',
        `${ENQUEUE_IT}, or call runInline() again later yourself`,
      );
    },
    progress: async (fraction) => {
      if (typeof fraction !== 'number' || !(fraction >= 0 && fraction <= 1)) {
        throw new JobsError(
          `ctx.progress() in ${run.where}: progress is a fraction from 0 to 1, got ${describeValue(fraction)}. ` +
            'Potential fix: ctx.progress(done / total), e.g. ctx.progress(0.5).',
        );
      }
      // Nothing to write it to: checked as a worker checks it, then dropped.
    },
    step: (async () => {
      throw refuse(
        'ctx.step()',
        'a step is recorded so that a later attempt skips it, and an inline run records nothing and has no later attempt',
        `${ENQUEUE_IT}; a handler meant for runInline() does its work directly`,
      );
    }) as JobContext['step'],
    sleep: async () => {
      throw refuse(
        'ctx.sleep()',
        'a durable sleep ends the attempt and wakes the job from its row later, and an inline run has no row',
        ENQUEUE_IT,
      );
    },
    sleepUntil: async () => {
      throw refuse(
        'ctx.sleepUntil()',
        'a durable sleep ends the attempt and wakes the job from its row later, and an inline run has no row',
        ENQUEUE_IT,
      );
    },
    invoke: (async () => {
      throw refuse(
        'ctx.invoke()',
        'the child is enqueued as a recorded step and the parent waits for it in the queue, and an inline run has neither',
        `${ENQUEUE_IT}, or runInline() the child yourself`,
      );
    }) as JobContext['invoke'],
    // Nothing was recorded before an inline run: it is new code's from its start.
    patched: async () => true,
    waitForSignal: async () => {
      throw refuse(
        'ctx.waitForSignal()',
        'a signal is sent to a job row and consumed by an attempt of it, and an inline run has no row',
        ENQUEUE_IT,
      );
    },
    setEvent: async () => {
      throw refuse(
        'ctx.setEvent()',
        'a published value belongs to a job row, read by getEvent(id), and an inline run has no row',
        ENQUEUE_IT,
      );
    },
    transaction: async () => {
      throw refuse(
        'ctx.transaction()',
        "it writes the job's success in the handler's transaction, and an inline run has no job row to write it to",
        `open the transaction yourself (dataSource.transaction()), or ${ENQUEUE_IT}`,
      );
    },
    continueWith: () => {
      throw refuse(
        'ctx.continueWith()',
        "a continuation is written with the job's outcome, and an inline run writes none",
        'enqueue the follow-up with JobQueue.enqueue() once runInline() has returned',
      );
    },
    addToBatch: async (_job: unknown, _payload: unknown, _options?: StepOptions) => {
      throw refuse(
        'ctx.addToBatch()',
        'an inline run belongs to no batch',
        'start the job from batches.create().add(…) to run it as a batch member',
      );
    },
  };
}
