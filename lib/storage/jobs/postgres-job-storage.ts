import { createHash } from 'node:crypto';
import type { OnApplicationShutdown } from '@nestjs/common';
import {
  isUuid,
  type ClaimedJob,
  type FinishedAttempt,
  type JobInfo,
  type JobState,
  type JobStep,
  type NewJob,
  type SerializedError,
} from '../../model/index.js';
import { RETRYABLE_STATES } from '../../model/index.js';
import type {
  CancelResult,
  ClaimRequest,
  ClaimResult,
  FailedJob,
  HeldJob,
  JobStorage,
  LeaseRenewal,
  RescueResult,
  RetryResult,
  WorkerRegistration,
} from './job-storage.interface.js';
import { jobStatements, type JobStatements } from './job-statements.js';
import { stepStatements, type StepStatements } from './step-statements.js';
import {
  dueQueues,
  encodeNewJobColumns,
  encodeOutcomes,
  encodeUniformJobs,
  queueFeatures,
  uuidv7Floor,
} from './job-encoding.js';
import { insertUniqueJobs } from './unique-jobs.js';
import { claimResult, jobInfoFromRows, type ClaimRow } from './job-rows.js';
import { executorFor, PoolExecutor, type SqlExecutor } from '../connection/sql-executor.js';
import { WorkerPool } from '../connection/worker-pool.js';
import type { StorageContext } from '../storage-context.js';
import type { TxScope } from '../storage-tx.interface.js';

/**
 * Statements sent as named prepared statements, parsed and planned once per
 * connection: a single-job enqueue and an idle worker's claim spend ~0.3 ms
 * each on planning otherwise, which is most of the enqueue-to-start latency
 * beyond the commit. The success write runs once per completion batch, so its
 * parse and plan were ~10% of its server time (2.5 of 28 us per job in
 * batches of 500, measured). Their generic plans are the custom ones
 * (checked with plan_cache_mode = force_generic_plan: the success write finds
 * its rows through the primary key whatever the batch size). The rarer
 * outcome statements stay unnamed.
 */
const PREPARED: ReadonlySet<keyof JobStatements> = new Set([
  'insert',
  'insertUniform',
  'claim',
  'claimControlled',
  'succeed',
  'succeedAndClaim',
]);

/** How long closing the worker's pool may wait for its sessions to end. */
const CLOSE_WITHIN_MS = 5_000;

/** Claims, up to three outcome writes and a renewal can be in flight at once. */
const WORKER_CONNECTIONS = 5;

type Row = Record<string, unknown>;

export class PostgresJobStorage implements JobStorage, OnApplicationShutdown {
  private readonly sql: JobStatements;
  private readonly steps: StepStatements;
  private readonly preparedNames: ReadonlyMap<keyof JobStatements, string>;
  private readonly pool: PoolExecutor;
  private readonly channel: string;

  private workerPool: WorkerPool | null = null;

  constructor(
    private readonly context: StorageContext,
    /**
     * Commit claims, outcomes and renewals without waiting for the WAL flush
     * (worker.synchronousCommit false). A PostgreSQL crash can then undo the
     * last moments of them: those jobs run again (at least once still holds);
     * no job is ever lost, because enqueues always wait for the flush.
     */
    private readonly relaxedCommit = false,
  ) {
    this.sql = jobStatements(context.schema);
    this.steps = stepStatements(context.schema);
    // Unique per statement text: the app's pool may serve several schemas, and a name must mean one text.
    this.preparedNames = new Map(
      [...PREPARED].map((key) => [
        key,
        `durable_jobs_${key}_${createHash('sha1').update(this.sql[key]).digest('hex').slice(0, 12)}`,
      ]),
    );
    this.pool = context.executor;
    this.channel = context.channel;
  }

  private run<T = Row>(key: keyof JobStatements, values: unknown[], executor: SqlExecutor = this.pool): Promise<T[]> {
    return executor.query<T>(this.sql[key], values, this.preparedNames.get(key));
  }

