import type { Logger } from '@nestjs/common';
import type { ClaimedJob, Clock } from '../../model/index.js';
import type { OutcomeStorage } from '../../storage/jobs/outcomes/outcome-storage.interface.js';

/** What a worker's hand-backs write with. */
interface HandBackDeps {
  workerId: string;
  outcomes: OutcomeStorage;
  clock: Clock;
  logger: Logger;
}

/**
 * Claimed jobs a worker gives back without starting them, their attempt
 * unspent, for any worker's claim to take again: rate-limited ones that
 * missed their start, jobs claimed ahead in a queue that changed since, jobs
 * sealed with a key the instance lacks, and, at shutdown, every one it still
 * holds. The last of those waits for the others under way, so a stopped
 * worker leaves none of its writes behind.
 */
export class HandBacks {
  private readonly underWay = new Set<Promise<void>>();

  constructor(
    private readonly deps: HandBackDeps,
    /** Told of each job once its hand-back is written (or failed): its slot may be free. */
    private readonly released: (job: ClaimedJob) => void,
  ) {}

  /**
   * Gives `jobs` back, claimable again from `runAt` (now by default); `which` says what they are, in
   * the log line of a failed write.
   */
  unspent(jobs: readonly ClaimedJob[], which: string, runAt?: Date): void {
    const { outcomes, workerId, clock, logger } = this.deps;
    const done = outcomes
      .handBack(workerId, jobs, runAt ?? clock.now(), null)
      .catch((e: Error) => logger.error(`Handing back ${jobs.length} job(s) ${which}: ${e.message}`))
      .finally(() => {
        this.underWay.delete(done);
        for (const job of jobs) this.released(job);
      });
    this.underWay.add(done);
  }

  /** Gives back what a stopping worker holds unstarted, once the hand-backs under way have ended. */
  async atShutdown(jobs: readonly ClaimedJob[]): Promise<void> {
    const { outcomes, workerId, clock, logger } = this.deps;
    await Promise.all(this.underWay);
    await outcomes
      .handBack(workerId, jobs, clock.now(), null)
      .catch((e: Error) => logger.error(`Handing back ${jobs.length} unstarted job(s) failed: ${e.message}`));
  }
}
