import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { Job, JOBS_DATA_SOURCE, PermanentJobError, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { Gates } from './gates.js';

/** What the step jobs did in this app: every step function call, in order. */
@Injectable()
export class StepLog extends Gates {
  /** `<order>:<step>#<attempt>` per call of a step's function (not per ctx.step call). */
  readonly calls: string[] = [];
  /** The idempotency keys the charge step was given, per call. */
  readonly keys: string[] = [];
  /** What jobs saw of their lineage: job id → { tag, batchId, parentIds }. */
  readonly lineage = new Map<string, { tag: string; batchId: string | null; parentIds: readonly string[] }>();

  call(order: string, step: string, ctx: JobContext): void {
    this.calls.push(`${order}:${step}#${ctx.attempt}`);
  }

  of(order: string): string[] {
    return this.calls.filter((c) => c.startsWith(`${order}:`)).map((c) => c.slice(order.length + 1));
  }
}

export interface CheckoutPayload {
  order: string;
  /** The ship step throws on attempt 1. */
  shipFailsOnce?: boolean;
  /** A durable sleep between ship and receipt. */
  sleepMs?: number;
  /** After the steps, the handler fails for good (PermanentJobError) on attempt 1. */
  failAfterOnce?: boolean;
  /** Snoozes once, after charge, on attempt 1. */
  snoozeOnce?: boolean;
  /** The ship step waits at a gate of this name on attempt 1, after its work. */
  shipGate?: string;
}

/** The example: charge, ship, an optional sleep, receipt. */
@Job('steps-checkout', { maxAttempts: 3, backoff: { type: 'fixed', delay: 1_000 } })
export class Checkout implements JobHandler<CheckoutPayload> {
  constructor(private readonly log: StepLog) {}

  async run(p: CheckoutPayload, ctx: JobContext): Promise<{ charged: string; tracking: string }> {
    const charge = await ctx.step('charge', () => {
      this.log.call(p.order, 'charge', ctx);
      this.log.keys.push(ctx.stepKey('charge'));
      return { id: `ch-${p.order}`, at: new Date(0) };
    });
    if (p.snoozeOnce && ctx.attempt === 1) ctx.snooze(5_000, 'rate limited');
    const ship = await ctx.step('ship', async () => {
      this.log.call(p.order, 'ship', ctx);
      if (p.shipFailsOnce && ctx.attempt === 1) throw new Error('carrier down');
      if (p.shipGate && ctx.attempt === 1) await this.log.wait(p.shipGate);
      return { tracking: `tr-${p.order}` };
    });
    if (p.sleepMs !== undefined) await ctx.sleep('cooling-off', p.sleepMs);
    await ctx.step('receipt', () => {
      this.log.call(p.order, 'receipt', ctx);
    });
    if (p.failAfterOnce && ctx.attempt === 1) throw new PermanentJobError('the warehouse said no');
    // What a step returns is the stored JSON: the Date came back as a string on every attempt.
    if (typeof (charge as { at: unknown }).at !== 'string') throw new Error('a step result was not the stored JSON');
    return { charged: charge.id, tracking: ship.tracking };
  }
}

export type MisuseMode =
  'duplicate' | 'empty' | 'long' | 'number' | 'clash' | 'big' | 'bad-options' | 'unserialisable' | 'bad-sleep';

/** Each mode misuses the step API one way; one attempt, so the error is the job's last. */
@Job('steps-misuse', { maxAttempts: 1 })
export class Misuse implements JobHandler<{ mode: MisuseMode }> {
  constructor(private readonly log: StepLog) {}

  async run({ mode }: { mode: MisuseMode }, ctx: JobContext): Promise<void> {
    const noop = () => {
      this.log.call(mode, 'fn', ctx);
      return 1;
    };
    switch (mode) {
      case 'duplicate':
        await ctx.step('charge', noop);
        await ctx.step('charge', noop);
        return;
      case 'empty':
        await ctx.step('', noop);
        return;
      case 'long':
        await ctx.step('x'.repeat(201), noop);
        return;
      case 'number':
        await ctx.step(42 as unknown as string, noop);
        return;
      case 'clash':
        // A sleep in the first attempt, a step of the same name in the next (as after a deploy).
        if (ctx.attempt === 1) {
          await ctx.sleep('wait', 0);
          ctx.snooze(0);
        }
        await ctx.step('wait', noop);
        return;
      case 'big':
        await ctx.step('export', () => 'x'.repeat(300 * 1024));
        return;
      case 'bad-options':
        await ctx.step('charge', { transaction: 'yes' } as never, noop as never);
        return;
      case 'unserialisable':
        await ctx.step('count', () => ({ n: 1n }));
        return;
      case 'bad-sleep':
        await ctx.sleep('nap', -1);
        return;
    }
  }
}

/** Waits until a date between two steps (ctx.sleepUntil). */
@Job('steps-renewal', { maxAttempts: 1 })
export class Renewal implements JobHandler<{ tag: string; until: string }> {
  constructor(private readonly log: StepLog) {}

  async run({ tag, until }: { tag: string; until: string }, ctx: JobContext): Promise<void> {
    await ctx.step('notice', () => this.log.call(tag, 'notice', ctx));
    await ctx.sleepUntil('renewal-day', new Date(until));
    await ctx.step('renew', () => this.log.call(tag, 'renew', ctx));
  }
}

/** Records what it sees of its batch and parents, and runs one step; it takes ctx's methods apart, as a handler may. */
@Job('steps-member')
export class Member implements JobHandler<{ tag: string; continueTo?: string }> {
  constructor(private readonly log: StepLog) {}

  async run(p: { tag: string; continueTo?: string }, ctx: JobContext): Promise<string> {
    const { jobId, batchId, parentIds, step, continueWith } = ctx;
    this.log.lineage.set(jobId, { tag: p.tag, batchId, parentIds });
    await step('work', () => this.log.call(p.tag, 'work', ctx));
    if (p.continueTo) continueWith(Member, { tag: p.continueTo });
    return p.tag;
  }
}

/** Where the crash jobs write one row per step run: a table of the test's. */
export const STEP_RUNS = Symbol('STEP_RUNS');

/** True in a worker process that hangs where a ThreeSteps payload says, for a SIGKILL to land there. */
export const VICTIM = Symbol('VICTIM');

export type HangPoint = 'in-two' | 'in-three';

/**
 * Three steps, each writing a row (step, attempt, pid) to the test's table
 * as its work. On a victim worker it hangs where the payload says: inside
 * step two's function after its row (its work done, its record not), or
 * inside step three's (step two recorded), and waits there for a SIGKILL.
 */
@Job('steps-three', { maxAttempts: 5 })
export class ThreeSteps implements JobHandler<{ hang: HangPoint }> {
  constructor(
    @Inject(JOBS_DATA_SOURCE) private readonly db: DataSource,
    @Inject(STEP_RUNS) private readonly table: string,
    @Inject(VICTIM) private readonly victim: boolean,
  ) {}

  async run({ hang }: { hang: HangPoint }, ctx: JobContext): Promise<void> {
    const hangs = (point: HangPoint) => this.victim && hang === point;
    for (const step of ['one', 'two', 'three'] as const) {
      await ctx.step(step, async () => {
        if (step === 'three' && hangs('in-three')) await this.waitForKill(ctx, step);
        await this.write(ctx, step);
        if (step === 'two' && hangs('in-two')) await this.waitForKill(ctx, step);
        return step;
      });
    }
  }

  private write(ctx: JobContext, step: string) {
    return this.db.query(`INSERT INTO ${this.table} (job_id, step, attempt, pid) VALUES ($1, $2, $3, $4)`, [
      ctx.jobId,
      step,
      ctx.attempt,
      process.pid,
    ]);
  }

  /** Tells the test where it stands (a row it can wait for), then never returns. */
  private async waitForKill(ctx: JobContext, step: string): Promise<never> {
    await this.write(ctx, `hanging-in-${step}`);
    return new Promise<never>(() => undefined);
  }
}

/** Sleeps between two steps; each step's row says which worker ran it. */
@Job('steps-napper')
export class Napper implements JobHandler<{ ms: number }> {
  constructor(
    @Inject(JOBS_DATA_SOURCE) private readonly db: DataSource,
    @Inject(STEP_RUNS) private readonly table: string,
  ) {}

  async run({ ms }: { ms: number }, ctx: JobContext): Promise<void> {
    const write = (step: string) =>
      this.db.query(`INSERT INTO ${this.table} (job_id, step, attempt, pid) VALUES ($1, $2, $3, $4)`, [
        ctx.jobId,
        step,
        ctx.attempt,
        process.pid,
      ]);
    await ctx.step('before', () => write('before'));
    await ctx.sleep('nap', ms);
    await ctx.step('after', () => write('after'));
  }
}

/** What GatedStep's attempts did, and the gates its step waits at. */
@Injectable()
export class StepGates extends Gates {
  /** Per attempt: 'recorded' once its ctx.step() returned, else the name of what it threw. */
  readonly ended = new Map<number, string>();
}

/**
 * One step, whose function waits at the gate `step#<attempt>` (so a test can hold two attempts
 * inside it at once) and returns the attempt that ran it. For one job at a time.
 */
@Job('steps-gated', { maxAttempts: 3 })
export class GatedStep implements JobHandler<Record<string, never>, { by: number }> {
  constructor(private readonly gates: StepGates) {}

  async run(_: Record<string, never>, ctx: JobContext): Promise<{ by: number }> {
    try {
      const made = await ctx.step('made', async () => {
        await this.gates.wait(`step#${ctx.attempt}`);
        return { by: ctx.attempt };
      });
      this.gates.ended.set(ctx.attempt, 'recorded');
      return made;
    } catch (error) {
      this.gates.ended.set(ctx.attempt, (error as Error).name);
      throw error;
    }
  }
}
