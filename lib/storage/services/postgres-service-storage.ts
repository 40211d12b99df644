import type { JobCipher } from '../../model/index.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { encodeCodeLimits } from '../queues/postgres-queue-storage.js';
import { queueStatements, type QueueStatements } from '../queues/queue-statements.js';
import { encodeDefinitions } from '../schedules/postgres-schedule-storage.js';
import { scheduleStatements, type ScheduleStatements } from '../schedules/schedule-statements.js';
import type { StorageContext } from '../sql/storage-context.js';
import type {
  CheckInResult,
  CodeDeclarations,
  DeclarationConflict,
  DeclarationsResult,
  ForgottenService,
  ServiceCheckIn,
  ServiceInfo,
  ServiceStorage,
} from './service-storage.interface.js';
import { serviceStatements, type ServiceStatements } from './service-statements.js';
import { scheduleDefinitionHash } from '../../model/index.js';

type Row = Record<string, unknown>;

/** Instances silent this long are forgotten: long after any decision could still wait on them. */
const PRUNE_AFTER_MS = 86_400_000;

export class PostgresServiceStorage implements ServiceStorage {
  private readonly sql: ServiceStatements;
  private readonly schedules: ScheduleStatements;
  private readonly queues: QueueStatements;
  private readonly pool: SqlExecutor;
  private readonly channel: string;
  private readonly cipher: JobCipher;

  constructor(context: StorageContext) {
    this.sql = serviceStatements(context.schema);
    this.schedules = scheduleStatements(context.schema);
    this.queues = queueStatements(context.schema);
    this.pool = context.executor;
    this.channel = context.channel;
    this.cipher = context.cipher;
  }

  checkIn(r: ServiceCheckIn): Promise<CheckInResult> {
    return this.pool.transaction(async (tx) => {
      await this.sql.recordBuild.run(tx, r);
      await this.sql.beat.run(tx, r);
      await this.sql.pruneInstances.run(tx, { before: new Date(r.now.getTime() - PRUNE_AFTER_MS) });
      await this.sql.ensureOwner.run(tx, r);
      const [owner] = await this.sql.ownerForUpdate.run(tx, r);
      const ownerBuild = owner!.build as string;
      if (ownerBuild === r.build) return { owns: true, ownerBuild, tookOver: false };
      // A newer build takes over at once (a rolling deploy's new pods); an older one only once
      // the build in force has no instance left (a rollback that completed).
      if (owner!.owner_older === true || owner!.alive !== true) {
        await this.sql.takeOver.run(tx, r);
        return { owns: true, ownerBuild: r.build, tookOver: true };
      }
      return { owns: false, ownerBuild, tookOver: false };
    });
  }

  writeDeclarations(d: CodeDeclarations): Promise<DeclarationsResult> {
    const limits = encodeCodeLimits(d.limits, d.keys);
    return this.pool.transaction(async (tx): Promise<DeclarationsResult> => {
      if (!(await this.sql.fence.run(tx, d)).length) return { outcome: 'not-owner' };
      const conflicts: DeclarationConflict[] = [];
      if (d.schedules) {
        const hashes = d.schedules.map((s) => ({ name: s.name, definition_hash: scheduleDefinitionHash(s) }));
        for (const row of await this.schedules.codeConflicts.run(tx, {
          hashes: JSON.stringify(hashes),
          service: d.service,
        })) {
          conflicts.push({ kind: 'schedule', target: row.name as string, service: row.service as string });
        }
      }
      for (const row of await this.queues.codeConflicts.run(tx, { ...limits, service: d.service })) {
        conflicts.push({
          kind: row.kind as DeclarationConflict['kind'],
          target: row.target as string,
          service: row.service as string,
        });
      }
      if (conflicts.length) return { outcome: 'conflict', conflicts };
      let removedSchedules: string[] = [];
      if (d.schedules) {
        const [row] = await this.schedules.syncCode.run(tx, {
          definitions: encodeDefinitions(d.schedules, this.cipher),
          now: d.now,
          channel: this.channel,
          foreignJobs: d.foreignJobs,
          service: d.service,
        });
        removedSchedules = (row?.removed as string[] | undefined) ?? [];
      }
      await this.queues.syncCode.run(tx, { ...limits, now: d.now, channel: this.channel, service: d.service });
      return { outcome: 'written', removedSchedules };
    });
  }

  async checkOut(instanceId: string, now: Date): Promise<void> {
    await this.sql.stop.run(this.pool, { instanceId, now });
  }

  async list(aliveSince: Date): Promise<ServiceInfo[]> {
    return (await this.sql.list.run(this.pool, { aliveSince })).map((r) => ({
      service: r.service as string,
      ownerBuild: r.owner_build as string,
      since: r.since as Date,
      builds: (r.builds as Row[]).map((b) => ({
        build: b.build as string,
        firstSeenAt: new Date(b.first_seen_at as string),
        instances: Number(b.instances),
      })),
      schedules: r.schedules as number,
      limits: r.limits as number,
    }));
  }

  async forget(service: string): Promise<ForgottenService> {
    const [row] = await this.sql.forget.run(this.pool, { service });
    return {
      known: (row!.known as number) > 0,
      schedules: row!.schedules as number,
      limits: row!.limits as number,
    };
  }
}
