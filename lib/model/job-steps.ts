import { describeValue } from './validation.js';
import { JobsError } from './errors.js';

/** The longest step or sleep name: it is a key, not a place for data. */
export const MAX_STEP_NAME_LENGTH = 200;

/** What a step record is: a step's result, a sleep's end, or a signal wait's deadline and payload. */
export type StepKind = 'step' | 'sleep' | 'signal';

/** What `ctx.step(name, options, fn)` takes. */
export interface JobStepOptions {
  /**
   * `fn` gets a TypeORM EntityManager in a transaction, and the step's
   * record commits with its writes (see `JobContext.step`).
   */
  transaction: true;
}

/** A finished step or sleep of a job, as `JobQueue.get()` shows it. */
export interface JobStep {
  /** The name given to `ctx.step()`, `ctx.sleep()` or `ctx.sleepUntil()`: unique within the job. */
  name: string;
  /** `step` (ctx.step, ctx.setEvent), `sleep` (ctx.sleep, ctx.sleepUntil) or `signal` (ctx.waitForSignal). */
  kind: StepKind;
  /** The attempt that ran it. */
  attempt: number;
  /** When it was recorded: a step once `fn` returned, a sleep when it began (it ends at `wakeAt`). */
  completedAt: Date;
  /** When a sleep ends (ends, or ended), or when a signal wait times out; null for a step. */
  wakeAt: Date | null;
  /** The stored result, when asked for (`get(id, { stepResults: true })`); absent otherwise. */
  result?: unknown;
}

/** A step or sleep as an attempt reads it back. */
export interface StoredStep {
  name: string;
  kind: StepKind;
  attempt: number;
  result: unknown;
  wakeAt: Date | null;
}

/** A step or sleep to record. */
export interface NewStep {
  name: string;
  kind: 'step' | 'sleep';
  /** Already serialised and size-checked. */
  resultJson: string | null;
  completedAt: Date;
  wakeAt: Date | null;
}

/** The idempotency key of a step: stable across attempts, unique across jobs. */
export function stepKey(jobId: string, name: string): string {
  return `${jobId}:${name}`;
}

/** Refuses a name that cannot be a step's key, saying which job and call it came from. */
export function checkStepName(where: string, name: unknown, example: string): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_STEP_NAME_LENGTH) {
    throw new JobsError(
      `${where}: the name must be a string of 1 to ${MAX_STEP_NAME_LENGTH} characters, got ${describeValue(name)}. ` +
        `Potential fix: ${example}; in a loop, put the item in the name (\`charge-\${item.id}\`).`,
    );
  }
  // Tested like a payload string: jsonb and text refuse NUL, and a lone surrogate cannot be keyed.
  // eslint-disable-next-line no-control-regex
  if (/\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(name)) {
    throw new JobsError(
      `${where}: the name ${JSON.stringify(name)} holds a NUL character or a lone UTF-16 surrogate, which PostgreSQL cannot store. Potential fix: ${example}.`,
    );
  }
  return name;
}
