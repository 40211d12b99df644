import type { ClaimedJob } from '../../model/index.js';

/**
 * The jobs a worker claimed and has not started, in claim order: those that
 * start as its slots come free, and those of limited queues claimed ahead
 * (ClaimedJob.claimedAhead), which never start by themselves. A job claimed ahead
 * waits for a job of its queue to succeed here and starts in its place
 * (Claimer.successorFor), or for a claim to count it (counted). A worker
 * holds no more of those than a limit lets it run, so linear scans do.
 */
export class UnstartedJobs {
  private readonly waiting: ClaimedJob[] = [];
  private readonly ahead: ClaimedJob[] = [];

  /** Jobs that start as slots come free. */
  get length(): number {
    return this.waiting.length;
  }

  /** Jobs claimed ahead. */
  get aheadCount(): number {
    return this.ahead.length;
  }

  /** The unstarted jobs of `queue`, those claimed ahead included. */
  countOf(queue: string): number {
    let n = 0;
    for (const job of this.waiting) if (job.queue === queue) n++;
    for (const job of this.ahead) if (job.queue === queue) n++;
    return n;
  }

  /** Every unstarted job, those claimed ahead included. */
  all(): readonly ClaimedJob[] {
    return this.ahead.length ? [...this.waiting, ...this.ahead] : this.waiting;
  }

  /** Claimed jobs join: those claimed ahead apart. */
  add(jobs: readonly ClaimedJob[]): void {
    for (const job of jobs) (job.claimedAhead ? this.ahead : this.waiting).push(job);
  }

  /** The next job to start in a free slot. */
  shift(): ClaimedJob | undefined {
    return this.waiting.shift();
  }

  /** The oldest job of `queue` claimed ahead, taken out and counted from now on; undefined when none. */
  nextAhead(queue: string): ClaimedJob | undefined {
    const job = takeFirst(this.ahead, (j) => j.queue === queue);
    if (job) job.claimedAhead = false;
    return job;
  }

  /** Jobs claimed ahead that a claim moved into their limit's count (`ids`): they start as slots allow. */
  counted(ids: readonly string[]): void {
    for (const job of takeAll(this.ahead, (j) => ids.includes(j.id))) {
      job.claimedAhead = false;
      this.waiting.push(job);
    }
  }

  /** The job matching `match`, taken out, whether it waits for a slot or was claimed ahead. */
  take(match: (job: ClaimedJob) => boolean): ClaimedJob | undefined {
    return takeFirst(this.waiting, match) ?? takeFirst(this.ahead, match);
  }

  /** Every job matching `match`, taken out; `aheadOnly`: of those claimed ahead alone. */
  takeAll(match: (job: ClaimedJob) => boolean, aheadOnly = false): ClaimedJob[] {
    const ahead = this.ahead.length ? takeAll(this.ahead, match) : [];
    return aheadOnly || !this.waiting.length ? ahead : [...takeAll(this.waiting, match), ...ahead];
  }

  /** Every job, taken out. */
  clear(): ClaimedJob[] {
    return [...this.waiting.splice(0), ...this.ahead.splice(0)];
  }
}

function takeFirst(jobs: ClaimedJob[], match: (job: ClaimedJob) => boolean): ClaimedJob | undefined {
  const index = jobs.findIndex(match);
  return index < 0 ? undefined : jobs.splice(index, 1)[0];
}

function takeAll(jobs: ClaimedJob[], match: (job: ClaimedJob) => boolean): ClaimedJob[] {
  const taken: ClaimedJob[] = [];
  for (let i = 0; i < jobs.length;) {
    if (match(jobs[i]!)) taken.push(jobs.splice(i, 1)[0]!);
    else i++;
  }
  return taken;
}
