import type { EntityManager } from 'typeorm';
import type { JobContextData } from './job-context-data.js';
import type { DependencyOn } from './job-state.js';
import type { JobStepOptions } from './job-steps.js';
import type { UniqueWhile } from './records.js';

/** What a running handler receives besides its payload. */
export interface JobLogger {
  /** Logs a message at the `log` level. */
  log(message: string): void;
  /** Logs a warning. */
  warn(message: string): void;
  /** Logs an error; `trace` is its stack, if any. */
  error(message: string, trace?: string): void;
  /** Logs a message at the `debug` level. */
  debug(message: string): void;
}

/** What a running handler receives besides its payload: the attempt, an abort signal, a logger, progress and workflow calls. */
export interface JobContext {
  /** The job's id (a UUIDv7). */
  readonly jobId: string;
  /** The job's name, as in `@Job(name)`. */
  readonly name: string;
  /** The queue it was claimed from. */
  readonly queue: string;
  /** This attempt's number, from 1; snoozed and interrupted attempts count, and `retry()` continues the count. */
  readonly attempt: number;
  /**
   * The attempt after which a failure is final: when `attempt` equals it, an error fails the job for good
   * (each snooze and shutdown hand-back raises it by one, so that they spend no attempt).
   */
  readonly maxAttempts: number;
  /**
   * The batch this job belongs to: as a member, or as one of its
   * then/catch/finally jobs; null for a job outside any batch.
   */
  readonly batchId: string | null;
  /**
   * The jobs this one ran after: its parents in a chain or a flow, or the
   * job whose ctx.continueWith() started it; empty for a job enqueued on its own.
   */
  readonly parentIds: readonly string[];
  /**
   * The job's context: the small JSON object its enqueue gave (`{ context }`), or JobsModule's
   * `contextFrom` read at the enqueue, or the context of the job that started it. Frozen; `{}` when
   * the job has none. An interceptor restores a tenant or a user from it.
   */
  readonly context: JobContextData;
  /** Aborted on timeout, cancellation, lost lease and shutdown; pass it to I/O. */
  readonly signal: AbortSignal;
  /** A Nest Logger whose context is `Job <name>`. */
  readonly logger: JobLogger;
  /**
   * Ends this attempt and puts the job back until `ms` from now without
   * spending an attempt (an API said "not now"); the history shows it
   * snoozed. Never returns: it throws a SnoozeJob for the worker to catch.
   */
  snooze(ms: number, reason?: string): never;
  /** Reports progress in [0, 1]; writes are throttled, the last value always lands. */
  progress(fraction: number, message?: string): Promise<void>;
  /**
   * Adds a member to this job's batch now; the batch's `then` waits for it too. With
   * `beforeDependents: true`, the jobs waiting on this one wait on the new member as well.
   */
  addToBatch<H extends JobHandler>(
    job: JobClass<H> | string,
    payload: PayloadOf<H>,
    options?: StepOptions & PlacementOptions,
  ): Promise<{
    /** The new member's id. */
    id: string;
  }>;
  /**
   * Stages a job to start when this one ends: on 'success' (default),
   * 'failure' (failed for good) or 'always'. It is written in the same
   * transaction as this job's outcome, and only if that outcome matches.
   * A continuation of a batch member is a member of that batch: the batch's
   * counts and its then/catch/finally wait for it. With
   * `beforeDependents: true`, the jobs waiting on this one wait on it too.
   */
  continueWith<H extends JobHandler>(
    job: JobClass<H> | string,
    payload: PayloadOf<H>,
    options?: StepOptions & PlacementOptions & { on?: DependencyOn },
  ): void;
  /**
   * Runs `fn` once per job: its result (JSON, as a job's result) is written
   * before this returns, by the attempt that owns the job only. A later
   * attempt (after a crash, a retry, a sleep or a snooze) gets the stored
   * result and `fn` is not called again. A step that throws records nothing
   * and fails the attempt like any error. Names are unique within a run
   * (1 to 200 characters). What this returns is the result as stored: the
   * JSON round trip of what `fn` returned, on the first run as on a replay.
   *
   * Between the step's work and its record a crash still runs the step
   * again: hand `ctx.stepKey(name)` to an external API as its idempotency key.
   */
  step<T>(name: string, fn: () => Promise<T> | T): Promise<T>;
  /**
   * A transactional step: `fn` gets a TypeORM EntityManager in a transaction
   * (the one of ctx.transaction() when called inside it, else its own), and
   * the step's record is written in that transaction: its database writes
   * and its record commit together, or neither does.
   */
  step<T>(name: string, options: JobStepOptions, fn: (manager: EntityManager) => Promise<T>): Promise<T>;
  /** `<job id>:<name>`: the same on every attempt of this job, for an external API's idempotency key. */
  stepKey(name: string): string;
  /**
   * A durable wait: the attempt ends, the job goes back to the queue until
   * `ms` from now without spending an attempt or holding a worker's slot,
   * and the next attempt runs the handler from the top, every finished step
   * answered from storage and this sleep already done. Never returns in the
   * attempt that starts it; returns at once on the one after it.
   */
  sleep(name: string, ms: number): Promise<void>;
  /** ctx.sleep() until a point in time. */
  sleepUntil(name: string, until: Date): Promise<void>;
  /**
   * Enqueues `job` as a child of this one, exactly once (the enqueue is a
   * step, `invoke:<name>#<n>`, whose record commits with the child's row),
   * and waits until the child has ended: the attempt ends as for ctx.sleep()
   * and the job waits in the queue without a slot or a spent attempt, made
   * due when the child ends, on whichever instance. Resolves with the
   * child's result; a child that failed for good, was cancelled or skipped
   * rejects with a `ChildJobFailedError` (its id, state and last error),
   * which the handler may catch and which, uncaught, fails this job at once.
   * Cancelling this job cancels the child it waits on. `options` are the
   * child's, as `enqueue()` takes them, but `after`, `manager` and `unique`.
   */
  invoke<H extends JobHandler>(
    job: JobClass<H> | string,
    payload: PayloadOf<H>,
    options?: StepOptions,
  ): Promise<Awaited<ReturnType<H['run']>>>;
  /**
   * Whether this run takes the path of a change named `name`, for changing a
   * handler with steps while jobs are mid-way: true for a job that had
   * recorded no step before it first asked (a new job, or one that never got
   * that far under the old code), false for one whose earlier attempts
   * recorded steps under the code before the change. The answer is recorded
   * as the step `patch:<name>`, so every later attempt of the job gets the
   * same one. Once no job from before the change is left, drop the call and
   * keep the new path. See the Steps page, "Changing a handler".
   */
  patched(name: string): Promise<boolean>;
  /**
   * Waits for a signal sent to this job with `JobQueue.signal(id, name, payload)`
   * and returns its payload (null for a signal without one), or null once
   * `timeout` ms (at most a year, the default) have passed. The oldest
   * signal of the name not yet consumed is consumed, whether it was sent
   * before the job started, while it ran or while it waited. While no signal
   * has come the attempt ends like ctx.sleep(): the job waits in the queue
   * without holding a worker's slot or spending an attempt, and is made due
   * when the signal arrives (or at the timeout); the next attempt runs the
   * handler from the top, every finished step answered from storage. The
   * wait is recorded as a step (`signal:<name>`), so a later attempt gets
   * the same value and consumes nothing more; a name is waited for once per
   * run.
   */
  waitForSignal<T = unknown>(name: string, options?: { timeout?: number }): Promise<T | null>;
  /**
   * Publishes `value` (JSON, bounded like a step's result) under `key` for
   * this job, the last write of a key winning; `JobQueue.getEvent(id, key)`
   * reads it from anywhere. Each call is recorded as a step
   * (`event:<key>#<n>`), so a later attempt does not publish it again.
   */
  setEvent(key: string, value: unknown): Promise<void>;
  /**
   * Runs `fn` in a transaction on the module's DataSource and writes this
   * job's success, with `fn`'s result as the job's result, in the same
   * transaction (fenced by this worker and attempt), then commits: the
   * handler's writes and the job's success commit together, so they happen
   * once even across crashes and lost leases. A lost fence rolls `fn`'s
   * writes back and the attempt ends as lost; an error in `fn` rolls them
   * back and the attempt fails as usual. Call it once, last: the job has
   * succeeded when it returns.
   */
  transaction<T>(fn: (manager: EntityManager) => Promise<T>): Promise<T>;
}

