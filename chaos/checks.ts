import { isDeepStrictEqual } from 'node:util';
import { CHILD_NAME, PARENT_NAME } from './job-names.js';
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
    ` failed=${job.failedExecutions} succeeded_executions=${job.succeededExecutions} success_records=${job.successRecords}` +
    (job.name === PARENT_NAME
      ? ` parent parks=${job.parks ?? 0} invoke_step_child=${job.invokeStepChild ?? 'none'} interrupted_after_step=${job.interruptedAfterStep ?? 0}`
      : '') +
    (job.invokedBy ? ` invoked_by=${job.invokedBy}` : '')
  );
}

/** A parent of --invoke: it writes no side effect, and has checks of its own (evaluateInvoke). */
const isParent = (job: JobFacts) => job.name === PARENT_NAME;

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

/**
 * The verdicts on a finished run, from the database's facts alone. With
 * --invoke, `parents` (how many of the enqueued jobs were parents) adds the
 * checks of evaluateInvoke(); the checks here then judge the jobs that write
 * a side effect (plain jobs and children) and, for loss, the enqueued ones
 * (plain jobs and parents).
 */
export function evaluate(
  allJobs: readonly JobFacts[],
  enqueued: number,
  orphanSideEffects: number,
  parents?: number,
): Check[] {
  const examples = (list: readonly JobFacts[]) => list.slice(0, EXAMPLES).map(describe);
  // The jobs that do the recorded work: all of them but parents.
  const jobs = allJobs.filter((j) => !isParent(j));
  const children = jobs.filter((j) => j.invokedBy);
  const doers = children.length
    ? ` (${jobs.length - children.length} enqueued and ${children.length} invoked by a parent)`
    : '';
  // What the run enqueued itself, parents included: invoked children carry no seq.
  const enqueuedJobs = allJobs.filter((j) => !j.invokedBy);

  const notSucceeded = jobs.filter((j) => j.state !== 'succeeded');
  const exhausted = notSucceeded.filter((j) => j.state === 'failed' && j.errorName === 'LeaseLostError');
  const failedOtherwise = notSucceeded.filter((j) => j.state === 'failed' && j.errorName !== 'LeaseLostError');
  const unfinished = notSucceeded.filter((j) => !['failed', 'succeeded', 'cancelled', 'skipped'].includes(j.state));
  const otherTerminal = notSucceeded.length - exhausted.length - failedOtherwise.length - unfinished.length;
  const succeeded: Check = {
    name: 'every job succeeded',
    passed: notSucceeded.length === 0 && jobs.length > 0,
    summary:
      `${jobs.length - notSucceeded.length} of ${jobs.length}${doers} succeeded; ` +
      `failed with attempts used up by crashes: ${exhausted.length}, failed otherwise: ${failedOtherwise.length}, ` +
      `cancelled/skipped: ${otherTerminal}, not finished: ${unfinished.length}`,
    examples: examples([...unfinished, ...failedOtherwise, ...exhausted, ...notSucceeded]).filter(
      (line, i, all) => all.indexOf(line) === i,
    ),
  };

  const bySeq = new Map<number, number>();
  for (const j of enqueuedJobs) if (j.seq !== null) bySeq.set(j.seq, (bySeq.get(j.seq) ?? 0) + 1);
  const missing: number[] = [];
  for (let seq = 0; seq < enqueued; seq++) if (!bySeq.has(seq)) missing.push(seq);
  const doubled = enqueuedJobs.filter((j) => j.seq !== null && (bySeq.get(j.seq) ?? 0) > 1);
  const strangers = enqueuedJobs.filter((j) => j.seq === null || j.seq < 0 || j.seq >= enqueued);
  const lost: Check = {
    name: 'no job lost',
    passed: missing.length === 0 && doubled.length === 0 && strangers.length === 0 && enqueuedJobs.length === enqueued,
    summary:
      `${enqueued} enqueued, ${enqueuedJobs.length} in the table${children.length ? ` (besides ${children.length} invoked children)` : ''}; missing: ${missing.length}, ` +
      `enqueued twice: ${doubled.length}, unknown: ${strangers.length}`,
    examples: [
      ...missing.slice(0, EXAMPLES).map((seq) => `seq ${seq}: no job row`),
      ...examples([...doubled, ...strangers]),
    ].slice(0, EXAMPLES),
  };

  // A succeeded job has exactly one write that made it succeeded; any other job none
  // (a success recorded and later overwritten would otherwise vanish).
  // Parents too: each is resumed after its child, and must succeed once all the same.
  const twice = allJobs.filter(
    (j) => j.successRecords !== (j.state === 'succeeded' ? 1 : 0) || j.succeededExecutions > 1,
  );
  const once: Check = {
    name: 'each success recorded once',
    passed: twice.length === 0,
    summary:
      `jobs with more than one success write: ${allJobs.filter((j) => j.successRecords > 1).length}, ` +
      `succeeded without one: ${allJobs.filter((j) => j.state === 'succeeded' && j.successRecords === 0).length}, ` +
      `not succeeded yet with one: ${allJobs.filter((j) => j.state !== 'succeeded' && j.successRecords > 0).length}, ` +
      `with several 'succeeded' executions: ${allJobs.filter((j) => j.succeededExecutions > 1).length}`,
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

  const checks = [succeeded, lost, once, effect, explained, exactlyOnce];
  return parents === undefined ? checks : [...checks, ...evaluateInvoke(allJobs, parents)];
}

/** A parent's failure its history explains: attempts used up by crashes, or a child that failed so. */
function failureExplained(parent: JobFacts, child: JobFacts | undefined): 'crashes' | 'child' | null {
  if (parent.state !== 'failed') return null;
  if (parent.errorName === 'LeaseLostError' && parent.interrupted > 0) return 'crashes';
  if (
    parent.errorName === 'ChildJobFailedError' &&
    child?.state === 'failed' &&
    child.errorName === 'LeaseLostError' &&
    child.interrupted > 0
  ) {
    return 'child';
  }
  return null;
}

const childResultOf = (parent: JobFacts): unknown =>
  parent.result !== null && typeof parent.result === 'object'
    ? (parent.result as { child?: unknown }).child
    : undefined;

/**
 * --invoke: parents that ctx.invoke() one child each, under the same kills.
 * Each parent finished; each has exactly one child row (the enqueue is a
 * step whose record commits with the child's row, so a kill around it
 * replays, never enqueues again) and its invoke step names that child; each
 * child ran once or re-ran only where its interrupted executions explain it
 * (the accounting of "extra side effects explained", and exactly one effect
 * for a child in ctx.transaction()); each succeeded parent returned its
 * child's stored result.
 */
export function evaluateInvoke(jobs: readonly JobFacts[], expectedParents: number): Check[] {
  const examples = (list: readonly JobFacts[]) => list.slice(0, EXAMPLES).map(describe);
  const parents = jobs.filter(isParent);
  const children = jobs.filter((j) => j.invokedBy);
  const childrenOf = new Map<string, JobFacts[]>();
  for (const c of children) childrenOf.set(c.invokedBy!, [...(childrenOf.get(c.invokedBy!) ?? []), c]);
  const only = (p: JobFacts) => {
    const own = childrenOf.get(p.id) ?? [];
    return own.length === 1 ? own[0] : undefined;
  };

  const succeededParents = parents.filter((p) => p.state === 'succeeded');
  const explainedBy = parents.map((p) => failureExplained(p, only(p)));
  const byCrashes = explainedBy.filter((e) => e === 'crashes').length;
  const byChild = explainedBy.filter((e) => e === 'child').length;
  const unexplainedFailures = parents.filter(
    (p, i) => p.state !== 'succeeded' && ['failed', 'cancelled', 'skipped'].includes(p.state) && !explainedBy[i],
  );
  const unfinished = parents.filter((p) => !['failed', 'succeeded', 'cancelled', 'skipped'].includes(p.state));
  const parks = parents.reduce((n, p) => n + (p.parks ?? 0), 0);
  const interrupted = parents.reduce((n, p) => n + p.interrupted, 0);
  const afterStep = parents.filter((p) => (p.interruptedAfterStep ?? 0) > 0);
  const finished: Check = {
    name: 'invoke: each parent finished',
    passed:
      parents.length === expectedParents &&
      parents.length > 0 &&
      unexplainedFailures.length === 0 &&
      unfinished.length === 0,
    summary:
      `${parents.length} parents (${expectedParents} enqueued): ${succeededParents.length} succeeded, ` +
      `failed as their history explains: ${byCrashes + byChild} (attempts used up by crashes: ${byCrashes}, ` +
      `child failed so: ${byChild}), failed otherwise or cancelled/skipped: ${unexplainedFailures.length}, ` +
      `not finished: ${unfinished.length}; ${parks} park(s) waiting for a child, ${interrupted} interrupted ` +
      `execution(s), ${afterStep.length} parent(s) interrupted after their invoke step was recorded (replayed)`,
    examples: examples([...unfinished, ...unexplainedFailures]),
  };

  const counts = parents.map((p) => (childrenOf.get(p.id) ?? []).length);
  const duplicated = parents.filter((_, i) => counts[i]! > 1);
  // No child: only a parent that failed before its invoke step committed.
  const childless = parents.filter((p, i) => counts[i] === 0 && !(p.state === 'failed' && explainedBy[i]));
  const parentIds = new Set(parents.map((p) => p.id));
  const strays = children.filter((c) => !parentIds.has(c.invokedBy!));
  // A child row written without its link (or by something else) would carry no invoked_by.
  const unlinked = jobs.filter((j) => j.name === CHILD_NAME && !j.invokedBy);
  const stepMismatch = parents.filter((p) => {
    const child = only(p);
    return child !== undefined && p.invokeStepChild !== child.id;
  });
  const onePerInvoke: Check = {
    name: 'invoke: one child row per invoke',
    passed:
      duplicated.length === 0 &&
      childless.length === 0 &&
      strays.length === 0 &&
      unlinked.length === 0 &&
      stepMismatch.length === 0,
    summary:
      `${children.length} child rows (invoked_by set) for ${parents.length} parents: with one child ` +
      `${counts.filter((n) => n === 1).length}, with more than one ${duplicated.length}` +
      `${duplicated.length ? ` (the most: ${Math.max(...counts)})` : ''}, with none ${childless.length}; ` +
      `children of no parent: ${strays.length}, child jobs without invoked_by: ${unlinked.length}; ` +
      `invoke steps naming another job than the child: ${stepMismatch.length}`,
    examples: examples([...duplicated, ...childless, ...strays, ...unlinked, ...stepMismatch]),
  };

  const plainChildren = children.filter((c) => !c.transactional);
  const txChildren = children.filter((c) => c.transactional);
  const ranOnce = children.filter((c) => c.sideEffects === 1);
  const onceAfterInterruptions = ranOnce.filter((c) => c.interrupted > 0);
  const rerun = plainChildren.filter((c) => extraSideEffects(c) > 0 && unexplainedSideEffects(c) === 0);
  const extraRuns = rerun.reduce((n, c) => n + extraSideEffects(c), 0);
  const rerunInterrupted = rerun.reduce((n, c) => n + c.interrupted, 0);
  const unexplained = plainChildren.filter((c) => unexplainedSideEffects(c) > 0);
  const txWrong = txChildren.filter((c) => c.sideEffects !== (c.state === 'succeeded' ? 1 : 0));
  const hollow = children.filter((c) => c.state === 'succeeded' && c.ownSideEffects === 0);
  const childRuns: Check = {
    name: 'invoke: each child ran once',
    passed: unexplained.length === 0 && txWrong.length === 0 && hollow.length === 0,
    summary:
      `${children.length} children: ran once ${ranOnce.length} (${onceAfterInterruptions.length} of them after ` +
      `interrupted attempts that had not reached their effect or rolled it back), re-ran where their history explains it ` +
      `${rerun.length} (${extraRuns} extra run(s), ${rerunInterrupted} interrupted execution(s)), re-ran ` +
      `unexplained ${unexplained.length}; in ctx.transaction() ${txChildren.length}, with other than one effect ` +
      `${txWrong.length}; succeeded without their own attempt's effect ${hollow.length}`,
    examples: examples([...unexplained, ...txWrong, ...hollow]),
  };

  const carried = new Set(
    succeededParents.filter((p) => {
      const child = only(p);
      if (!child || child.state !== 'succeeded') return false;
      const result = child.result as { parentSeq?: unknown; childId?: unknown } | null;
      return (
        result !== null &&
        result?.childId === child.id &&
        result.parentSeq === p.seq &&
        (p.result as { seq?: unknown } | null)?.seq === p.seq &&
        isDeepStrictEqual(childResultOf(p), child.result)
      );
    }),
  );
  const notCarried = succeededParents.filter((p) => !carried.has(p));
  const results: Check = {
    name: "invoke: parent has child's result",
    passed: notCarried.length === 0,
    summary:
      `${succeededParents.length} succeeded parents: result.child equal to their child's stored result ` +
      `(naming that child and the parent's seq) ${carried.size}, not ${notCarried.length}`,
    examples: notCarried
      .slice(0, EXAMPLES)
      .map((p) => `${describe(p)} result=${JSON.stringify(p.result)} child=${JSON.stringify(only(p)?.result)}`),
  };

  return [finished, onePerInvoke, childRuns, results];
}
