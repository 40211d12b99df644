import { Logger } from '@nestjs/common';
import { describeValue, isTerminal, JobsError, JobsNotFoundError, type JobState } from '../model/index.js';
import type { JobControlStorage } from '../storage/jobs/control/job-control-storage.interface.js';
import type { JobNotification, JobNotifications } from '../storage/notifications/job-notifications.interface.js';

/**
 * How often the jobs waited on are read again when notifications arrive: a
 * notification lost with a dropped connection delays a waiter by this much
 * at most. Without LISTEN (a transaction pooler and no directConnection)
 * the re-check is all there is, so it runs more often.
 */
export const RECHECK_LISTENING_MS = 5_000;
export const RECHECK_POLLING_MS = 1_000;

interface Waiter {
  resolve(state: JobState): void;
  reject(error: Error): void;
}

/**
 * The process's waits for jobs to end (`JobQueue.waitFor`). However many
 * there are, they share the instance's one listening connection and one
 * re-check statement: a waiter flags its job as awaited (the database then
 * announces its end) and is woken by that notification, or by the
 * re-check that covers one lost with a connection.
 */
export class JobEndWaiters {
  private readonly logger = new Logger('JobQueue');
  private readonly waiters = new Map<string, Set<Waiter>>();
  /** getEvent()'s readers: woken by any announcement about their job (a value published, its end). */
  private readonly watchers = new Map<string, Set<() => void>>();
  private unsubscribe: (() => void) | null = null;
  private listening: Promise<void> | null = null;
  private recheckTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly control: Pick<JobControlStorage, 'awaitEnd' | 'statesOf'>,
    private readonly notifications: JobNotifications,
  ) {}

  /**
   * Resolves with the job's final state once it ended (at once when it
   * already has); rejects with a JobsError after `timeoutMs`, and with a
   * JobsNotFoundError when the job does not exist or is deleted meanwhile.
   */
  async wait(where: string, id: string, timeoutMs: number | undefined): Promise<JobState> {
    if (this.closed) throw shuttingDown(where);
    await this.listen();
    let waiter!: Waiter;
    const ended = new Promise<JobState>((resolve, reject) => (waiter = { resolve, reject }));
    // Registered before the flag is read: an end announced in between finds the waiter.
    this.add(id, waiter);
    let state: JobState | null;
    try {
      if (this.closed) throw shuttingDown(where);
      state = await this.control.awaitEnd(id);
    } catch (error) {
      this.remove(id, waiter);
      // The app closed while the wait began: its pool is gone, and that is the answer, not a database fault.
      throw this.closed ? shuttingDown(where) : error;
    }
    if (state === null) this.settle(id, (w) => w.reject(notFound(where)));
    else if (isTerminal(state)) this.settle(id, (w) => w.resolve(state));
    if (timeoutMs === undefined) return ended;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<JobState>((resolve, reject) => {
      timer = setTimeout(() => {
        this.remove(id, waiter);
        // One last look: a job that ended just now is an answer, not a timeout.
        void this.control
          .statesOf([id])
          .then((states) => states.get(id) ?? null)
          .catch(() => null)
          .then((last) => {
            if (last !== null && isTerminal(last)) return resolve(last);
            reject(
              new JobsError(
                `${where}: the job did not end within ${timeoutMs} ms (state: ${last ?? 'unknown'}). ` +
                  `Potential fix: a longer timeout, or look at the job (get()) for why it has not ended.`,
              ),
            );
          });
      }, timeoutMs);
    });
    try {
      return await Promise.race([ended, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Rejects every wait still open: the app is closing and nothing will wake them. */
  async close(): Promise<void> {
    this.closed = true;
    for (const [id, set] of this.waiters) {
      for (const w of set) w.reject(shuttingDown(`waitFor(${id})`));
    }
    this.waiters.clear();
    for (const set of this.watchers.values()) for (const wake of [...set]) wake();
    this.stopRecheck();
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.listening) {
      this.listening = null;
      await this.notifications.stop();
    }
  }

  private add(id: string, waiter: Waiter): void {
    let set = this.waiters.get(id);
    if (!set) this.waiters.set(id, (set = new Set()));
    set.add(waiter);
    this.startRecheck();
  }

  private remove(id: string, waiter: Waiter): void {
    const set = this.waiters.get(id);
    if (!set?.delete(waiter) || set.size) return;
    this.waiters.delete(id);
    if (this.waiters.size === 0) this.stopRecheck();
  }

  private settle(id: string, each: (w: Waiter) => void): void {
    const set = this.waiters.get(id);
    if (!set) return;
    this.waiters.delete(id);
    for (const w of set) each(w);
    if (this.waiters.size === 0) this.stopRecheck();
  }

  private listen(): Promise<void> {
    this.listening ??= (async () => {
      this.unsubscribe = this.notifications.subscribe({
        onNotification: (event) => this.notified(event),
        onReconnect: () => void this.recheck(),
      });
      await this.notifications.start();
    })();
    return this.listening;
  }

  private notified(event: JobNotification): void {
    if (event.topic !== 'ended' && event.topic !== 'event') return;
    const watching = this.watchers.get(event.jobId);
    if (watching) for (const wake of [...watching]) wake();
    if (event.topic === 'ended' && this.waiters.has(event.jobId)) void this.recheck([event.jobId]);
  }

  /** Flags the job so its end is announced too; resolves once this process listens. */
  async watchEnd(id: string): Promise<void> {
    if (this.closed) throw new JobsError(`getEvent(${id}): the app is shutting down.`);
    await this.listen();
    await this.control.awaitEnd(id);
  }

  /**
   * Resolves at the next announcement about the job (a value it published,
   * its end), or after `ms`, capped at the re-check interval so a lost
   * announcement costs no more than it does a waitFor().
   */
  async nextChange(id: string, ms: number): Promise<void> {
    await this.listen();
    const every = this.notifications.listening ? RECHECK_LISTENING_MS : RECHECK_POLLING_MS;
    await new Promise<void>((resolve) => {
      let set = this.watchers.get(id);
      if (!set) this.watchers.set(id, (set = new Set()));
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        if (!set.size) this.watchers.delete(id);
        resolve();
      };
      const timer = setTimeout(done, Math.min(ms, every));
      set.add(done);
    });
    if (this.closed) throw new JobsError(`getEvent(${id}): the app shut down while it waited.`);
  }

  private startRecheck(): void {
    if (this.recheckTimer) return;
    const every = this.notifications.listening ? RECHECK_LISTENING_MS : RECHECK_POLLING_MS;
    this.recheckTimer = setInterval(() => void this.recheck(), every);
    this.recheckTimer.unref();
  }

  private stopRecheck(): void {
    if (this.recheckTimer) clearInterval(this.recheckTimer);
    this.recheckTimer = null;
  }

  /** Reads the states of the jobs waited on (or of `ids`) and settles those that ended or are gone. */
  private async recheck(ids: string[] = [...this.waiters.keys()]): Promise<void> {
    if (!ids.length) return;
    let states: Map<string, JobState>;
    try {
      states = await this.control.statesOf(ids);
    } catch (error) {
      this.logger.warn(`waitFor: reading the awaited jobs failed (${(error as Error).message}); trying again later`);
      return;
    }
    for (const id of ids) {
      const state = states.get(id);
      if (state === undefined) this.settle(id, (w) => w.reject(notFound(`waitFor(${id})`, true)));
      else if (isTerminal(state)) this.settle(id, (w) => w.resolve(state));
    }
  }
}

function shuttingDown(where: string): JobsError {
  return new JobsError(
    `${where}: the app shut down before the job ended. Potential fix: wait for the job before app.close().`,
  );
}

/** A wait's or a read's job that is not there: `deleted` when it went while waited on. */
export function notFound(where: string, deleted = false): JobsNotFoundError {
  return new JobsNotFoundError(
    deleted
      ? `${where}: the job was deleted before it could be seen ending (retention, deleteBatch or JobsAdmin.delete). ` +
          `Potential fix: keep finished jobs longer than you wait for them (retention).`
      : `${where}: no such job: the id is wrong, or the job ended and is gone (retention, or a job type ` +
          `with keep: { succeeded: false }, whose success deletes it unless a wait had begun). ` +
          `Potential fix: check the id returned by enqueue(); for a job type that forgets its successes, begin the wait before it can end, or keep its successes.`,
  );
}

/** A waitFor timeout: left out, or a positive finite number of ms. */
export function checkWaitTimeout(where: string, timeout: unknown): number | undefined {
  if (timeout === undefined) return undefined;
  if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0) {
    throw new JobsError(
      `${where}: "timeout" must be a positive, finite number of ms, got ${describeValue(timeout)}. ` +
        `Potential fix: { timeout: 30_000 }, or leave it out to wait until the job ends.`,
    );
  }
  return timeout;
}
