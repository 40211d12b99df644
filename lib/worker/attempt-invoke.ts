import type { Type } from '@nestjs/common';
import {
  ChildJobFailedError,
  describeValue,
  isTerminal,
  JobsError,
  type ClaimedJob,
  type Clock,
  type JobHandler,
  type JobRowBuilder,
} from '../model/index.js';
import type { EnqueueStorage } from '../storage/jobs/enqueue/enqueue-storage.interface.js';
import type { SignalStorage } from '../storage/jobs/signals/signal-storage.interface.js';
import { SignalWait } from './attempt-signals.js';
import type { AttemptSteps } from './attempt-steps.js';

/** How long a parent waits for its child at most, when it has no deadline of its own: a year. */
const MAX_CHILD_WAIT_MS = 365 * 24 * 3_600_000;

/** The options of ctx.invoke(): the child's own, as enqueue() takes them, without what cannot apply. */
const REFUSED_OPTIONS = ['after', 'manager', 'unique'];

/** What ctx.invoke() needs of the attempt that runs it. */
export interface InvokeHost {
  readonly job: ClaimedJob;
  readonly workerId: string;
  readonly clock: Clock;
  readonly builder: JobRowBuilder;
  readonly enqueue: EnqueueStorage;
  readonly storage: SignalStorage;
  readonly steps: AttemptSteps;
  lost(): Error;
  checkRunning(): void;
  /** Whether ctx.transaction()'s body is running. */
  inTransaction(): boolean;
}

/**
 * ctx.invoke() for one attempt: the child is enqueued in a transactional
 * step (its row, its link to this job, this job's flag and the step's
 * record commit together, so a crash after it replays the step instead of
 * enqueueing again), then the parent parks until the child has ended,
 * woken by the child's end (the trigger of awaited_job_ended clears the
 * parent's `awaits_signal` and makes it due).
 */
export class AttemptInvoke {
  /** How many times this run invoked each job name: a step name per call. */
  private readonly calls = new Map<string, number>();

  constructor(private readonly host: InvokeHost) {}

  async invoke<R>(child: Type<JobHandler> | string, payload: unknown, options: unknown): Promise<R> {
    const { job, clock, builder, enqueue, storage, steps } = this.host;
    const named = typeof child === 'string' ? child : (child as { name?: string })?.name;
    const where = `ctx.invoke(${named ?? describeValue(child)}) in job "${job.name}" (${job.id})`;
    const opts = checkInvokeOptions(where, options);
    // Built before the step: a bad child, payload or option is the handler's error, and nothing is written.
    const row = builder.build(child, payload, opts, clock.now());
    const n = (this.calls.get(row.name) ?? 0) + 1;
    this.calls.set(row.name, n);
    if (this.host.inTransaction()) {
      throw new JobsError(
        `${where}: called inside ctx.transaction(), whose writes commit with this job's success, while invoke() waits for the child first. ` +
          `Potential fix: invoke the child before ctx.transaction(), and pass its result in.`,
      );
    }
    // The enqueue commits as the worker's outcomes do: a crash of PostgreSQL that undid it undoes the
    // step's record with it, and this job (whose own row an enqueue made durable) runs the step again.
    const { value: childId, fresh } = await steps.ownStep(
      `invoke:${row.name}#${n}`,
      where,
      'ctx.invoke(Child, payload)',
      async (tx) => {
        const held = (await enqueue.insertJobs([row], clock.now(), tx)).get(row.id);
        if (held !== undefined) {
          throw new JobsError(
            `${where}: job ${held} holds the unique key of "${row.name}", so no child was enqueued; an invoked child must be a job of its own. ` +
              `Potential fix: a payload whose unique key is free, or wait for job ${held} with JobQueue.waitFor() outside the handler.`,
          );
        }
        if (!(await storage.linkChild(this.host.workerId, job, row.id, tx))) throw this.host.lost();
        return row.id;
      },
    );
    // Just enqueued, the child was invisible until the step committed with this job's flag: nothing to look at.
    if (fresh) return this.park(childId);
    return this.replay<R>(where, childId);
  }

  /** A later attempt, whose step recorded the child: its end if it has one, else a wait for it. */
  private async replay<R>(where: string, childId: string): Promise<R> {
    const { job, storage, workerId } = this.host;
    this.host.checkRunning();
    let end = await storage.childEnd(workerId, job, childId);
    if (end && !isTerminal(end.state)) {
      // Flagged before looking again: a child that ends after this look finds the flag and wakes this job.
      if (!(await storage.awaitChild(workerId, job, childId))) throw this.host.lost();
      end = await storage.childEnd(workerId, job, childId);
    }
    if (end === null) {
      throw new JobsError(`${where}: the child job ${childId} no longer exists (deleted before it ended).`);
    }
    if (!isTerminal(end.state)) return this.park(childId);
    if (end.state === 'succeeded') return end.result as R;
    throw new ChildJobFailedError(childId, end.state, end.lastError);
  }

  private park(childId: string): never {
    const { job, clock } = this.host;
    const now = clock.now();
    const until = job.deadline ? new Date(job.deadline) : new Date(now.getTime() + MAX_CHILD_WAIT_MS);
    throw new SignalWait(`child:${childId}`, until, now, `ctx.invoke() waiting for child job ${childId}`);
  }
}

function checkInvokeOptions(where: string, options: unknown): Record<string, unknown> {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new JobsError(
      `${where}: the options must be an object, got ${describeValue(options)}. Potential fix: ctx.invoke(Child, payload, { queue: 'reports' }).`,
    );
  }
  const refused = Object.keys(options).filter((k) => REFUSED_OPTIONS.includes(k));
  if (refused.length) {
    throw new JobsError(
      `${where}: ${refused.map((k) => `"${k}"`).join(', ')} cannot apply to an invoked child (it starts now, once, in the parent's step). ` +
        `Potential fix: leave ${refused.length > 1 ? 'them' : 'it'} out, or enqueue the job yourself in a ctx.step().`,
    );
  }
  return options as Record<string, unknown>;
}
