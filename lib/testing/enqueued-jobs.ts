import { JobsMonitor } from '../monitoring/jobs-monitor.service.js';
import {
  checkOptions,
  describeValue,
  JobsError,
  optionShape,
  type JobInfo,
  type JobListState,
  type JobState,
  type JobSummary,
} from '../model/index.js';
import type { JobRef } from '../queue/job-factory.js';
import { JobQueue } from '../queue/job-queue.service.js';
import { JobsAssertionError } from './jobs-assertion.error.js';
import { matchesPayload, showValue } from './payload-match.js';

/** Which jobs `enqueued()` and the expectations look at: name, part of the payload, state, queue. */
export interface EnqueuedFilter {
  /** A `@Job` class or a job name. */
  name?: JobRef;
  /** Only jobs in this queue; default every queue. */
  queue?: string;
  /** Default `['queued', 'waiting']`: jobs that have not run yet, due now or later. */
  state?: JobState | JobState[];
  /**
   * What the payload must hold: the keys given must match (nested objects
   * alike; extra keys are fine), arrays item by item. Jest's and Vitest's
   * asymmetric matchers (`expect.any(Number)`) work at any depth.
   */
  payload?: unknown;
}

/** What `expectEnqueued()` expects: the jobs of a filter, and optionally how many. */
export interface EnqueuedExpectation extends EnqueuedFilter {
  name: JobRef;
  /** Exactly this many matching jobs; default at least one. */
  count?: number;
}

const FILTER_FIELDS = { name: true, queue: true, state: true, payload: true } as const satisfies Record<
  keyof EnqueuedFilter,
  true
>;
const FILTER_SHAPE = optionShape<EnqueuedFilter>(FILTER_FIELDS);
const EXPECTATION_SHAPE = optionShape<EnqueuedExpectation>({ ...FILTER_FIELDS, count: true });

const NOT_RUN: readonly JobState[] = ['queued', 'waiting'];
const PAGE = 500;
/** Jobs a failure message lists at most. */
const SHOWN = 20;

/** The jobs a test enqueued, read back through the public API, and expectations on them. */
export class EnqueuedJobs {
  constructor(
    private readonly jobs: JobQueue,
    private readonly monitor: JobsMonitor,
  ) {}

  /** Matching jobs with their payloads, oldest first. */
  async list(where: string, filter: EnqueuedFilter | undefined): Promise<JobInfo[]> {
    const o = checkOptions(where, filter, "{ name: 'send-receipt' }", FILTER_SHAPE) ?? {};
    const name = o.name === undefined ? undefined : this.jobs.resolveName(o.name);
    // The kit's `queued` is every queued job; the monitor splits it into due now and `scheduled`.
    const asked: unknown[] = o.state === undefined ? [...NOT_RUN] : [o.state].flat();
    const state = asked.flatMap((s) => (s === 'queued' ? ['queued', 'scheduled'] : [s])) as JobListState[];
    const summaries: JobSummary[] = [];
    let before: string | undefined;
    do {
      const page = await this.monitor.jobs({ state, queue: o.queue, name, limit: PAGE, before });
      summaries.push(...page.jobs);
      before = page.next ?? undefined;
    } while (before);
    const found: JobInfo[] = [];
    for (const summary of summaries.reverse()) {
      const info = await this.jobs.get(summary.id);
      if (info) found.push(info);
    }
    return o.payload === undefined ? found : found.filter((job) => matchesPayload(job.payload, o.payload));
  }