  /** The worker's hot-path writes go through its own small pool (see WorkerPool). */
  private runWorker<T = Row>(key: keyof JobStatements, values: unknown[], tx?: SqlExecutor): Promise<T[]> {
    return this.run<T>(key, values, tx ?? this.workerConnections().executor);
  }

  private workerConnections(): WorkerPool {
    return (this.workerPool ??= new WorkerPool(this.context, WORKER_CONNECTIONS, this.relaxedCommit));
  }

  async openWorkerConnections(): Promise<void> {
    await this.workerConnections().warm(WORKER_CONNECTIONS);
  }

  /** Nest calls this on shutdown: the worker closes its connections itself, anything else that opened them here. */
  async onApplicationShutdown(): Promise<void> {
    await this.closeWorkerConnections();
  }

  async closeWorkerConnections(): Promise<void> {
    const pool = this.workerPool;
    this.workerPool = null;
    await pool?.close(CLOSE_WITHIN_MS);
  }

  insertJobs(jobs: readonly NewJob[], now: Date, tx?: TxScope): Promise<Map<string, string>> {
    return this.insertOn(executorFor(tx, this.pool), jobs, now);
  }

  /** The plain path is one statement; unique keys, groups and serial keys add a few, then in one transaction. */
  private async insertOn(
    executor: SqlExecutor,
    jobs: readonly NewJob[],
    now: Date,
    settledKeys?: Map<string, string>,
  ): Promise<Map<string, string>> {
    if (jobs.length === 0) return new Map();
    const features = queueFeatures(jobs);
    const unique = jobs.filter((j) => j.uniqueKey);
    if (!unique.length && !features.groups.length && !features.serial.length) {
      await this.insertPlain(executor, jobs, now);
      return new Map();
    }
    return executor.transaction(async (tx) => {
      await this.flagQueuesOn(tx, jobs, now, features);
      const plain = unique.length ? jobs.filter((j) => !j.uniqueKey) : jobs;
      if (plain.length) await this.insertPlain(tx, plain, now);
      return unique.length
        ? insertUniqueJobs((k, v, e) => this.run(k, v, e), tx, unique, now, this.channel, settledKeys)
        : new Map();
    });
  }

  private async insertPlain(executor: SqlExecutor, jobs: readonly NewJob[], now: Date): Promise<void> {
    const due = dueQueues(jobs, now);
    const uniform = encodeUniformJobs(jobs);
    if (uniform) await this.run('insertUniform', [...uniform, now, this.channel, due], executor);
    else await this.run('insert', [...encodeNewJobColumns(jobs), now, this.channel, due], executor);
  }

  /**
   * Marks the queues that now hold grouped or serial jobs (see flagQueues
   * in job-statements.ts); a no-op for jobs without either. Workflow inserts
   * call it too, in their own transaction.
   */
  async flagQueuesOn(
    executor: SqlExecutor,
    jobs: readonly NewJob[],
    now: Date,
    features = queueFeatures(jobs),
  ): Promise<void> {
    if (!features.groups.length && !features.serial.length) return;
    const queues = [...new Set([...features.groups, ...features.serial])];
    await this.run(
      'flagQueues',
      [
        queues,
        queues.map((q) => features.groups.includes(q)),
        queues.map((q) => features.serial.includes(q)),
        now,
        this.channel,
      ],
      executor,
    );
  }

  async insertJobChunks(chunks: Iterable<readonly NewJob[]>, now: Date, tx?: TxScope): Promise<Map<string, string>> {
    const duplicates = new Map<string, string>();
    // Unique keys the call's earlier chunks settled, for its later ones.
    const settledKeys = new Map<string, string>();
    await executorFor(tx, this.pool).transaction(async (conn) => {
      // The next chunk is pulled from the iterator (built) while the last one
      // is being inserted, so this process and PostgreSQL work at once rather
      // than by turns. One statement at a time on the connection: pg 8
      // deprecates queueing queries on a busy client. The iterator may throw
      // (a job that fails its checks): the transaction then rolls back.
      let inFlight: Promise<void> | null = null;
      const collect = (found: Map<string, string>) => {
        for (const [id, holder] of found) duplicates.set(id, holder);
      };
      try {
        for (const chunk of chunks) {
          if (inFlight) await inFlight;
          inFlight = this.insertOn(conn, chunk, now, settledKeys).then(collect);
        }
        await inFlight;
      } catch (error) {
        await inFlight?.catch(() => undefined);
        throw error;
      }
    });
    return duplicates;
  }

