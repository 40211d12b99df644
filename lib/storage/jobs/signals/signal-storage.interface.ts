import type { JobState, SerializedError } from '../../../model/index.js';
import type { TxScope } from '../../sql/storage-tx.interface.js';
import type { HeldJob } from '../outcomes/outcome-storage.interface.js';

/** What sending a signal did: stored (and the job woken if it waited for it), or refused. */
export type SendSignalResult =
  { outcome: 'sent' } | { outcome: 'not-found' } | { outcome: 'finished'; state: JobState };

/** A value a job published, read with the job's state. */
export type EventRead = { outcome: 'not-found' } | { outcome: 'read'; state: JobState; found: boolean; value: unknown };

/** What a consume found: the job was no longer this attempt's, a signal's payload, or nothing yet. */
export type ConsumeResult = { outcome: 'lost' } | { outcome: 'consumed'; payload: unknown } | { outcome: 'none' };

/** How a child of ctx.invoke() stands. */
export interface ChildEnd {
  state: JobState;
  result: unknown;
  lastError: SerializedError | null;
}

/** Signals into jobs (JobQueue.signal, ctx.waitForSignal) and values out of them (ctx.setEvent, JobQueue.getEvent). */
export interface SignalStorage {
  /** Stores a signal for a job not yet ended; in `tx` when given, like an enqueue. */
  send(jobId: string, name: string, payloadJson: string | null, now: Date, tx?: TxScope): Promise<SendSignalResult>;
  /** Flags the job as waiting for `name` and records the wait (`step`, with its deadline) unless recorded; false when fenced out. */
  beginWait(workerId: string, job: HeldJob, name: string, step: string, now: Date, deadline: Date): Promise<boolean>;
  /** Consumes the oldest unconsumed signal of `name` into the wait's record. */
  consume(workerId: string, job: HeldJob, name: string, step: string, now: Date): Promise<ConsumeResult>;
  /** Records the wait as timed out (result null); false when fenced out. */
  timeOut(workerId: string, job: HeldJob, step: string, now: Date): Promise<boolean>;
  /** Publishes `key` with the step that records it; false when fenced out. */
  setEvent(workerId: string, job: HeldJob, key: string, step: string, valueJson: string, now: Date): Promise<boolean>;
  /** A published value and the job's state. */
  getEvent(jobId: string, key: string): Promise<EventRead>;
  /**
   * Links a child of ctx.invoke() to its parent, flags it awaited and flags the parent as waiting for
   * it, in the parent's step transaction; false when the parent's attempt is fenced out.
   */
  linkChild(workerId: string, job: HeldJob, childId: string, tx?: TxScope): Promise<boolean>;
  /** Flags the parent as waiting for the child again (a later attempt); false when fenced out. */
  awaitChild(workerId: string, job: HeldJob, childId: string): Promise<boolean>;
  /**
   * A child's state, result (opened) and error, null when it no longer exists; once it has ended,
   * the parent (this attempt's job) waits for it no more.
   */
  childEnd(workerId: string, job: HeldJob, childId: string): Promise<ChildEnd | null>;
  /** A signal's payload as stored in a wait's record, opened. */
  openPayload(stored: unknown, where: string): unknown;
}

/** Injection token of the SignalStorage. */
export const SIGNAL_STORAGE = Symbol('SIGNAL_STORAGE');
