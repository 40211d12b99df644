import { Inject, Injectable, Logger } from '@nestjs/common';
import { createHash, randomUUID } from 'node:crypto';
import { JobRegistry } from './discovery/job-registry.js';
import { JOBS_SERVICE } from './discovery/service-name.js';
import { JOBS_MODULE_OPTIONS, type JobsModuleOptions } from './jobs-options.interface.js';
import {
  Clock,
  databaseCall,
  JobsError,
  scheduleDefinitionHash,
  SERVICE_CHECK_IN_MS,
  SERVICE_INSTANCE_ALIVE_MS,
  type QueueOptions,
  type RateLimit,
  type ScheduleDefinition,
} from './model/index.js';
import type { CodeLimits } from './storage/queues/queue-storage.interface.js';
import { codeLimitsOf } from './queue/code-limits.js';
import { QUEUE_DECLARATIONS } from './queue/job-queues.service.js';
import { RATE_LIMIT_DECLARATIONS } from './queue/rate-limit-declarations.js';
import { ScheduleRunner } from './scheduler/schedule-runner.service.js';
import { SCHEDULER_OPTIONS, type ResolvedSchedulerOptions } from './scheduler/scheduler-options.js';
import {
  SERVICE_STORAGE,
  type DeclarationConflict,
  type ServiceStorage,
} from './storage/services/service-storage.interface.js';

/** What one build of a service declares; schedules null when this app leaves them alone (the CLI). */
interface Declared {
  schedules: ScheduleDefinition[] | null;
  limits: CodeLimits[];
  keys: Readonly<Record<string, RateLimit>>;
}

/**
 * Keeps the service's code declarations (its @Cron schedules, its queue, job and keyed limits)
 * in the database. They belong to the service (JobsModule's `service`): a start writes and
 * removes only its own, and refuses one that another service declared differently.
 *
 * Within a service, the build whose declarations are in force is the newest one running: in a
 * rolling deploy the new pods' first start takes over, and an old pod that restarts meanwhile
 * writes nothing. An older build takes over only once no instance of the build in force is alive
 * (a rollback, once the newer pods are gone), which every instance looks at every
 * SERVICE_CHECK_IN_MS.
 */
@Injectable()
export class DeclarationsKeeper {
  private readonly logger = new Logger('JobsModule');
  private readonly instanceId = randomUUID();
  private build: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private checking: Promise<void> | null = null;

  constructor(
    @Inject(SERVICE_STORAGE) private readonly storage: ServiceStorage,
    @Inject(JOBS_SERVICE) private readonly service: string,
    @Inject(JOBS_MODULE_OPTIONS) private readonly options: JobsModuleOptions,
    private readonly scheduler: ScheduleRunner,
    private readonly registry: JobRegistry,
    private readonly clock: Clock,
    @Inject(QUEUE_DECLARATIONS) private readonly queues: Readonly<Record<string, QueueOptions>>,
    @Inject(RATE_LIMIT_DECLARATIONS) private readonly keyed: Readonly<Record<string, RateLimit>>,
    @Inject(SCHEDULER_OPTIONS) private readonly schedulerOptions: ResolvedSchedulerOptions,
  ) {}

