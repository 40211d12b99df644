import type { ClaimedJob } from '../../model/index.js';
import type { ControlledLedger } from './controlled-ledger.js';
import type { HandBacks } from './hand-backs.js';
import type { QueueSettings } from './queue-settings.js';
import type { UnstartedJobs } from './unstarted-jobs.js';

/**
 * The jobs this worker holds claimed ahead (glossary: claimed ahead,
 * successor): which one starts in the place of a success, and which must
 * go back because their queue no longer lets a worker hold any.
 */
export class AheadJobs {
  constructor(
    private readonly unstarted: UnstartedJobs,
    private readonly settings: QueueSettings,
    private readonly controlled: ControlledLedger,
    private readonly handBacks: HandBacks,
  ) {}

  /**
   * The job claimed ahead to start in the place of `job`, which succeeded
   * here: taken out and counted from now on; undefined when its queue holds
   * none or no longer lets one start so.
   */
  successorOf(job: ClaimedJob): ClaimedJob | undefined {
    if (!this.unstarted.aheadCount) return undefined;
    if (!this.controlled.holds(job) || !this.mayHold(job.queue)) return undefined;
    return this.unstarted.nextAhead(job.queue);
  }

  /**
   * Jobs claimed ahead in a queue paused since, or whose settings changed so that a claim would
   * not take jobs ahead (a limit removed; groups, serial keys, a job-name limit or a rate added):
   * back to the queue, not held here where nothing would start or count them.
   */
  handBackStranded(): void {
    if (!this.unstarted.aheadCount) return;
    const stranded = this.unstarted.takeAll((j) => !this.mayHold(j.queue), true);
    if (stranded.length) this.handBacks.unspent(stranded, 'claimed ahead in a queue paused or changed since');
  }

  /** Whether jobs of `queue` may start in the place of its successes here: it is limited as a whole, and not paused. */
  private mayHold(queue: string): boolean {
    return this.settings.limitedAsAWhole(queue) && !this.settings.paused(queue);
  }
}
