import {
  boundError,
  type FinishedAttempt,
  type JobCipher,
  openClaimed,
  sealErrorFor,
  type SerializedError,
} from '../../../model/index.js';
import type { SqlExecutor } from '../../sql/sql-executor.js';
import type { StorageContext } from '../../sql/storage-context.js';
import type { ClaimRequest, ClaimResult } from '../claim/claim-storage.interface.js';
import { encodeOutcomes, uuidList } from '../job-encoding.js';
import { claimResult, type ClaimRow } from '../job-rows.js';
import { preparedStatements } from '../statement-runner.js';
import type { WorkerConnections } from '../worker-connections.js';
import type { FailedJob, FailureHookEnd, HeldJob, LeaseRenewal, OutcomeStorage } from './outcome-storage.interface.js';
import { outcomeStatements, type OutcomeStatements } from './outcome-statements.js';

/**
 * The success write runs once per completion batch, so its parse and plan
 * were ~10% of its server time (2.5 of 28 us per job in batches of 500,
 * measured): it goes prepared. Its generic plan is the custom one (checked
 * with plan_cache_mode = force_generic_plan: it finds its rows through the
 * primary key whatever the batch size). The rarer writes stay unnamed.
 */
const PREPARED: ReadonlyArray<keyof OutcomeStatements> = [
  'succeed',
  'succeedWithSuccessors',
  'succeedAndClaim',
  'forget',
  'forgetWithSuccessors',
  'forgetAndClaim',
  'fail',
];

type Row = Record<string, unknown>;

type EncodedOutcomes = ReturnType<typeof encodeOutcomes>;

/** Outcomes, leases, progress, the shutdown hand-back and the onFailure hooks of the jobs a worker holds. */
export class PostgresOutcomeStorage implements OutcomeStorage {
  private readonly sql: OutcomeStatements;
  private readonly pool: SqlExecutor;
  private readonly channel: string;
  private readonly cipher: JobCipher;
  private readonly maxErrorBytes: number;

  constructor(
    context: StorageContext,
    private readonly connections: WorkerConnections,
  ) {
    this.sql = preparedStatements(outcomeStatements(context.schema), PREPARED);
    this.pool = context.executor;
    this.channel = context.channel;
    this.cipher = context.cipher;
    this.maxErrorBytes = context.maxErrorBytes;
  }

  /** The worker's hot-path writes go through its own small pool (see WorkerPool). */
  private worker(tx?: SqlExecutor): SqlExecutor {
    return tx ?? this.connections.executor;
  }

  finish(workerId: string, attempts: readonly FinishedAttempt[], now: Date, leaseMs: number): Promise<Set<string>> {
    return this.finishOn(undefined, workerId, attempts, now, leaseMs);
  }

  async finishAndClaim(
    workerId: string,
    attempts: readonly FinishedAttempt[],
    now: Date,
    leaseMs: number,
    claim: ClaimRequest,
  ): Promise<{ applied: Set<string>; claimed: ClaimResult }> {
    const success = this.successArgs(
      encodeOutcomes(
        attempts.filter((a) => a.outcome.kind === 'succeeded'),
        this.cipher,
        this.maxErrorBytes,
      ),
      workerId,
      now,
    );
    const args = {
      ...success,
      queue: claim.queue,
      names: claim.names,
      limit: claim.limit,
      leaseMs: claim.leaseMs,
      share: claim.share ?? false,
      ahead: claim.ahead ?? 0,
    };
    type Done = ClaimRow & { done: boolean };
    const { forget } = args;
    const [rows, applied] = await Promise.all([
      forget !== undefined
        ? this.sql.forgetAndClaim.run<Done>(this.worker(), { ...args, forget })
        : this.sql.succeedAndClaim.run<Done>(this.worker(), args),
      this.finish(
        workerId,
        attempts.filter((a) => a.outcome.kind !== 'succeeded'),
        now,
        leaseMs,
      ),
    ]);
    for (const row of rows) if (row.done) applied.add(row.id);
    return {
      applied,
      claimed: claimResult(
        this.cipher,
        rows.filter((row) => !row.done),
        now,
      ),
    };
  }

  /** The outcome writes, on `tx` when they must commit with something else (continuations). */
  async finishOn(
    tx: SqlExecutor | undefined,
    workerId: string,
    attempts: readonly FinishedAttempt[],
    now: Date,
    leaseMs: number,
  ): Promise<Set<string>> {
    const encoded = encodeOutcomes(attempts, this.cipher, this.maxErrorBytes);
    const { failedIds, failures } = encoded;
    const applied = new Set<string>();
    const writes: Array<Promise<Row[]>> = [];
    if (encoded.succeededIds.length) {
      writes.push(this.writeSuccesses(this.worker(tx), this.successArgs(encoded, workerId, now)));
    }
    if (failedIds.length) {
      const failed = {
        ids: uuidList(failedIds),
        workerId,
        now,
        channel: this.channel,
        failures: JSON.stringify(failures),
        leaseMs,
      };
      writes.push(this.sql.fail.run(this.worker(tx), failed));
    }
    for (const rows of await Promise.all(writes)) for (const row of rows) if (row.id) applied.add(row.id as string);
    return applied;
  }

