import { Inject, Injectable, Optional, Scope } from '@nestjs/common';
import { REQUEST } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { Job, PermanentJobError, type JobContext, type JobHandler } from 'nestjs-durable-jobs';

/** What probe jobs saw, per app instance. */
@Injectable()
export class ProbeRecorder {
  readonly aborts = new Map<string, string>();
  readonly failures = new Map<string, number>();
  /** Per job: the error onFailure got, and whether ctx.signal was aborted then. */
  readonly failureSeen = new Map<string, { error: string; aborted: boolean }>();
  readonly attempts = new Map<string, number[]>();

  countFailure(id: string): void {
    this.failures.set(id, (this.failures.get(id) ?? 0) + 1);
  }
}

export const INSTANCE_NAME = 'INSTANCE_NAME';

/** Waits for its signal and records why it aborted. */
@Job('probe-timeout', { timeout: 200, maxAttempts: 1 })
export class TimeoutProbe implements JobHandler<Record<string, never>> {
  constructor(private readonly recorder: ProbeRecorder) {}
  async run(_: Record<string, never>, ctx: JobContext): Promise<void> {
    await new Promise<void>((_resolve, reject) => {
      ctx.signal.addEventListener('abort', () => {
        this.recorder.aborts.set(ctx.jobId, (ctx.signal.reason as Error).name);
        reject(ctx.signal.reason as Error);
      });
    });
  }
}

/** Runs until its signal aborts (no timeout of its own) and records why; records each attempt as it starts. */
@Job('probe-until-aborted', { maxAttempts: 1 })
export class UntilAbortedProbe implements JobHandler<Record<string, never>> {
  constructor(private readonly recorder: ProbeRecorder) {}
  async run(_: Record<string, never>, ctx: JobContext): Promise<void> {
    this.recorder.attempts.set(ctx.jobId, [...(this.recorder.attempts.get(ctx.jobId) ?? []), ctx.attempt]);
    await new Promise<void>((_resolve, reject) => {
      ctx.signal.addEventListener('abort', () => {
        this.recorder.aborts.set(ctx.jobId, (ctx.signal.reason as Error).name);
        reject(ctx.signal.reason as Error);
      });
    });
  }
}

/** Always fails; counts onFailure calls. */
@Job('probe-doomed', { maxAttempts: 3, backoff: { type: 'fixed', delay: 0 } })
export class DoomedProbe implements JobHandler<{ permanent?: boolean }> {
  constructor(private readonly recorder: ProbeRecorder) {}
  async run(payload: { permanent?: boolean }, ctx: JobContext): Promise<void> {
    this.recorder.attempts.set(ctx.jobId, [...(this.recorder.attempts.get(ctx.jobId) ?? []), ctx.attempt]);
    if (payload.permanent) throw new PermanentJobError('the record is gone');
    throw new Error(`attempt ${ctx.attempt} broke`);
  }
  async onFailure(_: unknown, error: Error, ctx: JobContext): Promise<void> {
    this.recorder.countFailure(ctx.jobId);
    this.recorder.failureSeen.set(ctx.jobId, { error: error.name, aborted: ctx.signal.aborted });
  }
}

/**
 * A meeting point for runs on several app instances of this process: the
 * first `size` runs wait until `size` of them are running at once; later
 * runs pass straight through.
 */
export class RunMeeting {
  private arrived = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly size: number) {}

  async arrive(): Promise<void> {
    if (this.arrived >= this.size) return;
    if (++this.arrived === this.size) for (const go of this.waiting.splice(0)) go();
    else await new Promise<void>((go) => this.waiting.push(go));
  }
}

/** Records each run in a table, with the instance that ran it; meets the others first if given a RunMeeting. */
@Job('probe-count', { queue: 'counting' })
export class CountingProbe implements JobHandler<{ i: number }> {
  constructor(
    private readonly dataSource: DataSource,
    @Inject(INSTANCE_NAME) private readonly instance: string,
    @Optional() private readonly meeting?: RunMeeting,
  ) {}
  async run(_: { i: number }, ctx: JobContext): Promise<void> {
    await this.meeting?.arrive();
    const schema = (this.dataSource.options as { schema?: string }).schema!;
    await this.dataSource.query(`INSERT INTO "${schema}".probe_run (job_id, instance) VALUES ($1, $2)`, [
      ctx.jobId,
      this.instance,
    ]);
  }
}

let perRunInstances = 0;

/** A request-scoped dependency: one instance per job run, seeing that run's context. */
@Injectable({ scope: Scope.REQUEST })
export class PerRunDependency {
  readonly serial = ++perRunInstances;
  constructor(@Inject(REQUEST) readonly request: { job: JobContext }) {}
}

/** Depends on a request-scoped service, so it gets its own DI sub-tree per run. */
@Job('probe-scoped')
export class ScopedProbe implements JobHandler<Record<string, never>> {
  constructor(private readonly dependency: PerRunDependency) {}
  run(_: Record<string, never>, ctx: JobContext) {
    return { serial: this.dependency.serial, sameJob: this.dependency.request.job.jobId === ctx.jobId };
  }
}

export function probeProviders(instance = 'A') {
  return [
    ProbeRecorder,
    TimeoutProbe,
    UntilAbortedProbe,
    DoomedProbe,
    CountingProbe,
    PerRunDependency,
    ScopedProbe,
    { provide: INSTANCE_NAME, useValue: instance },
  ];
}
