import type { JobFacts } from './database.js';

export interface Check {
  name: string;
  passed: boolean;
  /** One line: the counts behind the verdict. */
  summary: string;
  /** Up to a few offending jobs, as evidence. */
  examples: string[];
}

const EXAMPLES = 5;

function describe(job: JobFacts): string {
  return (
    `job ${job.id} seq=${job.seq} state=${job.state} attempt=${job.attempt}/${job.maxAttempts}` +
    (job.errorName ? ` error=${job.errorName}` : '') +
    `${job.transactional ? ' transactional' : ''}` +
    ` side_effects=${job.sideEffects} (own attempt: ${job.ownSideEffects}) interrupted=${job.interrupted}` +
    ` failed=${job.failedExecutions} succeeded_executions=${job.succeededExecutions} success_records=${job.successRecords}`
  );
}

/** Side effects beyond the one run that succeeded. */
export function extraSideEffects(job: JobFacts): number {
  return Math.max(0, job.sideEffects - (job.state === 'succeeded' ? 1 : 0));
}

/**
 * Extra runs that no interrupted execution accounts for. An interrupted attempt
 * may or may not have reached its side effect (and a hand-back keeps the
 * attempt number), so interruptions bound the extra side effects from above.
 */
export function unexplainedSideEffects(job: JobFacts): number {
  return Math.max(0, extraSideEffects(job) - job.interrupted);
}

/** The verdicts on a finished run, from the database's facts alone. */
export function evaluate(jobs: readonly JobFacts[], enqueued: number, orphanSideEffects: number): Check[] {
  const examples = (list: readonly JobFacts[]) => list.slice(0, EXAMPLES).map(describe);

  const notSucceeded = jobs.filter((j) => j.state !== 'succeeded');
  const exhausted = notSucceeded.filter((j) => j.state === 'failed' && j.errorName === 'LeaseLostError');
  const failedOtherwise = notSucceeded.filter((j) => j.state === 'failed' && j.errorName !== 'LeaseLostError');
  const unfinished = notSucceeded.filter((j) => !['failed', 'succeeded', 'cancelled', 'skipped'].includes(j.state));
  const otherTerminal = notSucceeded.length - exhausted.length - failedOtherwise.length - unfinished.length;
  const succeeded: Check = {
    name: 'every job succeeded',
    passed: notSucceeded.length === 0 && jobs.length > 0,
    summary:
      `${jobs.length - notSucceeded.length} of ${jobs.length} succeeded; ` +
      `failed with attempts used up by crashes: ${exhausted.length}, failed otherwise: ${failedOtherwise.length}, ` +
      `cancelled/skipped: ${otherTerminal}, not finished: ${unfinished.length}`,
    examples: examples([...unfinished, ...failedOtherwise, ...exhausted, ...notSucceeded]).filter(
      (line, i, all) => all.indexOf(line) === i,
    ),
  };

  const bySeq = new Map<number, number>();
  for (const j of jobs) if (j.seq !== null) bySeq.set(j.seq, (bySeq.get(j.seq) ?? 0) + 1);
  const missing: number[] = [];
  for (let seq = 0; seq < enqueued; seq++) if (!bySeq.has(seq)) missing.push(seq);
  const doubled = jobs.filter((j) => j.seq !== null && (bySeq.get(j.seq) ?? 0) > 1);
  const strangers = jobs.filter((j) => j.seq === null || j.seq < 0 || j.seq >= enqueued);
  const lost: Check = {
    name: 'no job lost',
    passed: missing.length === 0 && doubled.length === 0 && strangers.length === 0 && jobs.length === enqueued,
    summary:
      `${enqueued} enqueued, ${jobs.length} in the table; missing: ${missing.length}, ` +
      `enqueued twice: ${doubled.length}, unknown: ${strangers.length}`,
    examples: [
      ...missing.slice(0, EXAMPLES).map((seq) => `seq ${seq}: no job row`),
      ...examples([...doubled, ...strangers]),
    ].slice(0, EXAMPLES),
  };

  // A succeeded job has exactly one write that made it succeeded; any other job none
  // (a success recorded and later overwritten would otherwise vanish).
  const twice = jobs.filter((j) => j.successRecords !== (j.state === 'succeeded' ? 1 : 0) || j.succeededExecutions > 1);
  const once: Check = {
    name: 'each success recorded once',
    passed: twice.length === 0,
    summary:
      `jobs with more than one success write: ${jobs.filter((j) => j.successRecords > 1).length}, ` +
      `succeeded without one: ${jobs.filter((j) => j.state === 'succeeded' && j.successRecords === 0).length}, ` +
      `not succeeded yet with one: ${jobs.filter((j) => j.state !== 'succeeded' && j.successRecords > 0).length}, ` +
      `with several 'succeeded' executions: ${jobs.filter((j) => j.succeededExecutions > 1).length}`,
    examples: examples(twice),
  };

  // The success write follows the handler's return, which follows its side effect.
  const hollow = jobs.filter((j) => j.state === 'succeeded' && j.ownSideEffects === 0);
  const effect: Check = {
    name: 'each success has its side effect',
    passed: hollow.length === 0,
    summary: `succeeded jobs with no side effect from the attempt that succeeded: ${hollow.length}`,
    examples: examples(hollow),
  };

  // Plain handlers: at least once, every extra run accounted for by an interruption.
  const plain = jobs.filter((j) => !j.transactional);
  const extra = plain.reduce((n, j) => n + extraSideEffects(j), 0);
  const rerunJobs = plain.filter((j) => extraSideEffects(j) > 0);
  const unexplainedJobs = plain.filter((j) => unexplainedSideEffects(j) > 0);
  const unexplained = unexplainedJobs.reduce((n, j) => n + unexplainedSideEffects(j), 0);
  const explained: Check = {
    name: 'extra side effects explained',
    passed: unexplained === 0 && orphanSideEffects === 0,
    summary:
      `plain handlers (${plain.length} jobs): ${extra} extra side effect(s) in ${rerunJobs.length} job(s), ` +
      `${unexplained} not explained by an interrupted execution (in ${unexplainedJobs.length} job(s)); ` +
      `side effects of unknown jobs: ${orphanSideEffects}`,
    examples: examples(unexplainedJobs),
  };

  // ctx.transaction(): the effect commits with the success, so exactly one per succeeded job, none otherwise.
  const transactional = jobs.filter((j) => j.transactional);
  const twiceDone = transactional.filter((j) => j.sideEffects > 1);
  const wrong = transactional.filter((j) => j.sideEffects !== (j.state === 'succeeded' ? 1 : 0));
  const interruptedTx = transactional.reduce((n, j) => n + j.interrupted, 0);
  const exactlyOnce: Check = {
    name: 'transactional: one effect per job',
    passed: wrong.length === 0,
    summary:
      `${transactional.length} jobs wrote their effect in ctx.transaction(): ${twiceDone.length} with more than one, ` +
      `${wrong.length - twiceDone.length} succeeded without one or unfinished with one; ` +
      `${interruptedTx} interrupted execution(s) among them`,
    examples: examples(wrong),
  };

  return [succeeded, lost, once, effect, explained, exactlyOnce];
}