  /**
   * The arguments of every success write (plain, with successors, forgetting, claiming): `forget`
   * only when some of the successes are forgotten, which picks the forgetting variant.
   */
  private successArgs(encoded: EncodedOutcomes, workerId: string, now: Date) {
    const { succeededIds, succeededAttempts, forgottenIds, results, traces, successors } = encoded;
    return {
      ids: uuidList(succeededIds),
      workerId,
      now,
      channel: this.channel,
      attempts: succeededAttempts,
      results: JSON.stringify(results),
      traces: traces && JSON.stringify(traces),
      successors: successors && JSON.stringify(successors),
      forget: forgottenIds.length ? uuidList(forgottenIds) : undefined,
    };
  }

  /** The success write that fits: forgetting some of them or keeping all, with successors or without. */
  private writeSuccesses(on: SqlExecutor, args: ReturnType<typeof this.successArgs>): Promise<Row[]> {
    const { forget, successors } = args;
    if (forget !== undefined) {
      return successors !== null
        ? this.sql.forgetWithSuccessors.run(on, { ...args, forget, successors })
        : this.sql.forget.run(on, { ...args, forget });
    }
    return successors !== null
      ? this.sql.succeedWithSuccessors.run(on, { ...args, successors })
      : this.sql.succeed.run(on, args);
  }

  async renewLeases(workerId: string, jobs: readonly HeldJob[], now: Date, leaseMs: number): Promise<LeaseRenewal> {
    if (jobs.length === 0) return { lost: [], cancelRequested: [] };
    const renewal = { ids: jobs.map((j) => j.id), workerId, now, leaseMs, attempts: attemptsById(jobs) };
    const spans = spansById(jobs);
    // On the connection kept for renewals: a renewal never waits behind claims, outcomes or steps.
    const on = this.connections.renewals;
    const rows = spans
      ? await this.sql.renewTraced.run(on, { ...renewal, spans })
      : await this.sql.renew.run(on, renewal);
    const kept = new Set(rows.map((r) => r.id as string));
    return {
      lost: jobs.filter((j) => !kept.has(j.id)),
      cancelRequested: rows.filter((r) => r.cancel_requested).map((r) => r.id as string),
    };
  }

  async handBack(workerId: string, jobs: readonly HeldJob[], now: Date, error: SerializedError | null): Promise<void> {
    if (jobs.length === 0) return;
    await this.sql.handBack.run(this.pool, {
      ids: jobs.map((j) => j.id),
      workerId,
      now,
      error: error ? JSON.stringify(boundError(error, this.maxErrorBytes)) : null,
      attempts: attemptsById(jobs),
      channel: this.channel,
      spans: spansById(jobs),
    });
  }

  async recordLostSpan(workerId: string, job: HeldJob): Promise<void> {
    const { started } = job;
    if (!started?.traceId) return;
    await this.sql.lostSpan.run(this.pool, {
      jobId: job.id,
      attempt: job.attempt,
      workerId,
      traceId: started.traceId,
      spanId: started.spanId,
    });
  }

  async updateProgress(workerId: string, job: HeldJob, progress: number, message: string | null): Promise<void> {
    const stored = message !== null && job.encrypted ? this.cipher.sealText(message) : message;
    await this.sql.progress.run(this.pool, {
      jobId: job.id,
      attempt: job.attempt,
      workerId,
      progress,
      message: stored,
    });
  }

  claimFailureHooks(
    workerId: string,
    names: readonly string[],
    limit: number,
    now: Date,
    leaseMs: number,
  ): Promise<FailedJob[]> {
    return this.sql.claimHooks
      .run<FailedJob>(this.pool, { workerId, now, names, limit, leaseMs })
      .then((jobs) => openClaimed(this.cipher, jobs));
  }

  async renewFailureHooks(workerId: string, ids: readonly string[], now: Date, leaseMs: number): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.sql.renewHooks.run(this.connections.renewals, { ids, workerId, now, leaseMs });
    return new Set(rows.map((r) => r.id as string));
  }

  async settleFailureHook(
    workerId: string,
    job: { id: string; encrypted?: boolean },
    end: FailureHookEnd,
  ): Promise<void> {
    const error = end.error
      ? JSON.stringify(sealErrorFor(this.cipher, job, boundError(end.error, this.maxErrorBytes)))
      : null;
    const runAt = end.state === 'pending' ? end.runAt : null;
    await this.sql.settleHook.run(this.pool, {
      jobId: job.id,
      workerId,
      state: end.state,
      runAt,
      error,
      none: end.state !== 'pending' && !!end.none,
    });
  }

  async giveBackFailureHooks(workerId: string, ids: readonly string[]): Promise<void> {
    if (ids.length) await this.sql.giveBackHooks.run(this.pool, { ids, workerId });
  }
}

/** `{ "<job id>": attempt }`, the shape the lease statements read per row. */
function attemptsById(jobs: readonly HeldJob[]): string {
  const byId: Record<string, number> = {};
  for (const j of jobs) byId[j.id] = j.attempt;
  return JSON.stringify(byId);
}

/**
 * `{ "<job id>": "trace/span/handler start in epoch ms" }` of the traced attempts among `jobs`, the
 * shape the success write reads too; null when none is traced, so an untraced worker sends nothing.
 */
function spansById(jobs: readonly HeldJob[]): string | null {
  let byId: Record<string, string> | null = null;
  for (const { id, started } of jobs) {
    if (started?.traceId) (byId ??= {})[id] = `${started.traceId}/${started.spanId ?? ''}/${started.at.getTime()}`;
  }
  return byId && JSON.stringify(byId);
}