  async claim(r: ClaimRequest): Promise<ClaimedJob[]> {
    // Rows arrive in claim order and already shaped as ClaimedJob: no second object per job.
    return this.runWorker<ClaimedJob>('claim', [r.queue, r.now, r.names, r.limit, r.workerId, r.leaseMs]);
  }

  async claimControlled(r: ClaimRequest): Promise<ClaimResult> {
    const values = [r.queue, r.now, r.names, r.limit, r.workerId, r.leaseMs];
    return claimResult(await this.runWorker<ClaimRow>('claimControlled', values));
  }

  async expireDeadlines(now: Date, limit: number): Promise<number> {
    const [row] = await this.run<{ expired: number }>('expireDeadlines', [now, limit, this.channel]);
    return row?.expired ?? 0;
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
    const { succeededIds, succeededAttempts, results } = encodeOutcomes(
      attempts.filter((a) => a.outcome.kind === 'succeeded'),
    );
    const values = [succeededIds, workerId, now, this.channel, JSON.stringify(succeededAttempts)];
    const [rows, applied] = await Promise.all([
      this.runWorker<ClaimRow & { done: boolean }>('succeedAndClaim', [
        ...values,
        JSON.stringify(results),
        claim.queue,
        claim.names,
        claim.limit,
        claim.leaseMs,
      ]),
      this.finish(
        workerId,
        attempts.filter((a) => a.outcome.kind !== 'succeeded'),
        now,
        leaseMs,
      ),
    ]);
    for (const row of rows) if (row.done) applied.add(row.id);
    return { applied, claimed: claimResult(rows.filter((row) => !row.done)) };
  }

  /** The outcome writes, on `tx` when they must commit with something else (continuations). */
  async finishOn(
    tx: SqlExecutor | undefined,
    workerId: string,
    attempts: readonly FinishedAttempt[],
    now: Date,
    leaseMs: number,
  ): Promise<Set<string>> {
    const { succeededIds, succeededAttempts, results, failedIds, failures } = encodeOutcomes(attempts);
    const applied = new Set<string>();
    const writes: Array<Promise<Row[]>> = [];
    if (succeededIds.length) {
      writes.push(
        this.runWorker(
          'succeed',
          [succeededIds, workerId, now, this.channel, JSON.stringify(succeededAttempts), JSON.stringify(results)],
          tx,
        ),
      );
    }
    if (failedIds.length) {
      const values = [failedIds, workerId, now, this.channel, JSON.stringify(failures), leaseMs];
      writes.push(this.runWorker('fail', values, tx));
    }
    for (const rows of await Promise.all(writes)) for (const row of rows) if (row.id) applied.add(row.id as string);
    return applied;
  }

  async renewLeases(workerId: string, jobs: readonly HeldJob[], now: Date, leaseMs: number): Promise<LeaseRenewal> {
    if (jobs.length === 0) return { lost: [], cancelRequested: [] };
    const rows = await this.runWorker('renew', [jobs.map((j) => j.id), workerId, now, leaseMs, attemptsById(jobs)]);
    const kept = new Set(rows.map((r) => r.id as string));
    return {
      lost: jobs.filter((j) => !kept.has(j.id)).map((j) => j.id),
      cancelRequested: rows.filter((r) => r.cancel_requested).map((r) => r.id as string),
    };
  }

  async handBack(workerId: string, jobs: readonly HeldJob[], now: Date, error: SerializedError | null): Promise<void> {
    if (jobs.length === 0) return;
    await this.run('handBack', [
      jobs.map((j) => j.id),
      workerId,
      now,
      error ? JSON.stringify(error) : null,
      attemptsById(jobs),
      this.channel,
    ]);
  }

  async rescueExpired(now: Date, limit: number): Promise<RescueResult> {
    const [row] = await this.run<RescueResult>('rescue', [now, limit, this.channel]);
    return { rescued: row?.rescued ?? 0, failed: row?.failed ?? 0 };
  }

