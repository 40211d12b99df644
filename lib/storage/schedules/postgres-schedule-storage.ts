import { createHash } from 'node:crypto';
import type {
  CatchUpMode,
  JobCipher,
  JobState,
  OverlapMode,
  ScheduleDefinition,
  ScheduleInfo,
  ScheduleSource,
} from '../../model/index.js';
import { scheduleDefinitionHash } from '../../model/index.js';
import type {
  DueSchedule,
  FireRequest,
  FireResult,
  RemoveScheduleResult,
  RunScheduleResult,
  ScheduleStorage,
  ScheduleTiming,
} from './schedule-storage.interface.js';
import { scheduleStatements, type ScheduleStatements } from './schedule-statements.js';
import { withNames, type ArgsOf, type Statement } from '../sql/named-params.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import type { StorageContext } from '../sql/storage-context.js';

type Row = Record<string, unknown>;

export class PostgresScheduleStorage implements ScheduleStorage {
  private readonly cipher: JobCipher;
  private readonly sql: ScheduleStatements;
  /** The statements run on the pool, each prepared under the prefix and its key. */
  private readonly named: ScheduleStatements;
  private readonly pool: SqlExecutor;
  /** Named prepared statements, distinct from the job storage's names. */
  private readonly prefix: string;
  private readonly channel: string;

  constructor(context: StorageContext) {
    this.sql = scheduleStatements(context.schema);
    this.pool = context.executor;
    this.channel = context.channel;
    this.cipher = context.cipher;
    this.prefix = `djs_${createHash('sha1').update(context.schema).digest('hex').slice(0, 8)}_`;
    this.named = withNames(this.sql, (key) => this.prefix + key);
  }

  private run<K extends keyof ScheduleStatements>(key: K, args: ArgsOf<ScheduleStatements[K]>): Promise<Row[]> {
    return (this.named[key] as Statement<ArgsOf<ScheduleStatements[K]>>).run(this.pool, args);
  }

  async upsertDynamic(definition: ScheduleDefinition, now: Date): Promise<boolean> {
    const [row] = await this.run('upsertDynamic', {
      definitions: encodeDefinitions([definition], this.cipher),
      now,
      channel: this.channel,
    });
    return (row?.written as number) === 1;
  }

  async pause(name: string, now: Date): Promise<boolean> {
    const [row] = await this.run('pause', { name, now, channel: this.channel });
    return (row?.updated as number) === 1;
  }

  async resume(name: string, next: Date, expected: { cron: string; timeZone: string }, now: Date): Promise<boolean> {
    const [row] = await this.run('resume', {
      name,
      now,
      next,
      cron: expected.cron,
      timeZone: expected.timeZone,
      channel: this.channel,
    });
    return (row?.updated as number) === 1;
  }

  async removeDynamic(name: string): Promise<RemoveScheduleResult> {
    const [row] = await this.run('removeDynamic', { name, channel: this.channel });
    if ((row?.removed as number) === 1) return 'removed';
    return row?.source === 'code' ? 'code-defined' : 'not-found';
  }

  async list(): Promise<ScheduleInfo[]> {
    return (await this.run('list', {})).map((r) => toInfo(r, this.cipher));
  }

  async get(name: string): Promise<ScheduleInfo | null> {
    const [row] = await this.run('get', { name });
    return row ? toInfo(row, this.cipher) : null;
  }

  async timings(): Promise<ScheduleTiming[]> {
    return (await this.run('timings', {})).map((r) => ({
      name: r.name as string,
      cron: r.cron as string,
      timeZone: r.time_zone as string,
      paused: r.paused as boolean,
    }));
  }

  async due(now: Date): Promise<DueSchedule[]> {
    return (await this.run('due', { now })).map((r) => ({
      name: r.name as string,
      cron: r.cron as string,
      timeZone: r.time_zone as string,
      catchUp: r.catch_up as CatchUpMode,
      nextRunAt: r.next_run_at as Date,
    }));
  }

  async fire(r: FireRequest): Promise<FireResult> {
    const [row] = await this.run('fire', {
      name: r.name,
      due: r.due,
      next: r.next,
      ticks: r.ticks.map((t) => t.toISOString()),
      jobIds: r.jobIds,
      now: r.now,
      channel: this.channel,
    });
    return {
      won: (row?.won as number) === 1,
      queued: (row?.queued as number) ?? 0,
      skipped: (row?.skipped as number) ?? 0,
    };
  }

  runNow(name: string, jobId: string, now: Date): Promise<RunScheduleResult> {
    return this.pool.transaction(async (tx) => {
      const [found] = await this.sql.lockSchedule.run(tx, { name });
      if (!found) return { outcome: 'not-found' };
      const [row] = await this.sql.runNow.run(tx, { name, jobId, now, channel: this.channel });
      if (row?.busy_id) return { outcome: 'busy', jobId: row.busy_id as string, state: row.busy_state as JobState };
      return { outcome: 'queued', queue: row!.queue as string };
    });
  }
}

/** Payloads are already JSON: spliced in, not encoded twice; an encrypted job's sealed. */
export function encodeDefinitions(definitions: readonly ScheduleDefinition[], cipher: JobCipher): string {
  const parts = definitions.map(
    (d) =>
      `{"name":${JSON.stringify(d.name)},"job_name":${JSON.stringify(d.jobName)},"cron":${JSON.stringify(d.cron)},` +
      `"time_zone":${JSON.stringify(d.timeZone)},"payload":${d.encrypted || cipher.all ? cipher.sealJson(d.payloadJson) : d.payloadJson},` +
      `"options":${JSON.stringify(d.jobOptions)},` +
      `"catch_up":"${d.catchUp}","overlap":"${d.overlap}","next_run_at":"${d.nextRunAt.toISOString()}",` +
      `"definition_hash":"${scheduleDefinitionHash(d)}"}`,
  );
  return `[${parts.join(',')}]`;
}

function toInfo(row: Row, cipher: JobCipher): ScheduleInfo {
  return {
    name: row.name as string,
    jobName: row.job_name as string,
    cron: row.cron as string,
    timeZone: row.time_zone as string,
    payload: cipher.revealValue(row.payload ?? null),
    source: row.source as ScheduleSource,
    service: (row.service as string | null) ?? null,
    catchUp: row.catch_up as CatchUpMode,
    overlap: row.overlap as OverlapMode,
    paused: row.paused as boolean,
    // A paused schedule has no next run; the stored value is stale until resume() recomputes it.
    nextRunAt: row.paused ? null : ((row.next_run_at as Date | null) ?? null),
    lastRunAt: (row.last_run_at as Date | null) ?? null,
    lastJobId: (row.last_job_id as string | null) ?? null,
    lastJobState: (row.last_job_state as JobState | null) ?? null,
    skippedCount: row.skipped_count as number,
    lastSkippedAt: (row.last_skipped_at as Date | null) ?? null,
    updatedAt: row.updated_at as Date,
  };
}
