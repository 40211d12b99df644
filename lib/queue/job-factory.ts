import { Inject, Injectable, type Type } from '@nestjs/common';
import { JobRegistry } from '../discovery/job-registry.js';
import { validateJobOptions } from '../discovery/job.decorator.js';
import {
  applyDeclaredKey,
  checkDate,
  checkGroupRated,
  checkOptions,
  checkKey,
  Clock,
  declaredUnique,
  describeValue,
  uniqueColumns,
  type StepOptions,
  type UniqueColumns,
  type UniqueOptions,
  JobsError,
  JobCipher,
  JobTracing,
  LATEST_TIME,
  uuidv7,
  type JobHandler,
  type NewJob,
} from '../model/index.js';
import { JOB_WRITE_RULES, sealPayload, serializePayload, type JobWriteRules } from '../model/index.js';
import { storedContext } from './job-context-capture.js';
import { ENQUEUE_OPTIONS_SHAPE, type EnqueueOptions } from './queue-options.js';

/** A job, named by its `@Job` class (payload type-checked) or by its name. */
export type JobRef<H = JobHandler> = Type<H> | string;

/**
 * Turns (job, payload, options) into a row, checking everything at the call
 * site: the name is known, the payload is plain JSON within the size limit,
 * the times and numbers make sense.
 */
@Injectable()
export class JobFactory {
  constructor(
    private readonly registry: JobRegistry,
    readonly clock: Clock,
    @Inject(JOB_WRITE_RULES) private readonly writeRules: JobWriteRules,
    private readonly tracing: JobTracing,
    private readonly cipher: JobCipher,
  ) {}

  /**
   * `declared`: the call is an enqueue() or enqueueMany(), which take the
   * job type's `unique` when the call passes none (batch, flow, chain and
   * continuation members are written whole or not at all, so a key the
   * type holds would refuse the whole write; they pass `unique` themselves).
   */
  build(
    job: JobRef,
    payload: unknown,
    given: Omit<EnqueueOptions, 'manager' | 'after'>,
    now: Date,
    declared = false,
  ): NewJob {
    const name = this.resolveName(job);
    const where = `enqueue('${name}')`;
    const options = checkOptions(where, given, '{ delay: 5000 }', ENQUEUE_OPTIONS_SHAPE) ?? {};
    refuseCallOptions(where, options);
    validateJobOptions(where, options);
    const defaults = this.registry.optionsOf(name);
    if (options.queue === undefined && !defaults.queueKnown) {
      throw new JobsError(
        `${where}: "${name}" is an external job listed by name only, so the queue its workers serve is unknown here ` +
          `(it would wait in "${defaults.queue}", maybe forever). Potential fix: externalJobs: { '${name}': { queue: 'its-queue' } } ` +
          `in JobsModule's options, or pass { queue } to this call.`,
      );
    }
    let runAt = now;
    if (options.delay !== undefined) {
      const delay = options.delay;
      if (typeof delay !== 'number' || !Number.isFinite(delay) || delay < 0 || now.getTime() + delay > LATEST_TIME) {
        throw new JobsError(
          `${where}: "delay" must be a number of milliseconds >= 0 that ends before the year 10000, got ${describeValue(delay)}. Potential fix: delay: 5000, or runAt: new Date(...) for an absolute time.`,
        );
      }
      runAt = new Date(now.getTime() + delay);
    }
    if (options.runAt !== undefined) {
      runAt = checkDate(where, 'runAt', options.runAt, "new Date('2026-12-01T09:00:00Z')");
      if (options.delay !== undefined) {
        throw new JobsError(
          `${where}: pass either "delay" or "runAt", not both. Potential fix: keep the one you mean.`,
        );
      }
    }
    const typeUnique = declared && options.unique === undefined ? this.registry.uniqueOf(name) : undefined;
    const unique = typeUnique ? declaredUnique(where, name, typeUnique, payload) : options.unique;
    const id = uuidv7(now.getTime());
    const queue = options.queue ?? defaults.queue;
    const flow = flowControl(where, this.withDeclaredKeys(where, name, options, payload), unique, runAt, now);
    checkGroupRated(where, name, queue, flow.groupKey, this.writeRules.groupRated);
    return {
      ...flow,
      id,
      name,
      queue,
      payloadJson: this.payloadJson(name, payload, defaults.encrypted),
      state: 'queued',
      priority: options.priority ?? defaults.priority,
      runAt,
      maxAttempts: options.maxAttempts ?? defaults.maxAttempts,
      timeoutMs: options.timeout ?? defaults.timeout,
      traceContext: this.tracing.enabled ? this.tracing.capture({ id, name, queue }) : null,
      contextJson: storedContext(where, options.context, this.writeRules.contextFrom, this.cipher, defaults.encrypted),
    };
  }

