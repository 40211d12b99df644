import { Job, PermanentJobError, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { sql } from './database.js';

/** What a HookProbe job is told: where to record its hook's runs, and how its hook ends. */
export interface HookProbePayload {
  /** The schema of the `hook_run` table (see hookRunTable). */
  schema: string;
  /** The hook's first this-many runs throw; later ones return. */
  failTimes: number;
  /** The hook throws a PermanentJobError. */
  permanent?: boolean;
  /** The hook's errors end with this many bytes more of message (and so of stack). */
  padBytes?: number;
  /** In the process whose HOOK_INSTANCE is 'child', the hook's run of this number never ends (a SIGKILL ends it). */
  hangOnRun?: number;
}

/** The table HookProbe's hook records its runs in, across processes. */
export async function hookRunTable(schema: string): Promise<void> {
  await sql(`CREATE TABLE IF NOT EXISTS "${schema}".hook_run (
    job_id uuid NOT NULL, run int NOT NULL, instance text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`);
}

/** A hook's recorded runs, in order, with the milliseconds since the run before. */
export async function hookRuns(schema: string, id: string) {
  return sql<{ run: number; instance: string; gapMs: number | null }>(
    `SELECT run, instance, (extract(epoch FROM at - lag(at) OVER (ORDER BY run)) * 1000)::float8 AS "gapMs"
       FROM "${schema}".hook_run WHERE job_id = $1 ORDER BY run`,
    [id],
  );
}

/**
 * Fails at once; its onFailure throws its first `failTimes` runs, then returns. Each run records
 * the process it ran in: HOOK_INSTANCE, or 'test'.
 */
@Job('hook-probe', {
  maxAttempts: 1,
  onFailureRetries: { attempts: 4, backoff: { type: 'fixed', delay: 400 } },
})
export class HookProbe implements JobHandler<HookProbePayload> {
  run(): never {
    throw new Error('the job broke');
  }

  async onFailure(payload: HookProbePayload, _error: Error, ctx: JobContext): Promise<void> {
    const [row] = await sql<{ run: number }>(
      `INSERT INTO "${payload.schema}".hook_run (job_id, run, instance)
       SELECT $1, count(*) + 1, $2 FROM "${payload.schema}".hook_run WHERE job_id = $1 RETURNING run`,
      [ctx.jobId, process.env.HOOK_INSTANCE ?? 'test'],
    );
    // Only a SIGKILL of the child ends this run: its lease is left to run out.
    if (row!.run === payload.hangOnRun && process.env.HOOK_INSTANCE === 'child') {
      await new Promise<never>(() => undefined);
    }
    const pad = payload.padBytes ? ` ${'x'.repeat(payload.padBytes)}` : '';
    if (payload.permanent) throw new PermanentJobError(`hook run ${row!.run}: the record is gone${pad}`);
    if (row!.run <= payload.failTimes) throw new Error(`hook run ${row!.run} broke${pad}`);
  }
}

/** HookProbe with a long wait between runs, for a crash during the wait. */
@Job('hook-probe-slow', {
  maxAttempts: 1,
  onFailureRetries: { attempts: 3, backoff: { type: 'fixed', delay: 3_000 } },
})
export class SlowHookProbe extends HookProbe {}

/** Fails at once and has no onFailure. */
@Job('hook-probe-none', { maxAttempts: 1 })
export class NoHookProbe implements JobHandler<Record<string, never>> {
  run(): never {
    throw new Error('the job broke');
  }
}

/** Times out (its attempt waits for its signal); its onFailure is HookProbe's. */
@Job('hook-probe-timeout', {
  maxAttempts: 1,
  timeout: 100,
  onFailureRetries: { attempts: 3, backoff: { type: 'fixed', delay: 100 } },
})
export class TimeoutHookProbe implements JobHandler<HookProbePayload> {
  run(_: HookProbePayload, ctx: JobContext): Promise<void> {
    return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
  }

  onFailure(payload: HookProbePayload, error: Error, ctx: JobContext): Promise<void> {
    return HookProbe.prototype.onFailure.call(this, payload, error, ctx);
  }
}
