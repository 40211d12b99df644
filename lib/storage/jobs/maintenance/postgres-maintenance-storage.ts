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
import type {
  MaintenanceStorage,
  PruneChunk,
  RescueResult,
  WorkerRegistration,
} from './maintenance-storage.interface.js';
import { maintenanceStatements, type MaintenanceStatements } from './maintenance-statements.js';
import { bulkDeleteTransaction } from './bulk-delete-transaction.js';

/** Rescue, deadlines, retention and the worker registry: statements run now and then, unnamed. */
export class PostgresMaintenanceStorage implements MaintenanceStorage {
  private readonly sql: MaintenanceStatements;
  private readonly channel: string;
  private readonly executor: SqlExecutor;
  private readonly batchSql: SettledBatchStatements;

  constructor(
    context: StorageContext,
    /** This instance's connections now and at most, recorded with each heartbeat. */
    private readonly connections: ConnectionGauge = () => ({ open: null, max: context.plan.budget.max }),
  ) {
    this.sql = maintenanceStatements(context.schema);
    this.channel = context.channel;
    this.executor = context.executor;
    this.batchSql = settledBatchStatements(context.schema);
  }

  async rescueExpired(now: Date, limit: number): Promise<RescueResult> {
    const [row] = await this.sql.rescue.run<RescueResult>(this.executor, { now, limit, channel: this.channel });
    return { rescued: row?.rescued ?? 0, failed: row?.failed ?? 0, cancelled: row?.cancelled ?? 0 };
  }

  async expireDeadlines(now: Date, limit: number): Promise<number> {
    const [row] = await this.sql.expireDeadlines.run<{ expired: number }>(this.executor, {
      now,
      limit,
      channel: this.channel,
    });
    return row?.expired ?? 0;
  }

  async failUnhandled(now: Date, liveSince: Date, failAfter: number, limit: number): Promise<number> {
    const pairs = await this.sql.unhandledPairs.run<{ queue: string; name: string }>(this.executor, { now, liveSince });
    if (!pairs.length) return 0;
    const [row] = await this.sql.failUnhandled.run<{ failed: number }>(this.executor, {
      now,
      liveSince,
      dueBefore: new Date(now.getTime() - failAfter),
      limit,
      channel: this.channel,
      failAfter,
      queues: [...new Set(pairs.map((p) => p.queue))],
      names: [...new Set(pairs.map((p) => p.name))],
    });
    return row?.failed ?? 0;
  }

  async prune(states: readonly string[], before: Date, limit: number, after: string | null): Promise<PruneChunk> {
    const rows = await bulkDeleteTransaction(this.executor, (tx) =>
      this.sql.prune.run<{ id: string }>(tx, {
        beforeId: uuidv7Floor(before),
        states,
        before,
        limit,
        after: after ?? FIRST_UUID,
      }),
    );
    let last: string | null = null;
    for (const { id } of rows) if (last === null || id > last) last = id;
    return { deleted: rows.length, last };
  }

  pruneBatches(state: SettledBatchState, before: Date, after: string | null, maxMembers: number) {
    return deleteSettledBatchRound(this.executor, this.batchSql, { state, before, after, maxMembers });
  }

  async pruneWorkers(before: Date): Promise<number> {
    return (await this.sql.pruneWorkers.run(this.executor, { before })).length;
  }

  async pruneForgotten(before: Date): Promise<number> {
    return (await this.sql.pruneForgotten.run(this.executor, { before })).length;
  }

  async pruneGroupRates(now: Date): Promise<number> {
    return (await this.sql.pruneGroupRates.run(this.executor, { now })).length;
  }

  async registerWorker(w: WorkerRegistration): Promise<void> {
    const { open, max } = this.connections();
    await this.sql.registerWorker.run(this.executor, {
      id: w.id,
      host: w.host,
      pid: w.pid,
      queues: w.queues,
      concurrency: w.concurrency,
      now: w.now,
      connectionsOpen: open,
      connectionsMax: max,
      service: w.service,
      jobNames: w.jobNames,
    });
  }

  async heartbeatWorker(id: string, now: Date, active: number): Promise<boolean> {
    const { open, max } = this.connections();
    return (
      (
        await this.sql.heartbeatWorker.run(this.executor, {
          id,
          now,
          active,
          connectionsOpen: open,
          connectionsMax: max,
        })
      ).length > 0
    );
  }

  async unregisterWorker(id: string, now: Date): Promise<void> {
    await this.sql.unregisterWorker.run(this.executor, { id, now });
  }
}
