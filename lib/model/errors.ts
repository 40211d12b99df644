import type { JobState } from './job-state.js';
/**
 * Every error the library throws at a caller: a call-site check, a start-up
 * check, an environment it cannot use (the embedded server, a DataSource that
 * is not PostgreSQL), a database that failed the call. Its message names the
 * thing and the fix; `cause` holds what it wraps, when there is one.
 *
 * What a job's attempt ends with (`PermanentJobError`, `JobTimeoutError`,
 * `JobCancelledError`, `LeaseLostError`, `DeadlineExceededError`, and the
 * `SnoozeJob` signal) is not a JobsError: those are outcomes recorded on the
 * job, not a caller's mistake, and code that treats a JobsError as misuse
 * (`JobsErrorFilter` answers it with a 400) must not count them.
 */
export class JobsError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'JobsError';
  }
}

/** A call named a job, batch or schedule that does not exist (over HTTP: a 404). */
export class JobsNotFoundError extends JobsError {
  constructor(message: string) {
    super(message);
    this.name = 'JobsNotFoundError';
  }
}

/**
 * Thrown by a handler to fail the job at once, without spending the remaining
 * attempts: retrying cannot fix a malformed payload or a deleted record.
 */
export class PermanentJobError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PermanentJobError';
  }
}

/**
 * What `ctx.invoke()` throws when the child it waited for did not succeed:
 * it failed for good, was cancelled or skipped. The parent may catch it;
 * uncaught, it fails the parent at once (a retry would find the same child),
 * as a PermanentJobError does.
 */
export class ChildJobFailedError extends PermanentJobError {
  constructor(
    /** The child's id. */
    readonly childId: string,
    /** How the child ended: `failed`, `cancelled` or `skipped`. */
    readonly state: JobState,
    /** The child's last error, as stored; null when it has none. */
    readonly lastError: SerializedError | null,
  ) {
    super(`The child job ${childId} ${state}${lastError ? `: ${lastError.message}` : ''}`);
    this.name = 'ChildJobFailedError';
  }
}

/** The error an attempt fails with when it ran past its `timeout`. */
export class JobTimeoutError extends Error {
  constructor(jobName: string, timeoutMs: number) {
    super(`Job "${jobName}" timed out after ${timeoutMs} ms`);
    this.name = 'JobTimeoutError';
  }
}

/** The error an attempt ends with when `cancel()` stopped it while it ran. */
export class JobCancelledError extends Error {
  constructor(jobId: string) {
    super(`Job ${jobId} was cancelled`);
    this.name = 'JobCancelledError';
  }
}

/**
 * The attempt's lease is gone: the worker stopped renewing it in time (it
 * crashed, stalled or lost the database) and the job was taken back. The
 * worker that lost it sees this as its signal's reason and records nothing;
 * the job's history shows it on the interrupted attempt.
 */
export class LeaseLostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LeaseLostError';
  }
}

/** The job's deadline passed before it could start, or before its next attempt was due. */
export class DeadlineExceededError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeadlineExceededError';
  }
}

/**
 * Thrown by a handler (or by `ctx.snooze(ms)`) to put the job back for
 * later without spending an attempt: "not now", such as an API's 429.
 *
 * Named as an instruction, not an `…Error`: it ends the attempt without a
 * failure. The job goes back to `queued`, its attempt given back; it emits
 * `snoozed`, not `failed` or `retrying`, and neither backoff nor `onFailure`
 * sees it. It extends `Error` only so that `throw` carries it out of any
 * depth of the handler with a stack.
 */
export class SnoozeJob extends Error {
  /** How long the job goes back for, in ms: its next attempt is due that long after this one ends. */
  readonly ms: number;
  constructor(ms: number, reason?: string) {
    super(reason ?? `snoozed for ${ms} ms`);
    this.name = 'SnoozeJob';
    this.ms = ms;
  }
}

/** Why a worker gave a job back while it was running. */
export class WorkerShutdownError extends Error {
  constructor() {
    super('The worker shut down before the job finished; it was handed back');
    this.name = 'WorkerShutdownError';
  }
}

