import { Inject, Injectable, Module, Scope } from '@nestjs/common';
import { REQUEST } from '@nestjs/core';
import { Cron, Job, JobQueue, PermanentJobError, type JobContext, type JobHandler } from 'nestjs-durable-jobs';

/** What the testing kit's jobs did, per app. */
@Injectable()
export class KitLog {
  /** Every handler call in order: `name:tag#attempt`. */
  readonly calls: string[] = [];
  /** onFailure calls: job id → the error's name and message. */
  readonly failures = new Map<string, string>();
  /** The charge job's ledger: one entry per job id however often it runs. */
  readonly ledger = new Map<string, number>();
  /** Why held runs were aborted, per job id. */
  readonly aborted = new Map<string, string>();
  private readonly gates = new Map<string, () => void>();
  private readonly started = new Map<string, () => void>();

  record(name: string, tag: string, ctx: JobContext): void {
    this.calls.push(`${name}:${tag}#${ctx.attempt}`);
  }

  /** Resolves once a held run of `tag` has started. */
  whenStarted(tag: string): Promise<void> {
    return new Promise((resolve) => this.started.set(tag, resolve));
  }

  /** Holds a run until release(tag) or until its signal aborts (then rejects with the reason). */
  hold(tag: string, ctx: JobContext): Promise<void> {
    return new Promise((resolve, reject) => {
      ctx.signal.addEventListener(
        'abort',
        () => {
          this.aborted.set(ctx.jobId, (ctx.signal.reason as Error).name);
          reject(ctx.signal.reason as Error);
        },
        { once: true },
      );
      this.gates.set(tag, resolve);
      this.started.get(tag)?.();
    });
  }

  release(tag: string): void {
    this.gates.get(tag)?.();
  }
}

export interface GreetPayload {
  tag: string;
  /** Stage a continuation with this tag (ctx.continueWith). */
  then?: string;
  /** Enqueue another greet with this tag from inside the handler (JobQueue.enqueue). */
  spawn?: string;
}

/** Waits a minute (on the app's clock) for a decision, and returns it: null when none came. */
@Job('kit-await-decision', { queue: 'greetings' })
export class AwaitDecision implements JobHandler<{ tag: string }> {
  run(_payload: { tag: string }, ctx: JobContext): Promise<unknown> {
    return ctx.waitForSignal('decision', { timeout: 60_000 });
  }
}

@Job('kit-greet', { queue: 'greetings' })
export class Greet implements JobHandler<GreetPayload, { greeted: string }> {
  constructor(
    private readonly log: KitLog,
    private readonly jobs: JobQueue,
  ) {}

  async run(payload: GreetPayload, ctx: JobContext): Promise<{ greeted: string }> {
    this.log.record('greet', payload.tag, ctx);
    if (payload.then) ctx.continueWith(Greet, { tag: payload.then });
    if (payload.spawn) await this.jobs.enqueue(Greet, { tag: payload.spawn });
    this.log.record('greet-end', payload.tag, ctx);
    return { greeted: payload.tag };
  }
}

/** Fails until attempt `okFrom` (never, without it); a minute's fixed backoff between attempts. */
@Job('kit-flaky', { maxAttempts: 3, backoff: { type: 'fixed', delay: 60_000 } })
export class Flaky implements JobHandler<{ tag: string; okFrom?: number; permanent?: boolean }> {
  constructor(private readonly log: KitLog) {}

  async run(payload: { tag: string; okFrom?: number; permanent?: boolean }, ctx: JobContext): Promise<void> {
    this.log.record('flaky', payload.tag, ctx);
    if (payload.permanent) throw new PermanentJobError(`${payload.tag}: the record is gone`);
    if (payload.okFrom === undefined || ctx.attempt < payload.okFrom) {
      throw new Error(`${payload.tag}: attempt ${ctx.attempt} broke`);
    }
  }

  async onFailure(_: unknown, error: Error, ctx: JobContext): Promise<void> {
    this.log.failures.set(ctx.jobId, `${error.name}: ${error.message}`);
  }
}

/** Charges once per job id, whatever the number of runs: the idempotent handler dieAfterWork tests. */
@Job('kit-charge')
export class Charge implements JobHandler<{ amount: number }, { charged: boolean }> {
  constructor(private readonly log: KitLog) {}

  async run(payload: { amount: number }, ctx: JobContext): Promise<{ charged: boolean }> {
    this.log.record('charge', String(payload.amount), ctx);
    if (this.log.ledger.has(ctx.jobId)) return { charged: false };
    this.log.ledger.set(ctx.jobId, payload.amount);
    return { charged: true };
  }
}

/** Runs until the test releases it, or its signal aborts. */
@Job('kit-held', { maxAttempts: 1 })
export class Held implements JobHandler<{ tag: string }> {
  constructor(private readonly log: KitLog) {}

  async run(payload: { tag: string }, ctx: JobContext): Promise<void> {
    this.log.record('held', payload.tag, ctx);
    await this.log.hold(payload.tag, ctx);
  }
}

/** Continues with itself every time: a drain never ends on its own. */
@Job('kit-forever')
export class Forever implements JobHandler<{ n: number }> {
  run(payload: { n: number }, ctx: JobContext): void {
    ctx.continueWith(Forever, { n: payload.n + 1 });
  }
}

/** Every five minutes. */
@Cron('*/5 * * * *', { timeZone: 'UTC' })
@Job('kit-tick')
export class Tick implements JobHandler<void> {
  constructor(private readonly log: KitLog) {}

  run(_: void, ctx: JobContext): void {
    this.log.record('tick', '', ctx);
  }
}

/** One per run: what the library registers as REQUEST for a job's DI sub-tree. */
@Injectable({ scope: Scope.REQUEST })
export class RunContext {
  constructor(@Inject(REQUEST) readonly request: { job: JobContext }) {}
}

/** Request-scoped through RunContext; onFailure tells whether it got its own run's context. */
@Job('kit-scoped', { maxAttempts: 1 })
export class Scoped implements JobHandler<{ tag: string }, { sameJob: boolean }> {
  constructor(
    private readonly context: RunContext,
    private readonly log: KitLog,
  ) {}

  run(payload: { tag: string }, ctx: JobContext): { sameJob: boolean } {
    this.log.record('scoped', payload.tag, ctx);
    return { sameJob: this.context.request.job.jobId === ctx.jobId };
  }

  onFailure(_: unknown, error: Error, ctx: JobContext): void {
    this.log.failures.set(ctx.jobId, `${error.message} (own context: ${this.context.request.job.jobId === ctx.jobId})`);
  }
}

@Module({
  providers: [KitLog, Greet, AwaitDecision, Flaky, Charge, Held, Forever, Tick, RunContext, Scoped],
  exports: [KitLog],
})
export class KitJobsModule {}
