import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { CronJob } from 'cron';
import { JobRegistry } from '../discovery/job-registry.js';
import { Clock, uuidv7, type ScheduleDefinition } from '../model/index.js';
import { JOB_WRITE_RULES, type JobWriteRules } from '../model/index.js';
import { JobNotifications } from '../storage/notifications/job-notifications.interface.js';
import {
  SCHEDULE_STORAGE,
  type DueSchedule,
  type ScheduleStorage,
  type ScheduleTiming,
} from '../storage/schedules/schedule-storage.interface.js';
import { CoalescingTask } from './coalescing-task.js';
import { CronSchedule, MAX_CATCH_UP_TICKS, planTicks, type TickPlan } from './cron-expression.js';
import { defineSchedule, scheduledJobOptions } from './schedule-definition.js';
import { SCHEDULER_OPTIONS, type ResolvedSchedulerOptions } from './scheduler-options.js';
import { SchedulesExplorer } from './schedules.explorer.js';

/**
 * Turns due ticks into jobs. The database decides: a tick becomes a job only
 * through the compare-and-set in storage, so timers, notifications, polls
 * and clock changes are all mere wake-ups, and any number of them on any
 * number of instances write each tick once.
 *
 * Timers are @nestjs/schedule CronJobs, one per active schedule, in the app's
 * SchedulerRegistry when it imports ScheduleModule, otherwise in a registry
 * of our own (see `timers`).
 */
@Injectable()
export class ScheduleRunner {
  private readonly logger = new Logger('JobScheduler');
  /**
   * Importing ScheduleModule.forRoot() ourselves would be wrong whenever the
   * app imports it with other options (or forRootAsync): Nest would build a
   * second ScheduleModule whose explorer mounts every @nestjs/schedule method
   * of the app again, so they would run twice. A registry the app cannot see
   * is the lesser cost when it has none.
   */
  readonly timers: SchedulerRegistry;
  private readonly armed = new Map<string, string>();
  private readonly parsed = new Map<string, CronSchedule>();
  private readonly warned = new Set<string>();
  private readonly due = new CoalescingTask(() => this.fireDue());
  private readonly sync = new CoalescingTask(() => this.syncTimers());
  private state: 'idle' | 'running' | 'stopped' = 'idle';
  private intervals: NodeJS.Timeout[] = [];
  private unsubscribe: Array<() => void> = [];
  private listening = false;

  constructor(
    @Inject(SCHEDULE_STORAGE) private readonly storage: ScheduleStorage,
    private readonly explorer: SchedulesExplorer,
    private readonly registry: JobRegistry,
    private readonly clock: Clock,
    private readonly notifications: JobNotifications,
    @Inject(SCHEDULER_OPTIONS) private readonly options: ResolvedSchedulerOptions,
    @Inject(JOB_WRITE_RULES) private readonly writeRules: JobWriteRules,
    @Optional() appTimers?: SchedulerRegistry,
  ) {
    this.timers = appTimers ?? new SchedulerRegistry();
  }

  /**
   * Starts turning ticks into jobs (JobsLifecycle calls it once the whole app has bootstrapped,
   * after the service's declarations are written).
   */
  async start(): Promise<void> {
    if (this.state !== 'idle') return;
    if (!this.options.enabled) return;
    this.state = 'running';
    this.unsubscribe.push(
      this.notifications.subscribe({
        onNotification: (event) => {
          if (event.topic === 'schedules') void this.sync.run();
        },
        // Changes sent while the connection was down are lost: re-read everything.
        onReconnect: () => void this.sync.run(),
      }),
    );
    await this.notifications.start();
    this.listening = true;
    // A test moving a ManualClock is a wake-up like any timer.
    this.unsubscribe.push(this.clock.onChange(() => void this.due.run()));
    const poll = setInterval(() => {
      void this.sync.run();
      void this.due.run();
    }, this.options.pollInterval);
    poll.unref();
    this.intervals.push(poll);
    await this.sync.run();
    await this.due.run();
  }

  /** This app's @Cron declarations, as stored; their first ticks counted from `now`. */
  codeSchedules(now: Date): ScheduleDefinition[] {
    return this.explorer.schedules.map((s) => ({
      encrypted: this.registry.optionsOf(s.jobName).encrypted,
      ...defineSchedule(
        `@Cron('${s.metadata.expression}') on ${s.className}`,
        {
          ...s.metadata.options,
          name: s.metadata.options.name ?? s.jobName,
          jobName: s.jobName,
          cron: s.metadata.expression,
        },
        scheduledJobOptions(
          this.registry,
          `@Cron('${s.metadata.expression}') on ${s.className}`,
          s.jobName,
          s.metadata.options.payload,
          this.writeRules.groupRated,
        ),
        this.writeRules.maxPayloadBytes,
        now,
      ),
    }));
  }

  /** Turns every due tick into jobs now; resolves after a full pass that began after the call. */
  runDue(): Promise<void> {
    return this.due.run();
  }

  /** Re-reads the table and re-arms timers (after a change made on this instance). */
  refresh(): Promise<void> {
    return this.state === 'running' ? this.sync.run() : Promise.resolve();
  }