/**
 * A stored value is sealed with a key this process's keyring lacks. A
 * worker meeting it on a job gives the job back unspent for an instance
 * that has the key; readers show a placeholder instead.
 */
export class EncryptionKeyMissingError extends JobsError {
  constructor(
    what: string,
    /** The id of the key the value is sealed with. */
    readonly keyId: string,
  ) {
    super(
      `${what} is encrypted with key '${keyId}', which this process's keyring lacks. ` +
        `Potential fix: add key '${keyId}' to JobsModule's "encryption.keys", or run reencrypt where it is present.`,
    );
    this.name = 'EncryptionKeyMissingError';
  }
}

/**
 * A sealed value does not authenticate under the key it names: it was
 * changed (or corrupted) after it was written. The job it belongs to fails
 * for good: no attempt can trust it.
 */
export class EncryptedValueError extends JobsError {
  constructor(
    what: string,
    /** The id of the key the value names, under which it does not authenticate. */
    readonly keyId: string,
  ) {
    super(
      `${what}: the value encrypted with key '${keyId}' does not authenticate, so it was altered or corrupted after it was written. ` +
        `Potential fix: enqueue the job again; check who can write to the job tables.`,
    );
    this.name = 'EncryptedValueError';
  }
}

/** An error as the job's record keeps it: name, message and stack. */
export interface SerializedError {
  /** The error's `name`; `Error` for a thrown value that is not an Error. */
  name: string;
  /** Its message: a thrown string as it is, another non-Error value as JSON; stored, cut to `maxErrorBytes`. */
  message: string;
  /** Its stack, when an Error with one was thrown; stored, cut to `maxErrorBytes`. */
  stack?: string;
}

/** An error (or any thrown value) as the job's record keeps it. */
export function serializeError(error: unknown): SerializedError {
  if (error instanceof Error) {
    return { name: error.name, message: error.message, stack: error.stack };
  }
  return { name: 'Error', message: typeof error === 'string' ? error : safeString(error) };
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * A public call that failed below the call-site checks: the database did not
 * answer in time, refused the connection, or rejected the statement. The
 * driver's error is the `cause`.
 */
export class JobsDatabaseError extends JobsError {
  constructor(where: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`${where}: the database call failed (${reason}). Potential fix: ${databaseFix(reason)}`);
    this.name = 'JobsDatabaseError';
    (this as { cause?: unknown }).cause = cause;
  }
}

/** What to do about a failed database call, from what the server or the driver said. */
function databaseFix(reason: string): string {
  if (reason.includes('unsupported startup parameter')) {
    return (
      'a connection pooler (PgBouncer) refused a startup parameter of the connection; the library sends none of its own, ' +
      "so remove it from the connection's options (extra.options, extra.statement_timeout) or list it in the " +
      "pooler's ignore_startup_parameters; nothing was written."
    );
  }
  return (
    "check that PostgreSQL is reachable and answering (the error's cause has the driver's details); " +
    'nothing was written unless the call says otherwise.'
  );
}

/**
 * A database failure storage meets below any public call: no connection
 * within `timeouts.connect`, a caller's transaction that ended under it,
 * unique keys that kept changing hands. On its own (in a worker's log, a
 * job's record) it is a JobsDatabaseError of "The jobs database"; a public
 * call puts its own name there instead (`toDatabaseError`). `cause` holds
 * the reason as an Error, as a driver's error would be.
 */
export class StorageFailure extends JobsDatabaseError {
  constructor(reason: string) {
    super('The jobs database', new Error(reason));
    this.name = 'JobsDatabaseError';
  }
}

/**
 * What a public call named `where` throws for an error of its storage work: a
 * JobsError as it is (a StorageFailure named after the call), anything else
 * (the driver's error) wrapped in a JobsDatabaseError.
 */
export function toDatabaseError(where: string, error: unknown): JobsError {
  if (error instanceof StorageFailure) return new JobsDatabaseError(where, error.cause);
  if (error instanceof JobsError) return error;
  return new JobsDatabaseError(where, error);
}

/** Runs a public call's storage work, turning its errors into JobsErrors (`toDatabaseError`). */
export async function databaseCall<T>(where: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw toDatabaseError(where, error);
  }
}