/** A class, as `@Job` handlers are passed to `enqueue()` and friends. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type JobClass<H = unknown> = new (...args: any[]) => H;

/** Where work a job adds (ctx.addToBatch, ctx.continueWith) stands among the jobs waiting on it. */
export interface PlacementOptions {
  /**
   * The jobs waiting on the adding job (its flow or chain successors, jobs enqueued `after` it) wait
   * on the new job too: for its success where they wait for the adder's success, for its end
   * otherwise. Default false: the new job runs beside them.
   */
  beforeDependents?: boolean;
}

/** Per-job options, wherever a job is started. */
export interface StepOptions {
  /** Milliseconds from now before the job may run. */
  delay?: number;
  /** An absolute time before which the job does not run. */
  runAt?: Date;
  /** Higher runs first. */
  priority?: number;
  /** The queue it waits in; default its job type's queue (`default` unless declared). */
  queue?: string;
  /** Attempts in all, the first included; default its job type's `maxAttempts`. */
  maxAttempts?: number;
  /** Milliseconds one attempt may run. */
  timeout?: number;
  /**
   * A tenant (or any key to share fairly by): claims rotate across the
   * groups with due work, and a group holding more than its share of the
   * queue's running jobs is served after the others.
   */
  group?: string;
  /** At most one job of this key runs at a time, across instances; the others wait in enqueue order. */
  serialKey?: string;
  /** One job per key at a time: a duplicate enqueue returns the existing job instead. */
  unique?: UniqueOptions;
  /** Past this, the job does not start or retry: it fails with a DeadlineExceededError. */
  deadline?: Date;
  /**
   * The job's context, read by its handler as `ctx.context`: a plain object of JSON values of at most
   * 8 KiB (MAX_CONTEXT_BYTES), sealed with the payload when the job is encrypted. Left out, the job
   * takes the context of the job whose handler enqueues it (or of the workflow step before it), else
   * JobsModule's `contextFrom`; `null` gives it none. A context given here replaces the inherited one.
   */
  context?: Record<string, unknown> | null;
}

