import {
  checkDate,
  checkInteger,
  checkOptions,
  INT4_MAX,
  JobsError,
  PURGE_OPTIONS_SHAPE,
  type PurgeOptions,
  type PurgeResult,
} from '../model/index.js';
import type { AdminStorage } from '../storage/admin/admin-storage.interface.js';

type Cutoffs = Partial<Record<'succeeded' | 'failed' | 'cancelled' | 'skipped', Date>>;

/** `purge()`'s options, checked: at least one cutoff, each a date, and the rest between rounds. */
export function checkPurgeOptions(where: string, options: PurgeOptions): { cutoffs: Cutoffs; pause: number } {
  const o = checkOptions(
    where,
    options,
    '{ succeededBefore: new Date(Date.now() - 7 * 86_400_000) }',
    PURGE_OPTIONS_SHAPE,
  );
  const cutoffs: Cutoffs = {
    succeeded: o?.succeededBefore,
    failed: o?.failedBefore,
    cancelled: o?.cancelledBefore,
    skipped: o?.skippedBefore,
  };
  const example = 'new Date(Date.now() - 7 * 86_400_000)';
  for (const [state, value] of Object.entries(cutoffs)) {
    if (value !== undefined) checkDate(where, `${state}Before`, value, example);
  }
  if (Object.values(cutoffs).every((v) => v === undefined)) {
    throw new JobsError(
      `${where}: no cutoff given, so nothing would be purged. Potential fix: purge({ succeededBefore: ${example} }); failedBefore, cancelledBefore and skippedBefore work alike.`,
    );
  }
  return { cutoffs, pause: checkInteger(where, 'pause', o?.pause ?? 0, 0, INT4_MAX, 20) };
}

/**
 * One purge: for each state with a cutoff, its jobs round by round in id
 * order (a cursor, so the rows a guard keeps are not read again), then the
 * batches that settled in that state.
 */
export class PurgeRun {
  /** What the rounds so far deleted (each committed): the result, or how far a failed run got. */
  readonly progress: PurgeResult = {
    jobs: { succeeded: 0, failed: 0, cancelled: 0, skipped: 0 },
    batches: 0,
    batchMembers: 0,
    rounds: 0,
  };
  private started = false;

  constructor(
    private readonly storage: AdminStorage,
    private readonly chunk: number,
    private readonly pause: number,
  ) {}

  async run(cutoffs: Cutoffs): Promise<PurgeResult> {
    for (const state of ['succeeded', 'failed', 'cancelled', 'skipped'] as const) {
      const before = cutoffs[state];
      if (!before) continue;
      await this.jobs(state, before);
      // A batch never ends "skipped".
      if (state !== 'skipped') await this.batches(state, before);
    }
    return this.progress;
  }

  private async jobs(state: keyof PurgeResult['jobs'], before: Date): Promise<void> {
    let after: string | null = null;
    for (;;) {
      await this.rest();
      const round = await this.storage.purgeChunk({ state, before, after, limit: this.chunk });
      if (round.seen === 0) return;
      this.progress.rounds++;
      this.progress.jobs[state] += round.ids.length;
      if (round.seen < this.chunk || round.last === null) return;
      after = round.last;
    }
  }

  /** Batches go whole (their members with them), as many per round as fit in about one chunk of members. */
  private async batches(state: 'succeeded' | 'failed' | 'cancelled', before: Date): Promise<void> {
    let after: string | null = null;
    for (;;) {
      await this.rest();
      const round = await this.storage.purgeBatches(state, before, after, this.chunk);
      if (round.last === null) return;
      this.progress.rounds++;
      this.progress.batches += round.batches;
      this.progress.batchMembers += round.members;
      after = round.last;
    }
  }

  /** The pause before every statement but the first. */
  private async rest(): Promise<void> {
    if (this.pause > 0 && this.started) await new Promise((resolve) => setTimeout(resolve, this.pause));
    this.started = true;
  }
}
