import { Job, PermanentJobError, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { ChildJobFailedError } from 'nestjs-durable-jobs';

/**
 * The jobs of the invoke specs: a parent that invokes a child and doubles its result (or reports
 * how it failed), and a child that succeeds, fails, or waits on a gate the test opens. `RUNS`
 * counts each handler's runs by job id, in this process.
 */
export const RUNS = new Map<string, number>();
const ran = (id: string) => RUNS.set(id, (RUNS.get(id) ?? 0) + 1);

/** Children waiting on each gate, until the test opens it; an opened gate lets later ones through. */
const waiting = new Map<string, Array<() => void>>();
const opened = new Set<string>();

/** Opens the gate `key` for every child waiting on it, and for those that arrive later. */
export function openGate(key: string): void {
  opened.add(key);
  for (const release of waiting.get(key) ?? []) release();
  waiting.delete(key);
}

function gate(key: string): Promise<void> {
  if (opened.has(key)) return Promise.resolve();
  return new Promise<void>((resolve) => waiting.set(key, [...(waiting.get(key) ?? []), resolve]));
}

export interface ChildPayload {
  n: number;
  fail?: boolean;
  gate?: string;
}

@Job('inv-child', { queue: 'inv-children', maxAttempts: 1 })
export class InvokedChild implements JobHandler<ChildPayload> {
  async run(p: ChildPayload, ctx: JobContext): Promise<number> {
    ran(ctx.jobId);
    if (p.gate) await Promise.race([gate(p.gate), new Promise((r) => ctx.signal.addEventListener('abort', r))]);
    if (p.fail) throw new PermanentJobError(`child ${p.n} refused`);
    return p.n * 10;
  }
}

export interface ParentPayload {
  child: ChildPayload;
  /** Catch a failed child and report it instead of failing. */
  catchFailure?: boolean;
}

@Job('inv-parent', { queue: 'inv-parents', maxAttempts: 3, backoff: { type: 'fixed', delay: 10 } })
export class InvokingParent implements JobHandler<ParentPayload> {
  async run(p: ParentPayload, ctx: JobContext): Promise<unknown> {
    ran(ctx.jobId);
    const before = await ctx.step('before', () => 'set up');
    try {
      const result = await ctx.invoke(InvokedChild, p.child);
      return { before, doubled: result * 2 };
    } catch (error) {
      if (!p.catchFailure || !(error instanceof ChildJobFailedError)) throw error;
      return { before, childId: error.childId, state: error.state, message: error.lastError?.message ?? null };
    }
  }
}

/** Invokes with an option an invoked child cannot take. */
@Job('inv-bad', { queue: 'inv-parents', maxAttempts: 1 })
export class BadInvoke implements JobHandler<{ option: string }> {
  async run(p: { option: string }, ctx: JobContext): Promise<unknown> {
    return ctx.invoke(InvokedChild, { n: 1 }, { [p.option]: 'x' } as never);
  }
}