  async expect(expectation: EnqueuedExpectation): Promise<JobInfo[]> {
    const where = 'expectEnqueued()';
    const { payload, count, ...scope } = this.checkExpectation(where, expectation);
    if (count !== undefined && (!Number.isInteger(count) || count < 1)) {
      throw new JobsError(
        `${where}: "count" must be an integer >= 1, got ${describeValue(count)}. Potential fix: count: 1, or expectNotEnqueued() for none.`,
      );
    }
    const candidates = await this.list(where, scope);
    const matching = payload === undefined ? candidates : candidates.filter((j) => matchesPayload(j.payload, payload));
    if (count === undefined ? matching.length > 0 : matching.length === count) return matching;
    const wanted = `${count === undefined ? 'a' : `exactly ${count}`} ${this.describeScope(expectation, payload)}`;
    const lines = [`${where}: expected ${wanted}; found ${matching.length}.`];
    if (candidates.length) {
      lines.push(
        `"${this.jobs.resolveName(expectation.name)}" jobs ${this.statesText(scope.state)} (${candidates.length}):`,
      );
      lines.push(...this.listing(candidates));
    } else {
      lines.push(await this.others(scope.state));
    }
    lines.push(
      `Potential fix: check the name and payload the code enqueues, or whether the job already ran ` +
        `(drain() runs due jobs; state: ['succeeded', 'failed'] looks at finished ones).`,
    );
    throw new JobsAssertionError(lines.join('\n'));
  }

  async expectNone(expectation: EnqueuedExpectation): Promise<void> {
    const where = 'expectNotEnqueued()';
    const { payload, ...scope } = this.checkExpectation(where, expectation);
    const candidates = await this.list(where, scope);
    const matching = payload === undefined ? candidates : candidates.filter((j) => matchesPayload(j.payload, payload));
    if (matching.length === 0) return;
    throw new JobsAssertionError(
      [
        `${where}: expected no ${this.describeScope(expectation, payload)}; found ${matching.length}:`,
        ...this.listing(matching),
      ].join('\n'),
    );
  }

  private checkExpectation(where: string, expectation: EnqueuedExpectation): EnqueuedExpectation {
    const o = checkOptions(where, expectation, '{ name: SendReceipt, payload: { orderId: 1 } }', EXPECTATION_SHAPE);
    if (!o || o.name === undefined) {
      throw new JobsError(
        `${where}: "name" is required (a @Job class or a job name). Potential fix: ${where.slice(0, -2)}({ name: SendReceipt, payload: { orderId: 1 } }).`,
      );
    }
    return o;
  }

  private describeScope(e: EnqueuedExpectation, payload: unknown): string {
    return (
      `"${this.jobs.resolveName(e.name)}" job ${this.statesText(e.state)}` +
      (e.queue === undefined ? '' : ` in queue "${e.queue}"`) +
      (payload === undefined ? '' : ` with a payload holding ${showValue(payload)}`)
    );
  }

  private statesText(state: JobState | JobState[] | undefined): string {
    const states = state === undefined ? NOT_RUN : [state].flat();
    return `(${states.join(' or ')})`;
  }

  private listing(jobs: JobInfo[]): string[] {
    const lines = jobs.slice(0, SHOWN).map((j) => `  - ${describeJob(j)}`);
    if (jobs.length > SHOWN) lines.push(`  … and ${jobs.length - SHOWN} more`);
    return lines;
  }

  /** What else is there in those states, by name: the likely mix-up. */
  private async others(state: JobState | JobState[] | undefined): Promise<string> {
    const all = await this.list('expectEnqueued()', { state: state === undefined ? [...NOT_RUN] : state });
    if (all.length === 0) return `No job at all is ${this.statesText(state)}.`;
    const byName = new Map<string, number>();
    for (const j of all) byName.set(j.name, (byName.get(j.name) ?? 0) + 1);
    const names = [...byName].map(([n, k]) => `"${n}" ×${k}`).join(', ');
    return `None of that name; jobs ${this.statesText(state)}: ${names}.`;
  }
}

function describeJob(job: JobInfo): string {
  const when = job.state === 'queued' ? ` for ${job.runAt.toISOString()}` : '';
  return `${job.name} ${job.id}: ${job.state}${when}, queue "${job.queue}", attempt ${job.attempt}/${job.maxAttempts}, payload ${showValue(job.payload)}`;
}