  claimFailureHooks(
    workerId: string,
    names: readonly string[],
    limit: number,
    now: Date,
    leaseMs: number,
  ): Promise<FailedJob[]> {
    return this.run<FailedJob>('claimHooks', [workerId, now, names, limit, leaseMs]);
  }

  async renewFailureHooks(workerId: string, ids: readonly string[], now: Date, leaseMs: number): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.run('renewHooks', [ids, workerId, now, leaseMs]);
    return new Set(rows.map((r) => r.id as string));
  }

  async settleFailureHooks(workerId: string, ids: readonly string[], outcome: 'done' | 'pending'): Promise<void> {
    if (ids.length) await this.run('settleHooks', [ids, workerId, outcome]);
  }

  async updateProgress(workerId: string, job: HeldJob, progress: number, message: string | null): Promise<void> {
    await this.run('progress', [job.id, job.attempt, workerId, progress, message]);
  }

  async cancel(id: string, now: Date): Promise<CancelResult> {
    // Two tries: a job may move between "queued" and "active" under our feet.
    for (let i = 0; i < 2; i++) {
      if ((await this.run('cancelQueued', [id, now, this.channel])).some((r) => r.id)) return { outcome: 'cancelled' };
      if ((await this.run('cancelActive', [id, this.channel])).length) return { outcome: 'requested' };
      const [row] = await this.run('stateOf', [id]);
      if (!row) return { outcome: 'not-found' };
      const state = row.state as JobState;
      if (state !== 'queued' && state !== 'waiting' && state !== 'active') return { outcome: 'finished', state };
    }
    return { outcome: 'requested' };
  }

  async retry(id: string, now: Date, resetSteps = false): Promise<RetryResult> {
    const rows = await this.run('retry', [id, now, this.channel, RETRYABLE_STATES, resetSteps]);
    if (rows.some((r) => r.id)) return { outcome: 'requeued' };
    const [row] = await this.run('stateOf', [id]);
    if (!row) return { outcome: 'not-found' };
    return { outcome: 'not-retryable', state: row.state as JobState };
  }

  async getJob(id: string, options: { stepResults?: boolean } = {}): Promise<JobInfo | null> {
    if (!isUuid(id)) return null;
    const [[row], executionRows, steps] = await Promise.all([
      this.run('getJob', [id]),
      this.run('getExecutions', [id]),
      this.pool.query<JobStep>(this.steps.list, [id, options.stepResults === true]),
    ]);
    if (!row) return null;
    return jobInfoFromRows(row, executionRows, steps, options.stepResults === true);
  }

  async registerWorker(w: WorkerRegistration): Promise<void> {
    await this.run('registerWorker', [w.id, w.host, w.pid, w.queues, w.concurrency, w.now]);
  }

  async heartbeatWorker(id: string, now: Date, active: number): Promise<boolean> {
    return (await this.run('heartbeatWorker', [id, now, active])).length > 0;
  }

  async unregisterWorker(id: string, now: Date): Promise<void> {
    await this.run('unregisterWorker', [id, now]);
  }

  async queuesWithWork(): Promise<string[]> {
    return (await this.run('queuesWithWork', [])).map((r) => r.queue as string);
  }

  async prune(states: readonly string[], before: Date, limit: number): Promise<number> {
    const rows = await this.run('prune', [uuidv7Floor(before), states, before, limit]);
    return rows.length;
  }

  async pruneWorkers(before: Date): Promise<number> {
    return (await this.run('pruneWorkers', [before])).length;
  }

  async pruneBatches(before: Date, limit: number): Promise<number> {
    const rows = await this.run('pruneBatches', [uuidv7Floor(before), before, limit]);
    return rows.length;
  }
}

/** `{ "<job id>": attempt }`, the shape the lease statements read per row. */
function attemptsById(jobs: readonly HeldJob[]): string {
  const byId: Record<string, number> = {};
  for (const j of jobs) byId[j.id] = j.attempt;
  return JSON.stringify(byId);
}