  timerName(schedule: string): string {
    return this.options.timerPrefix + schedule;
  }

  private async syncTimers(): Promise<void> {
    if (this.state !== 'running') return;
    let rows: ScheduleTiming[];
    try {
      rows = await this.storage.timings();
    } catch (error) {
      this.logger.warn(`Reading schedules failed: ${(error as Error).message}`);
      return;
    }
    if (this.state !== 'running') return;
    const wanted = new Map(rows.filter((r) => !r.paused).map((r) => [r.name, r]));
    for (const [name, key] of this.armed) {
      const row = wanted.get(name);
      if (!row || timingKey(row) !== key) this.disarm(name);
    }
    for (const row of wanted.values()) if (!this.armed.has(row.name)) this.arm(row);
  }

  private arm(row: ScheduleTiming): void {
    const name = this.timerName(row.name);
    try {
      const job = CronJob.from({
        cronTime: row.cron,
        timeZone: row.timeZone,
        onTick: () => void this.due.run(),
        start: false,
        unrefTimeout: true,
        name,
      });
      if (this.timers.doesExist('cron', name)) this.timers.deleteCronJob(name);
      this.timers.addCronJob(name, job);
      job.start();
      this.armed.set(row.name, timingKey(row));
    } catch (error) {
      this.warnOnce(row.name, timingKey(row), `cannot arm a timer: ${(error as Error).message}`);
    }
  }

  private disarm(schedule: string): void {
    const name = this.timerName(schedule);
    // The app's ScheduleModule may have stopped and removed it at shutdown already.
    if (this.timers.doesExist('cron', name)) this.timers.deleteCronJob(name);
    this.armed.delete(schedule);
  }

  private async fireDue(): Promise<void> {
    if (this.state === 'stopped') return;
    const now = this.clock.now();
    let due: DueSchedule[];
    try {
      due = await this.storage.due(now);
    } catch (error) {
      this.logger.warn(`Looking for due schedules failed: ${(error as Error).message}`);
      return;
    }
    for (const row of due) {
      // Shutdown may begin while earlier rows are written.
      if ((this.state as string) === 'stopped') return;
      let plan: TickPlan;
      try {
        plan = planTicks(this.schedule(row), row.nextRunAt, now, row.catchUp, this.options.misfireThreshold);
      } catch (error) {
        this.warnOnce(row.name, timingKey(row), `cannot compute its ticks: ${(error as Error).message}`);
        continue;
      }
      try {
        await this.fireOne(row, plan, now);
      } catch (error) {
        this.logger.warn(`Schedule "${row.name}": writing the tick failed: ${(error as Error).message}`);
      }
    }
  }

  private async fireOne(row: DueSchedule, plan: TickPlan, now: Date): Promise<void> {
    const result = await this.storage.fire({
      name: row.name,
      due: row.nextRunAt,
      next: plan.next,
      ticks: plan.run,
      jobIds: plan.run.map((tick) => uuidv7(tick.getTime())),
      now,
    });
    if (!result.won) return;
    const late = now.getTime() - row.nextRunAt.getTime() > this.options.misfireThreshold;
    if (late || plan.truncated) {
      this.logger.log(
        `Schedule "${row.name}" caught up (catchUp: ${row.catchUp}) on ticks since ${row.nextRunAt.toISOString()}: ` +
          `${result.queued} job(s) queued, ${result.skipped} skipped by overlap` +
          (plan.truncated ? `; more than ${MAX_CATCH_UP_TICKS} ticks were missed, later ones were dropped` : ''),
      );
    } else if (result.skipped) {
      this.logger.log(
        `Schedule "${row.name}": tick ${plan.run[0]?.toISOString()} skipped, the previous run is still queued or active`,
      );
    }
  }

  private schedule(row: { cron: string; timeZone: string }): CronSchedule {
    const key = timingKey(row);
    let parsed = this.parsed.get(key);
    if (!parsed) {
      parsed = CronSchedule.parse(row.cron, row.timeZone);
      this.parsed.set(key, parsed);
    }
    return parsed;
  }

  /** A row this code cannot read (say, written by a newer version) would otherwise log on every pass. */
  private warnOnce(schedule: string, key: string, message: string): void {
    const id = `${schedule}\u0000${key}\u0000${message}`;
    if (this.warned.has(id)) return;
    this.warned.add(id);
    this.logger.warn(`Schedule "${schedule}" (${key.replace('\u0000', ' ')}): ${message}`);
  }

  async stop(): Promise<void> {
    if (this.state !== 'running') {
      this.state = 'stopped';
      return;
    }
    this.state = 'stopped';
    for (const off of this.unsubscribe.splice(0)) off();
    for (const t of this.intervals.splice(0)) clearInterval(t);
    for (const name of [...this.armed.keys()]) this.disarm(name);
    if (this.listening) await this.notifications.stop();
    await Promise.all([this.due.idle(), this.sync.idle()]);
  }
}

function timingKey(row: { cron: string; timeZone: string }): string {
  return `${row.cron}\u0000${row.timeZone}`;
}
