import type { ClaimStorage } from '../storage/jobs/claim/claim-storage.interface.js';

/** How long a drain waits before claiming again jobs a lock made it skip. */
const LOCKED_RETRY_MS = 5;
/** How long a drain waits for such locks in all before it ends with the jobs still due. */
const LOCKED_WAIT_MS = 2_000;

/**
 * What a drain whose pass claimed nothing does next. A claim skips a due
 * job whose row another transaction holds for a moment (the app flagging it
 * for waitFor(), a signal), so: `again` while such locks are held (after a
 * short pause, for LOCKED_WAIT_MS at most: a transaction of the test's own
 * left open ends the drain as before), and once more after locks were seen
 * or when due jobs remain, since a lock may have come and gone between the
 * pass's claims and this look; `end` when that last pass was made. Due jobs
 * a claim holds back (a full rate window) cost one more pass.
 */
export class LockedJobs {
  private since: number | null = null;
  private lookedAgain = false;

  constructor(private readonly claims: Pick<ClaimStorage, 'dueJobs'>) {}

  /** A pass claimed something: locks seen before it no longer matter. */
  claimed(): void {
    this.since = null;
    this.lookedAgain = false;
  }

  async next(names: readonly string[], now: Date): Promise<'again' | 'end'> {
    const { due, locked } = await this.claims.dueJobs(names, now);
    if (locked > 0 && (this.since === null || Date.now() - this.since <= LOCKED_WAIT_MS)) {
      this.since ??= Date.now();
      await new Promise((resolve) => setTimeout(resolve, LOCKED_RETRY_MS));
      return 'again';
    }
    if ((due > 0 || this.since !== null) && !this.lookedAgain) {
      this.lookedAgain = true;
      return 'again';
    }
    return 'end';
  }
}
