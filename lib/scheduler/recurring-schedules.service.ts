import { Inject, Injectable, type Type } from '@nestjs/common';
import { JobRegistry } from '../discovery/job-registry.js';
import {
  checkName,
  checkOptions,
  Clock,
  databaseCall,
  describeValue,
  JobsError,
  JobsNotFoundError,
  optionShape,
  type CatchUpMode,
  type JobHandler,
  type OverlapMode,
  type PayloadOf,
  type ScheduleControl,
  type ScheduleInfo,
  uuidv7,
  JOB_WRITE_RULES,
  type JobWriteRules,
} from '../model/index.js';
import { SCHEDULE_STORAGE, type ScheduleStorage } from '../storage/schedules/schedule-storage.interface.js';
import { CronSchedule } from './cron-expression.js';
import { defineSchedule, scheduledJobOptions } from './schedule-definition.js';
import { ScheduleRunner } from './schedule-runner.service.js';

/** Options of a schedule created at run time with `RecurringSchedules.upsert()`. */
export interface DynamicScheduleOptions<Payload = unknown> {
  /** IANA time zone; default `UTC`. */
  timeZone?: string;
  /** The payload each tick's job receives; plain JSON data, at most `maxPayloadBytes` once serialised. */
  payload?: Payload;
  /**
   * Ticks missed while no instance ran the scheduler: `latest` (default) runs once for all of them,
   * `all` runs each (at most 1,000), `none` skips them.
   */
  catchUp?: CatchUpMode;
  /**
   * `allow` (default) starts each tick's job; `skip` skips a tick, and records it as skipped, while
   * the previous run is still queued or active.
   */
  overlap?: OverlapMode;
}

const DYNAMIC_SCHEDULE_SHAPE = optionShape<DynamicScheduleOptions>({
  timeZone: true,
  payload: true,
  catchUp: true,
  overlap: true,
});

/**
 * Schedules created at runtime (source `dynamic`), next to the code-defined
 * ones from @Cron. Every change is stored and announced to all instances, so
 * it applies everywhere without a restart. Code-defined schedules belong to
 * the deployed code: they can be paused and resumed here, not replaced or
 * removed.
 */
@Injectable()
export class RecurringSchedules implements ScheduleControl {
  constructor(
    @Inject(SCHEDULE_STORAGE) private readonly storage: ScheduleStorage,
    private readonly registry: JobRegistry,
    private readonly clock: Clock,
    private readonly runner: ScheduleRunner,
    @Inject(JOB_WRITE_RULES) private readonly writeRules: JobWriteRules,
  ) {}

  /**
   * Creates or redefines a dynamic schedule. Redefining keeps the pending
   * tick when cron and time zone stay the same; a new timing starts from now.
   */
  async upsert<H extends JobHandler>(
    name: string,
    job: Type<H> | string,
    cron: string,
    options: DynamicScheduleOptions<PayloadOf<H>> = {},
  ): Promise<ScheduleInfo> {
    const where = `RecurringSchedules.upsert(${typeof name === 'string' ? `'${name}'` : describeValue(name)})`;
    checkOptions(
      where,
      options,
      "upsert(name, Job, '0 * * * *', { timeZone: 'Europe/Berlin' })",
      DYNAMIC_SCHEDULE_SHAPE,
    );
    const jobName = this.registry.resolveName(job);
    const now = this.clock.now();
    const definition = defineSchedule(
      where,
      {
        name,
        jobName,
        cron,
        timeZone: options.timeZone,
        payload: options.payload,
        catchUp: options.catchUp,
        overlap: options.overlap,
      },
      scheduledJobOptions(this.registry, where, jobName, options.payload, this.writeRules.groupRated),
      this.writeRules.maxPayloadBytes,
      now,
    );
    definition.encrypted = this.registry.optionsOf(jobName).encrypted;
    if (!(await databaseCall(where, () => this.storage.upsertDynamic(definition, now)))) {
      throw new JobsError(
        `${where}: a code-defined schedule (@Cron) has this name, and a dynamic schedule cannot replace it. ` +
          `Potential fix: pick another name, or change the @Cron in the code and deploy; pause('${name}') stops it meanwhile.`,
      );
    }
    await this.runner.refresh();
    return (await databaseCall(where, () => this.storage.get(name)))!;
  }

