import type { ClaimedJob, JobCipher } from '../../../model/index.js';
import type { StorageContext } from '../../sql/storage-context.js';
import { claimedJobs, claimResult, type ClaimedRow, type ClaimRow } from '../job-rows.js';
import { preparedStatements } from '../statement-runner.js';
import type { SqlExecutor } from '../../sql/sql-executor.js';
import type { WorkerConnections } from '../worker-connections.js';
import type { ClaimRequest, ClaimResult, ClaimStorage } from './claim-storage.interface.js';
import { claimStatements, type ClaimStatements } from './claim-statements.js';

/** An idle worker's claim spends ~0.3 ms on planning otherwise: both claims go prepared. */
const PREPARED: ReadonlyArray<keyof ClaimStatements> = ['claim', 'claimControlled'];

/** The plain and the controlled claim, on the worker's own connections. */
export class PostgresClaimStorage implements ClaimStorage {
  private readonly sql: ClaimStatements;
  private readonly pool: SqlExecutor;
  private readonly cipher: JobCipher;
  /** Where a claim that leaves a limit's free slots to waiting workers wakes them. */
  private readonly channel: string;

  constructor(
    context: StorageContext,
    private readonly connections: WorkerConnections,
  ) {
    this.sql = preparedStatements(claimStatements(context.schema), PREPARED);
    this.pool = context.executor;
    this.cipher = context.cipher;
    this.channel = context.channel;
  }

  async claim(r: ClaimRequest): Promise<ClaimedJob[]> {
    // Rows arrive in claim order and already shaped as ClaimedJob: no second object per job.
    const jobs = await this.sql.claim.run<ClaimedRow>(this.connections.executor, r);
    return claimedJobs(this.cipher, jobs, r.now);
  }

  async claimControlled(r: ClaimRequest): Promise<ClaimResult> {
    const rows = await this.sql.claimControlled.run<ClaimRow>(this.connections.executor, {
      queue: r.queue,
      now: r.now,
      names: r.names,
      limit: r.limit,
      workerId: r.workerId,
      leaseMs: r.leaseMs,
      channel: this.channel,
      share: r.share ?? false,
      ahead: r.ahead ?? 0,
    });
    return claimResult(this.cipher, rows, r.now);
  }

  async leaveWaits(workerId: string): Promise<void> {
    await this.sql.leaveWaits.run(this.pool, { workerId });
  }

  async dueJobs(names: readonly string[], now: Date): Promise<{ due: number; locked: number }> {
    const [row] = await this.sql.dueJobs.run(this.pool, { names, now });
    return { due: Number(row?.due ?? 0), locked: Number(row?.locked ?? 0) };
  }

  async queuesWithWork(): Promise<string[]> {
    return (await this.sql.queuesWithWork.run(this.pool, {})).map((r) => r.queue as string);
  }

  openWorkerConnections(): Promise<void> {
    return this.connections.open();
  }

  closeWorkerConnections(): Promise<void> {
    return this.connections.close();
  }
}
