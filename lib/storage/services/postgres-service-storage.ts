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
      await tx.query(this.sql.recordBuild, [r.service, r.build, r.now]);
      await tx.query(this.sql.beat, [r.instanceId, r.service, r.build, r.now]);
      await tx.query(this.sql.pruneInstances, [new Date(r.now.getTime() - PRUNE_AFTER_MS)]);
      await tx.query(this.sql.ensureOwner, [r.service, r.build, r.now]);
      const [owner] = await tx.query<Row>(this.sql.ownerForUpdate, [r.service, r.build, r.aliveSince]);
      const ownerBuild = owner!.build as string;
      if (ownerBuild === r.build) return { owns: true, ownerBuild, tookOver: false };
      // A newer build takes over at once (a rolling deploy's new pods); an older one only once
      // the build in force has no instance left (a rollback that completed).
      if (owner!.owner_older === true || owner!.alive !== true) {
        await tx.query(this.sql.takeOver, [r.service, r.build, r.now]);
        return { owns: true, ownerBuild: r.build, tookOver: true };
      }
      return { owns: false, ownerBuild, tookOver: false };
    });
  }

  writeDeclarations(d: CodeDeclarations): Promise<DeclarationsResult> {
    const limits = encodeCodeLimits(d.limits, d.keys);
    return this.pool.transaction(async (tx): Promise<DeclarationsResult> => {
      if (!(await tx.query(this.sql.fence, [d.service, d.build])).length) return { outcome: 'not-owner' };
      const conflicts: DeclarationConflict[] = [];
      if (d.schedules) {
        const hashes = d.schedules.map((s) => ({ name: s.name, definition_hash: scheduleDefinitionHash(s) }));
        for (const row of await tx.query<Row>(this.schedules.codeConflicts, [JSON.stringify(hashes), d.service])) {
          conflicts.push({ kind: 'schedule', target: row.name as string, service: row.service as string });
        }
      }
      for (const row of await tx.query<Row>(this.queues.codeConflicts, [limits.limits, d.service, limits.keys])) {
        conflicts.push({
          kind: row.kind as DeclarationConflict['kind'],
          target: row.target as string,
          service: row.service as string,
        });
      }
      if (conflicts.length) return { outcome: 'conflict', conflicts };
      let removedSchedules: string[] = [];
      if (d.schedules) {
        const [row] = await tx.query<Row>(this.schedules.syncCode, [
          encodeDefinitions(d.schedules, this.cipher),
          d.now,
          this.channel,
          d.foreignJobs,
          d.service,
        ]);
        removedSchedules = (row?.removed as string[] | undefined) ?? [];
      }
      await tx.query(this.queues.syncCode, [limits.limits, d.now, this.channel, limits.keys, d.service]);
      return { outcome: 'written', removedSchedules };
    });
  }

  async checkOut(instanceId: string, now: Date): Promise<void> {
    await this.pool.query(this.sql.stop, [instanceId, now]);
  }

  async list(aliveSince: Date): Promise<ServiceInfo[]> {
    return (await this.pool.query<Row>(this.sql.list, [aliveSince])).map((r) => ({
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
    const [row] = await this.pool.query<Row>(this.sql.forget, [service]);
    return {
      known: (row!.known as number) > 0,
      schedules: row!.schedules as number,
      limits: row!.limits as number,
    };
  }
}
