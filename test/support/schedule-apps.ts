import type { INestApplication, Provider } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Job, type JobHandler, type JobsModuleOptions } from 'nestjs-durable-jobs';
import type { ManualClock } from 'nestjs-durable-jobs/testing';
import { dropSchemas, sql } from './database.js';
import { startJobsApp } from './jobs-app.js';

// Time moves only through ManualClocks in the schedule tests: every tick
// happens because a test moved the clock and then awaited runDue() (a full
// pass on that instance), never because a real timer fired.

@Job('work')
export class Work implements JobHandler<{ n: number } | null> {
  run() {}
}

const schemas: string[] = [];
const apps: INestApplication[] = [];

export interface BootOptions extends Partial<JobsModuleOptions> {
  withScheduleModule?: boolean;
}

/** Drops the schema after the file's tests. */
export function trackSchema(...names: string[]): void {
  schemas.push(...names);
}

/** Closes the app after the file's tests, unless a test closed it first. */
export function trackApp(app: INestApplication): void {
  apps.push(app);
}

/** One instance on `schema`, with the schedule tests' settings: long lease, NOTIFY-only scheduler changes. */
export async function boot(schema: string, clock: ManualClock, providers: Provider[], options: BootOptions = {}) {
  const { withScheduleModule, ...jobs } = options;
  const app = await startJobsApp(
    schema,
    {
      clock,
      // An hour-long lease: jumps of the clock must not make a held run look abandoned.
      worker: { pollInterval: 100, shutdownGrace: 500, lease: 3_600_000 },
      // A minute-long poll: changes reaching other instances within a test came by NOTIFY.
      scheduler: { pollInterval: 60_000 },
      ...jobs,
    },
    { imports: withScheduleModule ? [ScheduleModule.forRoot()] : [], providers },
  );
  apps.push(app);
  return app;
}

export async function close(app: INestApplication) {
  const at = apps.indexOf(app);
  if (at >= 0) apps.splice(at, 1);
  await app.close();
}

/** Closes what is still open and drops every tracked schema: the file's afterAll. */
export async function closeScheduleApps(): Promise<void> {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
  await dropSchemas(...schemas.splice(0));
}

/** Jobs a schedule wrote, by the tick in their unique key. */
export function jobsOf(schema: string, schedule: string) {
  return sql<{ run_at: Date; state: string; payload: unknown; last_error: { name: string } | null }>(
    `SELECT run_at, state, payload, last_error FROM "${schema}".job WHERE unique_key LIKE $1 ORDER BY run_at, id`,
    [`schedule:${schedule}:%`],
  );
}
