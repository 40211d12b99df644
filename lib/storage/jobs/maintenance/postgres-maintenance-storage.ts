import type { ConnectionGauge } from '../../sql/connection-budget.js';
import type { SqlExecutor } from '../../sql/sql-executor.js';
import type { StorageContext } from '../../sql/storage-context.js';
import {
  deleteSettledBatchRound,
  settledBatchStatements,
  type SettledBatchState,
  type SettledBatchStatements,
} from './settled-batch-rounds.js';
import { FIRST_UUID, uuidv7Floor } from '../job-encoding.js';
import { StatementRunner } from '../statement-runner.js';
import type {
  MaintenanceStorage,
  PruneChunk,
  RescueResult,
  WorkerRegistration,
} from './maintenance-storage.interface.js';
import { maintenanceStatements, type MaintenanceStatements } from './maintenance-statements.js';

/** Rescue, deadlines, retention and the worker registry: statements run now and then, unnamed. */
export class PostgresMaintenanceStorage implements MaintenanceStorage {
  private readonly statements: StatementRunner<keyof MaintenanceStatements>;
  private readonly channel: string;
  private readonly executor: SqlExecutor;
  private readonly batchSql: SettledBatchStatements;

  constructor(
    context: StorageContext,
    /** This instance's connections now and at most, recorded with each heartbeat. */
    private readonly connections: ConnectionGauge = () => ({ open: null, max: context.plan.budget.max }),
  ) {
    this.statements = new StatementRunner<keyof MaintenanceStatements>(
      maintenanceStatements(context.schema),
      [],
      context.executor,
    );
    this.channel = context.channel;
    this.executor = context.executor;
    this.batchSql = settledBatchStatements(context.schema);
  }

  private run<T = Record<string, unknown>>(key: keyof MaintenanceStatements, values: unknown[]): Promise<T[]> {
    return this.statements.run<T>(key, values);
  }

  async rescueExpired(now: Date, limit: number): Promise<RescueResult> {
    const [row] = await this.run<RescueResult>('rescue', [now, limit, this.channel]);
    return { rescued: row?.rescued ?? 0, failed: row?.failed ?? 0, cancelled: row?.cancelled ?? 0 };
  }

  async expireDeadlines(now: Date, limit: number): Promise<number> {
    const [row] = await this.run<{ expired: number }>('expireDeadlines', [now, limit, this.channel]);
    return row?.expired ?? 0;
  }

  async failUnhandled(now: Date, liveSince: Date, failAfter: number, limit: number): Promise<number> {
    const pairs = await this.run<{ queue: string; name: string }>('unhandledPairs', [now, liveSince]);
    if (!pairs.length) return 0;
    const [row] = await this.run<{ failed: number }>('failUnhandled', [
      now,
      liveSince,
      new Date(now.getTime() - failAfter),
      limit,
      this.channel,
      failAfter,
      [...new Set(pairs.map((p) => p.queue))],
      [...new Set(pairs.map((p) => p.name))],
    ]);
    return row?.failed ?? 0;
  }

  async prune(states: readonly string[], before: Date, limit: number, after: string | null): Promise<PruneChunk> {
    const rows = await this.run<{ id: string }>('prune', [
      uuidv7Floor(before),
      states,
      before,
      limit,
      after ?? FIRST_UUID,
    ]);
    let last: string | null = null;
    for (const { id } of rows) if (last === null || id > last) last = id;
    return { deleted: rows.length, last };
  }

  pruneBatches(state: SettledBatchState, before: Date, after: string | null, maxMembers: number) {
    return deleteSettledBatchRound(this.executor, this.batchSql, { state, before, after, maxMembers });
  }

  async pruneWorkers(before: Date): Promise<number> {
    return (await this.run('pruneWorkers', [before])).length;
  }

  async pruneGroupRates(now: Date): Promise<number> {
    return (await this.run('pruneGroupRates', [now])).length;
  }

  async registerWorker(w: WorkerRegistration): Promise<void> {
    const { open, max } = this.connections();
    await this.run('registerWorker', [
      w.id,
      w.host,
      w.pid,
      w.queues,
      w.concurrency,
      w.now,
      open,
      max,
      w.service,
      w.jobNames,
    ]);
  }

  async heartbeatWorker(id: string, now: Date, active: number): Promise<boolean> {
    const { open, max } = this.connections();
    return (await this.run('heartbeatWorker', [id, now, active, open, max])).length > 0;
  }

  async unregisterWorker(id: string, now: Date): Promise<void> {
    await this.run('unregisterWorker', [id, now]);
  }
}
