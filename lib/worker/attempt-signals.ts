import { checkSignalName, describeValue, JobsError, type ClaimedJob, type Clock } from '../model/index.js';
import type { SignalStorage } from '../storage/jobs/signals/signal-storage.interface.js';
import type { AttemptSteps } from './attempt-steps.js';
import { SleepJob } from './attempt-steps.js';
import { resultJson } from './result-json.js';

/** The longest wait for a signal, and the wait when none is given: a year, as for a sleep. */
export const MAX_SIGNAL_WAIT_MS = 365 * 24 * 3_600_000;

/** The step names signals and published values are recorded under: apart from the handler's own. */
export const signalStep = (name: string) => `signal:${name}`;
export const eventStep = (key: string, n: number) => `event:${key}#${n}`;

/**
 * How ctx.waitForSignal() ends the attempt while no signal has come: a snooze
 * until its deadline, the attempt given back. The outcome's write makes the
 * job due at once instead when the signal came while the attempt was ending.
 */
export class SignalWait extends SleepJob {
  constructor(
    readonly signal: string,
    until: Date,
    now: Date,
    what = `ctx.waitForSignal('${signal}')`,
  ) {
    super(signalStep(signal), until, now);
    this.message = `${what} until ${until.toISOString()}`;
  }
}

/** What the signal calls of one attempt need of the attempt that runs them. */
export interface SignalHost {
  readonly job: ClaimedJob;
  readonly workerId: string;
  readonly clock: Clock;
  readonly storage: SignalStorage;
  readonly maxResultBytes: number;
  readonly steps: AttemptSteps;
  lost(): Error;
  checkRunning(): void;
}

/** ctx.waitForSignal() and ctx.setEvent() for one attempt, recorded as steps of the job. */
export class AttemptSignals {
  /** How many times this run set each key: a step name per write, so a replay skips each one. */
  private readonly sets = new Map<string, number>();

  constructor(private readonly host: SignalHost) {}

  async waitForSignal<T>(given: unknown, options: unknown): Promise<T | null> {
    const { job, clock, storage, steps, workerId } = this.host;
    const where = `ctx.waitForSignal(${typeof given === 'string' ? JSON.stringify(given) : '…'}) in job "${job.name}" (${job.id})`;
    const name = checkSignalName(where, 'name', given, 'approval');
    const timeout = waitTimeout(where, options);
    const step = signalStep(name);
    this.host.steps.claim(where, step, "ctx.waitForSignal('approval') once per run");
    this.host.checkRunning();
    const stored = (await steps.recorded()).get(step);
    if (stored && stored.kind !== 'signal') throw clash(where, step);
    if (stored?.result) return this.payload<T>(stored.result, where);
    const now = clock.now();
    const deadline = stored?.wakeAt ?? new Date(now.getTime() + timeout);
    // Flagged before looking: a signal that comes after the look finds the flag and wakes the job.
    if (!(await storage.beginWait(workerId, job, name, step, now, deadline))) throw this.host.lost();
    const found = await storage.consume(workerId, job, name, step, now);
    if (found.outcome === 'lost') throw this.host.lost();
    if (found.outcome === 'consumed') return this.payload<T>({ payload: found.payload }, where);
    if (deadline <= now) {
      if (!(await storage.timeOut(workerId, job, step, now))) throw this.host.lost();
      return null;
    }
    throw new SignalWait(name, deadline, now);
  }

  async setEvent(given: unknown, value: unknown): Promise<void> {
    const { job, clock, storage, steps, workerId } = this.host;
    const where = `ctx.setEvent(${typeof given === 'string' ? JSON.stringify(given) : '…'}) in job "${job.name}" (${job.id})`;
    const key = checkSignalName(where, 'key', given, 'payment-url');
    const json = resultJson(where, value ?? null, this.host.maxResultBytes, 'publish an id or a URL, not a document');
    const n = (this.sets.get(key) ?? 0) + 1;
    this.sets.set(key, n);
    const step = eventStep(key, n);
    this.host.steps.claim(where, step, `ctx.setEvent('payment-url', url)`);
    this.host.checkRunning();
    // Published by an earlier attempt: its value stands (a later set of the key, if any, comes after it).
    if ((await steps.recorded()).has(step)) return;
    if (!(await storage.setEvent(workerId, job, key, step, json, clock.now()))) throw this.host.lost();
  }

  private payload<T>(result: unknown, where: string): T | null {
    const { payload } = result as { payload: unknown };
    return (this.host.storage.openPayload(payload, `The signal payload of ${where}`) ?? null) as T | null;
  }
}

function waitTimeout(where: string, options: unknown): number {
  if (options === undefined) return MAX_SIGNAL_WAIT_MS;
  if (options === null || typeof options !== 'object' || Object.keys(options).some((k) => k !== 'timeout')) {
    throw new JobsError(
      `${where}: the options must be { timeout }, got ${describeValue(options)}. Potential fix: ctx.waitForSignal('approval', { timeout: 86_400_000 }).`,
    );
  }
  const { timeout } = options as { timeout?: unknown };
  if (timeout === undefined) return MAX_SIGNAL_WAIT_MS;
  if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0 || timeout > MAX_SIGNAL_WAIT_MS) {
    throw new JobsError(
      `${where}: "timeout" must be a positive number of ms up to a year, got ${describeValue(timeout)}. ` +
        `Potential fix: ctx.waitForSignal('approval', { timeout: 86_400_000 }).`,
    );
  }
  return timeout;
}

function clash(where: string, step: string): JobsError {
  return new JobsError(
    `${where}: ${JSON.stringify(step)} is recorded as another kind of step of this job. Potential fix: name the signal apart from the job's steps.`,
  );
}
