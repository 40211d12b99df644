import type { EntityManager } from 'typeorm';
import {
  checkStepName,
  describeValue,
  JobsError,
  SnoozeJob,
  type ClaimedJob,
  type Clock,
  type JobStepOptions,
  type NewStep,
  type StoredStep,
} from '../model/index.js';
import type { StepStorage } from '../storage/jobs/step-storage.interface.js';
import type { StorageTx, TxScope } from '../storage/sql/storage-tx.interface.js';
import { resultJson } from './result-json.js';

/** A step's result is stored whole and read back on every later attempt. */
const STEP_RESULT_FIX =
  'return what later steps need (an id, a status) and keep the rest in a table of your own; the step was not recorded and would run again on every attempt';

/** A sleep longer than a year is a bug, not a plan (as for ctx.snooze). */
const MAX_SLEEP_MS = 365 * 24 * 3_600_000;

/**
 * How ctx.sleep() ends the attempt: a snooze until the sleep's own wake
 * time, so the attempt is given back and the job waits out of any slot.
 */
export class SleepJob extends SnoozeJob {
  constructor(
    readonly step: string,
    readonly until: Date,
    now: Date,
  ) {
    super(Math.max(0, until.getTime() - now.getTime()), `ctx.sleep('${step}') until ${until.toISOString()}`);
  }
}

/** What the steps of one attempt need of the attempt that runs them. */
interface StepHost {
  readonly job: ClaimedJob;
  readonly workerId: string;
  readonly clock: Clock;
  readonly storage: StepStorage;
  readonly maxResultBytes: number;
  /** Throws why the attempt was stopped, if it was: a stopped attempt starts no more steps. */
  checkRunning(): void;
  /** Stops the attempt as one whose lease is lost; the error its step throws. */
  lost(): Error;
  /** The manager of ctx.transaction() while its body runs: a transactional step joins it. */
  openTransaction(): EntityManager | null;
  /** The testing kit's dieAfterStep: true to stop between a step's work and its record. */
  dieAfterStep?(step: string): boolean;
}

/**
 * ctx.step() and ctx.sleep() for one attempt. The job's recorded steps are
 * read once, on the first call, so a handler without steps costs nothing.
 */
export class AttemptSteps {
  private loaded: Promise<Map<string, StoredStep>> | null = null;
  /** Names used in this run: a second call with one is a mistake, not a replay. */
  private readonly used = new Set<string>();
  /** ctx.patched() answers of this run: asked again, the same answer. */
  private readonly patches = new Map<string, boolean>();

  constructor(private readonly host: StepHost) {}

  async step<T>(name: string, second: unknown, third: unknown): Promise<T> {
    const { job } = this.host;
    const where = `ctx.step(${typeof name === 'string' ? JSON.stringify(name) : '…'}) in job "${job.name}" (${job.id})`;
    const { fn, transactional } = stepArguments(where, second, third);
    this.claim(where, name, "ctx.step('charge', () => payments.charge(order))");
    this.host.checkRunning();
    const stored = (await this.recorded()).get(name);
    if (stored) {
      if (stored.kind !== 'step') throw kindClash(where, name, 'a sleep');
      return stored.result as T;
    }
    const work = async (manager: EntityManager | undefined, withSuccess: boolean): Promise<string> => {
      const value = await (fn as (m?: EntityManager) => unknown)(manager);
      return this.record(where, name, value, manager, withSuccess);
    };
    let json: string;
    if (!transactional) json = await work(undefined, false);
    else {
      const open = this.host.openTransaction();
      json = open ? await work(open, true) : await this.host.storage.handlerTransaction((m) => work(m, false));
    }
    return JSON.parse(json) as T;
  }