  /** Stops ticks until resume(); works on code-defined schedules too, and survives restarts. */
  async pause(name: string): Promise<void> {
    const where = this.where('pause', name);
    if (!(await databaseCall(where, () => this.storage.pause(name, this.clock.now())))) {
      throw this.notFound('pause', name);
    }
    await this.runner.refresh();
  }

  /** Ticks again from the next one after now; ticks that passed while paused are not caught up. */
  async resume(name: string): Promise<void> {
    const where = this.where('resume', name);
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = await databaseCall(where, () => this.storage.get(name));
      if (!current) throw this.notFound('resume', name);
      if (!current.paused) return;
      const now = this.clock.now();
      const next = CronSchedule.parse(current.cron, current.timeZone).next(now);
      // Lost only to a concurrent redefinition of the timing: read it again.
      if (await databaseCall(where, () => this.storage.resume(name, next, current, now))) {
        await this.runner.refresh();
        return;
      }
    }
    throw new JobsError(
      `RecurringSchedules.resume('${name}'): the schedule kept changing while resuming. Potential fix: retry the call.`,
    );
  }

  /**
   * Starts one run of the schedule now (its job, payload and options, due
   * at once), whether or not it is paused; its ticks go on as before. The
   * run counts as the schedule's last one, so with `overlap: 'skip'` the
   * next tick waits for it, and it is refused while the last run is live.
   */
  async runNow(name: string): Promise<{
    /** The id of the job this run enqueued. */
    jobId: string;
  }> {
    const where = this.where('runNow', name);
    const now = this.clock.now();
    const jobId = uuidv7(now.getTime());
    const result = await databaseCall(where, () => this.storage.runNow(name, jobId, now));
    if (result.outcome === 'not-found') throw this.notFound('runNow', name);
    if (result.outcome === 'busy') {
      throw new JobsError(
        `${where}: its last run (job ${result.jobId}) is still ${result.state}, and the schedule's overlap is 'skip'. ` +
          `Potential fix: wait until that job ends, or cancel it first.`,
      );
    }
    return { jobId };
  }

  /** Removes a dynamic schedule; false when there was none. Its jobs already written stay. */
  async remove(name: string): Promise<boolean> {
    const where = this.where('remove', name);
    const result = await databaseCall(where, () => this.storage.removeDynamic(name));
    if (result === 'code-defined') {
      throw new JobsError(
        `RecurringSchedules.remove('${name}'): "${name}" is code-defined (@Cron), and a dynamic call cannot remove it. ` +
          `Potential fix: delete the @Cron from the code and deploy (the start removes its row), or pause('${name}').`,
      );
    }
    if (result === 'removed') await this.runner.refresh();
    return result === 'removed';
  }

  /** Every schedule, code-defined and dynamic, with its last run, next run and paused state. */
  list(): Promise<ScheduleInfo[]> {
    return databaseCall('RecurringSchedules.list()', () => this.storage.list());
  }

  /** The schedule with this name (code-defined or dynamic), or null when there is none. */
  async get(name: string): Promise<ScheduleInfo | null> {
    const where = this.where('get', name);
    return databaseCall(where, () => this.storage.get(name));
  }

  /** The call's name for messages, once the schedule name is known to be a name. */
  private where(call: string, name: unknown): string {
    const where = `RecurringSchedules.${call}()`;
    checkName(where, 'name', name, 'nightly-report');
    return `RecurringSchedules.${call}('${name as string}')`;
  }

  /**
   * Turns due ticks into jobs now, instead of at the next timer. Resolves
   * after a full pass, which makes it the step to await after moving a
   * ManualClock in a test.
   */
  runDue(): Promise<void> {
    return this.runner.runDue();
  }

  private notFound(call: string, name: string): JobsError {
    return new JobsNotFoundError(
      `RecurringSchedules.${call}('${name}'): no schedule has this name. Potential fix: check list() for the names in use.`,
    );
  }
}
