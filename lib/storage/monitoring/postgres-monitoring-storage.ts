import type { QueueLag, UnhandledJob } from '../../model/index.js';
import { uuidv7Floor } from '../jobs/job-encoding.js';
import type { CountRow, MonitoringStorage, WorkerRow } from './monitoring-storage.interface.js';
import { monitoringStatements, type MonitoringStatements } from './monitoring-statements.js';
import { PoolExecutor } from '../sql/sql-executor.js';
import type { StorageContext } from '../sql/storage-context.js';

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export class PostgresMonitoringStorage implements MonitoringStorage {
  private readonly sql: MonitoringStatements;
  private readonly pool: PoolExecutor;

  constructor(context: StorageContext) {
    this.sql = monitoringStatements(context.schema);
    this.pool = context.executor;
  }

  async counts(now: Date, finishedSince: Date | null): Promise<CountRow[]> {
    return this.sql.counts.run<CountRow>(this.pool, { now, finishedFrom: finishedSince && uuidv7Floor(finishedSince) });
  }

  async queueLag(now: Date): Promise<QueueLag[]> {
    const rows = await this.sql.queueLag.run(this.pool, { now });
    return rows.map((r) => ({ queue: r.queue as string, due: r.due as number, oldestDueAt: r.oldest_due_at as Date }));
  }

  async unhandledJobs(now: Date, liveSince: Date): Promise<UnhandledJob[]> {
    const pairs = await this.sql.unhandledPairs.run<{ queue: string; name: string }>(this.pool, { now, liveSince });
    if (!pairs.length) return [];
    const found = new Set(pairs.map((p) => `${p.queue}\n${p.name}`));
    const rows = await this.sql.unhandledCounts.run(this.pool, {
      now,
      queues: [...new Set(pairs.map((p) => p.queue))],
      names: [...new Set(pairs.map((p) => p.name))],
    });
    return rows
      .filter((r) => found.has(`${r.queue as string}\n${r.name as string}`))
      .map((r) => ({
        name: r.name as string,
        queue: r.queue as string,
        due: r.due as number,
        oldestDueAt: r.oldest_due_at as Date,
      }))
      .sort((a, b) => (a.queue === b.queue ? cmp(a.name, b.name) : cmp(a.queue, b.queue)));
  }

  async workers(stoppedSince: Date): Promise<WorkerRow[]> {
    const rows = await this.sql.workers.run(this.pool, { stoppedSince });
    return rows.map((r) => ({
      id: r.id as string,
      host: r.host as string,
      pid: r.pid as number,
      queues: r.queues as string[],
      concurrency: r.concurrency as number,
      active: r.active as number,
      startedAt: r.started_at as Date,
      lastHeartbeat: r.last_heartbeat as Date,
      stoppedAt: (r.stopped_at as Date | null) ?? null,
      connections:
        r.connections_max === null || r.connections_max === undefined
          ? null
          : { open: (r.connections_open as number | null) ?? null, max: r.connections_max as number },
    }));
  }
}