  /**
   * A step whose writes are all the library's own (ctx.invoke()'s enqueue):
   * they and the step's record commit in one transaction on the worker's
   * connections. `fresh` tells the caller whether `fn` ran in this attempt.
   */
  async ownStep<T>(
    name: string,
    where: string,
    example: string,
    fn: (tx: StorageTx) => Promise<T>,
  ): Promise<{ value: T; fresh: boolean }> {
    this.claim(where, name, example);
    this.host.checkRunning();
    const stored = (await this.recorded()).get(name);
    if (stored) {
      if (stored.kind !== 'step') throw kindClash(where, name, 'a sleep');
      return { value: stored.result as T, fresh: false };
    }
    const value = await this.host.storage.workerTransaction(async (tx) => {
      const v = await fn(tx);
      await this.record(where, name, v, tx, false);
      return v;
    });
    return { value, fresh: true };
  }

  /** Records a step's result, in `tx` when given; the JSON it stored. */
  private async record(
    where: string,
    name: string,
    value: unknown,
    tx: TxScope | undefined,
    withSuccess: boolean,
  ): Promise<string> {
    const json = resultJson(where, value, this.host.maxResultBytes, STEP_RESULT_FIX);
    if (this.host.dieAfterStep?.(name)) throw this.host.lost();
    const step: NewStep = { name, kind: 'step', resultJson: json, completedAt: this.host.clock.now(), wakeAt: null };
    const { storage, workerId, job } = this.host;
    if (!(await storage.recordStep(workerId, job, step, tx, withSuccess))) throw this.host.lost();
    return json;
  }

  /** ctx.sleep(name, ms) and ctx.sleepUntil(name, date): `wake` is computed only for a new sleep. */
  async sleep(name: string, wake: (now: Date) => Date, call: string): Promise<void> {
    const { job, clock } = this.host;
    const where = `${call}(${typeof name === 'string' ? JSON.stringify(name) : '…'}) in job "${job.name}" (${job.id})`;
    this.claim(where, name, `${call}('cooling-off', 86_400_000)`);
    this.host.checkRunning();
    const stored = (await this.recorded()).get(name);
    const now = clock.now();
    if (stored) {
      if (stored.kind !== 'sleep') throw kindClash(where, name, 'a step');
      // Woken before its time (JobsAdmin.runNow): the rest of it is slept, not skipped.
      if (stored.wakeAt! > now) throw new SleepJob(name, stored.wakeAt!, now);
      return;
    }
    const until = wake(now);
    const step: NewStep = { name, kind: 'sleep', resultJson: null, completedAt: now, wakeAt: until };
    if (!(await this.host.storage.recordStep(this.host.workerId, job, step))) throw this.host.lost();
    if (until > now) throw new SleepJob(name, until, now);
  }

  /**
   * ctx.patched(name): true for a run of code that has the change `name`
   * from its first recorded step on, false for a job that recorded steps
   * before it met the call (it ran under the code before the change).
   * Recorded as the step `patch:<name>`, so every later attempt decides alike.
   */
  async patched(name: unknown): Promise<boolean> {
    const { job } = this.host;
    const where = `ctx.patched(${typeof name === 'string' ? JSON.stringify(name) : '…'}) in job "${job.name}" (${job.id})`;
    checkStepName(where, name, "ctx.patched('tax-v2')");
    const step = `patch:${name as string}`;
    checkStepName(where, step, "ctx.patched('tax-v2')");
    const decided = this.patches.get(step);
    if (decided !== undefined) return decided;
    this.host.checkRunning();
    const recorded = await this.recorded();
    const stored = recorded.get(step);
    // Steps of earlier attempts without the marker: those attempts ran the code before the change.
    const value = stored ? stored.result === true : recorded.size === 0;
    if (!stored) {
      const record: NewStep = {
        name: step,
        kind: 'step',
        resultJson: JSON.stringify(value),
        completedAt: this.host.clock.now(),
        wakeAt: null,
      };
      if (!(await this.host.storage.recordStep(this.host.workerId, job, record))) throw this.host.lost();
    }
    this.patches.set(step, value);
    return value;
  }

