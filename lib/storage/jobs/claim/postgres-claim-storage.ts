import type { ClaimedJob, JobCipher } from '../../../model/index.js';
import type { StorageContext } from '../../sql/storage-context.js';
import { claimedJobs, claimResult, type ClaimRow } from '../job-rows.js';
import { StatementRunner } from '../statement-runner.js';
import type { WorkerConnections } from '../worker-connections.js';
import type { ClaimRequest, ClaimResult, ClaimStorage } from './claim-storage.interface.js';
import { claimStatements, type ClaimStatements } from './claim-statements.js';

/** An idle worker's claim spends ~0.3 ms on planning otherwise: both claims go prepared. */
const PREPARED: ReadonlyArray<keyof ClaimStatements> = ['claim', 'claimControlled'];

/** The plain and the controlled claim, on the worker's own connections. */
export class PostgresClaimStorage implements ClaimStorage {
  private readonly statements: StatementRunner<keyof ClaimStatements>;
  private readonly cipher: JobCipher;
  /** Where a claim that leaves a limit's free slots to waiting workers wakes them. */
  private readonly channel: string;

  constructor(
    context: StorageContext,
    private readonly connections: WorkerConnections,
  ) {
    this.statements = new StatementRunner(claimStatements(context.schema), PREPARED, context.executor);
    this.cipher = context.cipher;
    this.channel = context.channel;
  }

  async claim(r: ClaimRequest): Promise<ClaimedJob[]> {
    // Rows arrive in claim order and already shaped as ClaimedJob: no second object per job.
    const values = [r.queue, r.now, r.names, r.limit, r.workerId, r.leaseMs];
    const jobs = await this.statements.run<ClaimedJob>('claim', values, this.connections.executor);
    return claimedJobs(this.cipher, jobs, r.now);
  }

  async claimControlled(r: ClaimRequest): Promise<ClaimResult> {
    const values = [
      r.queue,
      r.now,
      r.names,
      r.limit,
      r.workerId,
      r.leaseMs,
      this.channel,
      r.share ?? false,
      r.ahead ?? 0,
    ];
    const rows = await this.statements.run<ClaimRow>('claimControlled', values, this.connections.executor);
    return claimResult(this.cipher, rows, r.now);
  }

  async leaveWaits(workerId: string): Promise<void> {
    await this.statements.run('leaveWaits', [workerId]);
  }

  async queuesWithWork(): Promise<string[]> {
    return (await this.statements.run('queuesWithWork', [])).map((r) => r.queue as string);
  }

  openWorkerConnections(): Promise<void> {
    return this.connections.open();
  }

  closeWorkerConnections(): Promise<void> {
    return this.connections.close();
  }
}