  /**
   * The call's options with the serial key or group its job type declares,
   * unless the call passes either: its own then replaces the declared one.
   */
  private withDeclaredKeys(where: string, name: string, options: StepOptions, payload: unknown): StepOptions {
    if (options.serialKey !== undefined || options.group !== undefined) return options;
    const { serialKey, group } = this.registry.keysOf(name);
    if (serialKey !== undefined)
      return { ...options, serialKey: applyDeclaredKey(where, name, 'serialKey', serialKey, payload) };
    if (group !== undefined) return { ...options, group: applyDeclaredKey(where, name, 'group', group, payload) };
    return options;
  }

  /** Knows the name of every job this app may start, or says why not. */
  resolveName(job: JobRef): string {
    return this.registry.resolveName(job);
  }

  /** The payload as stored: its JSON, checked against the size limit, and sealed for an encrypted job. */
  private payloadJson(name: string, payload: unknown, encrypted: boolean): string {
    return sealPayload(this.cipher, name, serializePayload(name, payload, this.writeRules.maxPayloadBytes), encrypted);
  }
}

/** The per-job flow-control options, checked and as the row stores them. */
function flowControl(
  where: string,
  options: StepOptions,
  unique: UniqueOptions | undefined,
  runAt: Date,
  now: Date,
): Pick<NewJob, 'groupKey' | 'serialKey' | 'deadline'> & UniqueColumns {
  const groupKey = options.group === undefined ? null : checkKey(where, 'group', options.group, 'tenant-42');
  const serialKey =
    options.serialKey === undefined ? null : checkKey(where, 'serialKey', options.serialKey, 'account-7');
  if (groupKey !== null && serialKey !== null) {
    throw new JobsError(
      `${where}: "serialKey" and "group" on one job: a serial key already decides the order of its jobs, so a group's fair share cannot apply to them. ` +
        `Potential fix: keep one (a serial key per tenant and account, e.g. serialKey: 'tenant-42:account-7', or group alone).`,
    );
  }
  let deadline: Date | null = null;
  if (options.deadline !== undefined) {
    deadline = checkDate(where, 'deadline', options.deadline, 'new Date(Date.now() + 3_600_000)');
    if (deadline <= runAt) {
      throw new JobsError(
        `${where}: "deadline" ${deadline.toISOString()} is not after the job may first run (${runAt.toISOString()}), so it could never start. ` +
          `Potential fix: a later deadline, or an earlier runAt/delay.`,
      );
    }
  }
  return { groupKey, serialKey, deadline, ...uniqueColumns(where, unique, now) };
}

/**
 * "after" and "manager" belong to a whole call. Given per job (an item of
 * enqueueMany, a batch member, a chain or flow step) they used to be
 * ignored: the job ran without waiting for its parent, or was written
 * outside the caller's transaction.
 */
function refuseCallOptions(where: string, options: object): void {
  const o = options as { after?: unknown; manager?: unknown };
  if (o.after !== undefined) {
    throw new JobsError(
      `${where}: "after" is not taken per job here, and the job would run without waiting for its parent. ` +
        `Potential fix: enqueue(job, payload, { after }) for one job, or flow().add(key, job, payload, { after: [keys] }) for several.`,
    );
  }
  if (o.manager !== undefined) {
    throw new JobsError(
      `${where}: "manager" is not taken per job here, and the job would be written outside your transaction. ` +
        `Potential fix: pass it to the call that writes, e.g. enqueueMany(items, { manager }) or dispatch({ manager }).`,
    );
  }
}