  /** Takes `name` for this run: a second use of it in one run is refused. */
  claim(where: string, name: unknown, example: string): asserts name is string {
    checkStepName(where, name, example);
    if (this.used.has(name as string)) {
      throw new JobsError(
        `${where}: the name ${JSON.stringify(name)} was already used in this run; each step and sleep needs a name of its own, ` +
          `or a later attempt could not tell them apart. Potential fix: name each call (\`charge-\${item.id}\` in a loop).`,
      );
    }
    this.used.add(name as string);
  }

  /** The job's recorded steps, read once per attempt. */
  recorded(): Promise<Map<string, StoredStep>> {
    // A first attempt has nothing to read: steps are recorded by attempts, every later attempt
    // carries a higher number (a retry, a rescue, a snooze or a sleep counts on), and a claim
    // handed back before it started gives its number back with nothing recorded.
    if (!this.loaded && this.host.job.attempt <= 1) this.loaded = Promise.resolve(new Map());
    if (!this.loaded) {
      const load = this.host.storage.loadSteps(this.host.job.id).then((rows) => new Map(rows.map((r) => [r.name, r])));
      // A failed read is not kept: the attempt fails with it, and nothing here may remember it.
      load.catch(() => (this.loaded = null));
      this.loaded = load;
    }
    return this.loaded;
  }
}

function stepArguments(
  where: string,
  second: unknown,
  third: unknown,
): { fn: (manager?: EntityManager) => unknown; transactional: boolean } {
  if (typeof second === 'function') {
    if (third !== undefined) {
      throw new JobsError(
        `${where}: options go before the function. Potential fix: ctx.step(name, { transaction: true }, (manager) => …).`,
      );
    }
    return { fn: second as () => unknown, transactional: false };
  }
  const options = second as JobStepOptions | null;
  if (
    options === null ||
    typeof options !== 'object' ||
    options.transaction !== true ||
    Object.keys(options).some((k) => k !== 'transaction')
  ) {
    throw new JobsError(
      `${where}: the second argument must be the step's function or { transaction: true }, got ${describeValue(second)}. ` +
        `Potential fix: ctx.step(name, () => work()), or ctx.step(name, { transaction: true }, (manager) => manager.insert(…)).`,
    );
  }
  if (typeof third !== 'function') {
    throw new JobsError(
      `${where}: a transactional step needs its function after the options, got ${describeValue(third)}. ` +
        `Potential fix: ctx.step(name, { transaction: true }, (manager) => manager.insert(…)).`,
    );
  }
  return { fn: third as (manager?: EntityManager) => unknown, transactional: true };
}

function kindClash(where: string, name: string, other: string): JobsError {
  return new JobsError(
    `${where}: ${JSON.stringify(name)} is recorded as ${other} of this job, so it cannot be used here too. Potential fix: give the step and the sleep different names.`,
  );
}

/** Checks a sleep's duration or end, for ctx.sleep() and ctx.sleepUntil(). */
export function sleepTarget(
  call: 'ctx.sleep' | 'ctx.sleepUntil',
  job: ClaimedJob,
  value: unknown,
): (now: Date) => Date {
  if (call === 'ctx.sleep') {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_SLEEP_MS) {
      throw new JobsError(
        `ctx.sleep() in job "${job.name}" (${job.id}): the duration must be a number of ms from 0 to ${MAX_SLEEP_MS}, got ${describeValue(value)}. Potential fix: ctx.sleep('cooling-off', 24 * 3_600_000).`,
      );
    }
    return (now) => new Date(now.getTime() + value);
  }
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw new JobsError(
      `ctx.sleepUntil() in job "${job.name}" (${job.id}): the end must be a valid Date, got ${describeValue(value)}. Potential fix: ctx.sleepUntil('renewal', new Date('2027-01-01T00:00:00Z')).`,
    );
  }
  return (now) => {
    if (value.getTime() - now.getTime() > MAX_SLEEP_MS) {
      throw new JobsError(
        `ctx.sleepUntil() in job "${job.name}" (${job.id}): ${value.toISOString()} is more than a year away. Potential fix: a recurring schedule (@Cron) for waits that long.`,
      );
    }
    return value;
  };
}