  /** At start, before the scheduler and the worker: the declarations in force are known when they begin. */
  async start(): Promise<void> {
    const declared = this.declarations(this.clock.now());
    // An app that names no service and declares nothing (the CLI, a dashboard-only app) is no
    // build of anything: it has no declarations to keep.
    const silent =
      this.options.service === undefined &&
      !declared.schedules?.length &&
      !declared.limits.length &&
      !Object.keys(this.keyed).length &&
      !this.registry.names().length;
    if (silent) return;
    this.build = buildOf(declared);
    await this.checkIn(true);
    this.timer = setInterval(() => void this.periodicCheckIn(), SERVICE_CHECK_IN_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.checking;
    if (this.build === null) return;
    this.build = null;
    await this.storage.checkOut(this.instanceId, this.clock.now()).catch((error: Error) => {
      this.logger.warn(`Recording this instance's stop failed (${error.message}); it counts as gone once silent.`);
    });
  }

  private periodicCheckIn(): void {
    if (this.checking) return;
    this.checking = this.checkIn(false)
      .catch((error: Error) => this.logger.warn(`Service '${this.service}': check-in failed: ${error.message}`))
      .finally(() => (this.checking = null));
  }

  private async checkIn(starting: boolean): Promise<void> {
    const build = this.build;
    if (build === null) return;
    const now = this.clock.now();
    const where = starting ? 'JobsModule start' : 'JobsModule check-in';
    const result = await databaseCall(where, () =>
      this.storage.checkIn({
        service: this.service,
        build,
        instanceId: this.instanceId,
        now,
        aliveSince: new Date(now.getTime() - SERVICE_INSTANCE_ALIVE_MS),
      }),
    );
    if (!result.owns) {
      if (starting) {
        this.logger.log(
          `Service '${this.service}': build ${build} is older than build ${result.ownerBuild}, whose instances are ` +
            `running; its schedules and limits stay as that build declared them (this one takes over once none is left).`,
        );
      }
      return;
    }
    if (!starting && !result.tookOver) return;
    if (result.tookOver && !starting) {
      this.logger.log(
        `Service '${this.service}': no instance of build ${result.ownerBuild === build ? 'in force' : result.ownerBuild} is left; this build's declarations take over.`,
      );
    }
    await this.write(build, starting);
  }

  private async write(build: string, starting: boolean): Promise<void> {
    const now = this.clock.now();
    const declared = this.declarations(now);
    const result = await databaseCall('JobsModule start', () =>
      this.storage.writeDeclarations({
        service: this.service,
        build,
        schedules: declared.schedules,
        foreignJobs: this.registry.externalNames(),
        limits: declared.limits,
        keys: this.keyed,
        now,
      }),
    );
    if (result.outcome === 'conflict') {
      const error = conflictError(this.service, result.conflicts);
      if (starting) throw error;
      this.logger.error(error.message);
      return;
    }
    if (result.outcome === 'not-owner') return;
    const removed = result.removedSchedules;
    if (removed.length) {
      this.logger.log(`Removed code-defined schedule(s) no longer in the code: ${removed.join(', ')}`);
    }
    if (declared.schedules?.length) {
      this.logger.log(
        `Code-defined schedule(s): ${declared.schedules.map((d) => `${d.name} (${d.cron} ${d.timeZone})`).join(', ')}`,
      );
    }
  }

  private declarations(now: Date): Declared {
    return {
      schedules: this.schedulerOptions.syncCodeSchedules ? this.scheduler.codeSchedules(now) : null,
      limits: codeLimitsOf(this.registry, this.queues, this.keyed),
      keys: this.keyed,
    };
  }
}

/** A digest of what a build declares: builds that declare the same are one build here. */
function buildOf(declared: Declared): string {
  const schedules = (declared.schedules ?? []).map((s) => [s.name, scheduleDefinitionHash(s)]).sort();
  const limits = declared.limits.map((l) => JSON.stringify(l)).sort();
  const keys = Object.entries(declared.keys).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const text = JSON.stringify({ schedules, limits, keys, syncsSchedules: declared.schedules !== null });
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

const KIND_WORDS: Record<DeclarationConflict['kind'], string> = {
  schedule: 'schedule',
  queue: "queue's limits",
  job: "job's limits",
  key: 'rate limit key',
};

function conflictError(service: string, conflicts: readonly DeclarationConflict[]): JobsError {
  const list = conflicts.map((c) => `${KIND_WORDS[c.kind]} '${c.target}' (declared by service '${c.service}')`);
  const owners = [...new Set(conflicts.map((c) => c.service))];
  return new JobsError(
    `JobsModule: service '${service}' declares ${list.join(', ')} differently from the service that declared it first. ` +
      `A declaration has one owner, and a start does not overwrite another service's. Potential fix: declare each in one ` +
      `service only (or the same in both), give this service's @Cron another name, or, if ${owners.map((o) => `'${o}'`).join(', ')} ` +
      `was renamed or retired, release its declarations with \`npx nestjs-durable-jobs services forget <service>\`.`,
  );
}
