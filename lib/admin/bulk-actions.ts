import {
  CANCEL_STATES,
  checkOptions,
  BULK_FILTER_SHAPE,
  Clock,
  databaseCall,
  RETRY_STATES,
  type CancelAllFilter,
  type CancelAllResult,
  type RetryAllFilter,
  type RetryAllResult,
} from '../model/index.js';
import type { AdminStorage, ChunkResult, JobFilter } from '../storage/admin/admin-storage.interface.js';
import { checkFilter, MAX_IDS } from './admin-checks.js';

/**
 * Rows per bulk statement: large enough that 100k jobs take a hundred round
 * trips, small enough that each chunk's transaction is a few milliseconds.
 */
export const BULK_CHUNK = 1_000;

/** JobsAdmin's bulk retry and cancel: chunks of BULK_CHUNK rows in id order, each its own short transaction. */
export class BulkActions {
  constructor(
    private readonly storage: AdminStorage,
    private readonly clock: Clock,
  ) {}

  /** Failed (by default), cancelled or skipped jobs that match → queued again with fresh attempts. */
  async retryAll(filter: RetryAllFilter = {}): Promise<RetryAllResult> {
    const where = 'JobsAdmin.retryAll()';
    const f = checkOptions(where, filter, "{ queue: 'emails' }", BULK_FILTER_SHAPE) ?? {};
    const checked = checkFilter(where, f, RETRY_STATES, 'failed');
    const base: JobFilter = { ...checked, states: checked.states ?? ['failed'], now: this.clock.now() };
    const ids: string[] = [];
    let count = 0;
    await this.chunks(
      where,
      (after) => this.storage.retryChunk({ ...base, after, limit: BULK_CHUNK }, base.now),
      (r) => {
        count += r.ids.length;
        collect(ids, r.ids);
      },
    );
    return { count, ids };
  }

  /**
   * Live jobs that match: waiting and queued ones → cancelled now; active
   * ones are asked to stop (their signal aborts, they end cancelled). A job
   * a worker claims at the very moment its chunk runs may be passed over:
   * run it again to catch those.
   */
  async cancelAll(filter: CancelAllFilter = {}): Promise<CancelAllResult> {
    const where = 'JobsAdmin.cancelAll()';
    const f = checkOptions(where, filter, "{ queue: 'emails' }", BULK_FILTER_SHAPE) ?? {};
    const checked = checkFilter(where, f, CANCEL_STATES, 'queued');
    const states = checked.states ?? CANCEL_STATES;
    const now = this.clock.now();
    const result: CancelAllResult = { cancelled: 0, requested: 0, ids: [] };
    const notStarted = states.filter((s) => s !== 'active');
    if (notStarted.length) {
      const base: JobFilter = { ...checked, states: notStarted, now };
      await this.chunks(
        where,
        (after) => this.storage.cancelChunk({ ...base, after, limit: BULK_CHUNK }, now),
        (r) => {
          result.cancelled += r.ids.length;
          collect(result.ids, r.ids);
        },
      );
    }
    // After the queued ones: a job claimed while they were cancelled is active by now.
    if (states.includes('active')) {
      const base: JobFilter = { ...checked, states: ['active'], now };
      await this.chunks(
        where,
        (after) => this.storage.requestCancelChunk({ ...base, after, limit: BULK_CHUNK }),
        (r) => {
          result.requested += r.ids.length;
          collect(result.ids, r.ids);
        },
      );
    }
    return result;
  }

  /** Runs chunks in id order until one comes back short. */
  private async chunks(
    where: string,
    run: (after: string | null) => Promise<ChunkResult>,
    each: (result: ChunkResult) => void,
  ): Promise<void> {
    let after: string | null = null;
    let changed = 0;
    for (;;) {
      // Earlier chunks committed: a failure says how far the call got, since the message otherwise claims nothing was written.
      const at = changed ? `${where} (after ${changed} job(s) changed by earlier chunks)` : where;
      const result = await databaseCall(at, () => run(after));
      changed += result.ids.length;
      each(result);
      if (result.seen < BULK_CHUNK || result.last === null) return;
      after = result.last;
    }
  }
}

/** Keeps the first MAX_IDS ids of a bulk action. */
function collect(into: string[], ids: readonly string[]): void {
  for (const id of ids) {
    if (into.length >= MAX_IDS) return;
    into.push(id);
  }
}