/** A unique key for a job: while a job holds it, another enqueue of the key returns that job instead. */
export interface UniqueOptions {
  /** The key (at most 256 characters); jobs of any name share the key space. */
  key: string;
  /**
   * How long the key is held, by the job's state: while it is queued or
   * waiting ('queued'), also while it runs ('queued-or-active', the
   * default), or until it succeeded ('until-succeeded': a failed job holds
   * it until retried or pruned).
   */
  while?: UniqueWhile;
  /**
   * Instead of by state: one job per key per window of this many ms
   * (windows aligned to the clock, as a throttle). Not with `while`.
   */
  for?: number;
  /**
   * A key held by state is held at most this many ms: an enqueue with a
   * ttl that finds the key held by a job enqueued longer ago than that
   * (a stuck job, still queued or running) takes the key from it and writes
   * its own job. With `while` (or its default), not with `for`.
   */
  ttl?: number;
  /**
   * A duplicate replaces the payload and run time of the waiting job
   * holding the key (a debounce), unless that job already runs.
   */
  replace?: boolean;
}

/** What a `@Job` class implements: `run` for each attempt, and optionally `onFailure` once the job has failed for good. */
export interface JobHandler<Payload = unknown, Result = unknown> {
  /**
   * Runs one attempt. What it returns becomes the job's result, stored as JSON. An error it throws
   * fails the attempt, retried while attempts remain unless it is a PermanentJobError; a SnoozeJob
   * snoozes the job instead.
   */
  run(payload: Payload, ctx: JobContext): Promise<Result> | Result;
  /** Runs once, when the job has failed for good (no attempt left, or a PermanentJobError). */
  onFailure?(payload: Payload, error: Error, ctx: JobContext): Promise<void> | void;
}

/** The payload type a handler class accepts, read from its `run` signature. */
export type PayloadOf<H> = H extends {
  /** A handler's `run`, whose first parameter's type is the payload's. */
  run(payload: infer P, ...rest: never[]): unknown;
}
  ? P
  : never;
