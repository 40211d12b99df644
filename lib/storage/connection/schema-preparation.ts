import type { LoggerService } from '@nestjs/common';
import type pg from 'pg';
import type { DataSource } from 'typeorm';
import { JobsError, settlesWithin } from '../../model/index.js';
import { missingRoutines } from '../routines/routine-installer.js';
import {
  ensureRoutines,
  migrateSchema,
  pendingSchemaVersions,
  type DeferredVersion,
  type SchemaMigrationResult,
} from '../migrations/schema-migrator.js';
import { initialize, ownedDataSource } from './connection-options.js';
import { ownSessionSettings } from '../sql/connection-plan.js';
import type { ResolvedTimeouts } from '../sql/timeouts.js';

export interface SchemaPreparation {
  schema: string;
  migrationsRun: boolean;
  /** `directConnection`: migrations go there rather than through the pooler. */
  direct: pg.ClientConfig | null;
  timeouts: ResolvedTimeouts;
  workerStaleAfter?: number;
  /** Where deferred breaking versions are reported; null when the caller reports them (the CLI). */
  log: Pick<LoggerService, 'warn'> | null;
}

const NOTHING: SchemaMigrationResult = { applied: [], deferred: [], routines: [] };
/** SQLSTATE insufficient_privilege. */
const NO_PRIVILEGE = '42501';

/**
 * Makes the schema ready for this build at start: migrates it (with
 * `migrationsRun`) or checks that it was migrated, and installs the
 * routines this build calls. A schema already at this build's version with
 * its routines is only read, so a role that may not CREATE starts once a
 * privileged one has run `migrate`.
 */
export async function prepareSchema(dataSource: DataSource, p: SchemaPreparation): Promise<SchemaMigrationResult> {
  const target = p.direct ? await directDataSource(p.direct, p.timeouts) : dataSource;
  try {
    const pending = await pendingSchemaVersions(target, p.schema);
    if (!p.migrationsRun && pending.required.length) {
      throw new JobsError(
        `JobsModule: schema "${p.schema}" lacks migration(s) ${pending.all.join(', ')} and migrationsRun is false. ` +
          `Potential fix: add createJobsMigrations('${p.schema}') to your DataSource's migrations and run them, or set migrationsRun: true.`,
      );
    }
    if (!p.migrationsRun || !pending.all.length) {
      if (!(await missingRoutines(target, p.schema)).length) return NOTHING;
      return { ...NOTHING, routines: await privileged(p.schema, () => ensureRoutines(target, p.schema)) };
    }
    const result = await privileged(p.schema, () =>
      migrateSchema(target, p.schema, { workerStaleAfter: p.workerStaleAfter }),
    );
    for (const d of result.deferred) p.log?.warn(deferredLine(p.schema, d));
    return result;
  } finally {
    if (target !== dataSource) await settlesWithin(target.destroy(), 5_000);
  }
}

/** Runs DDL; a role that may not create there gets the two-role setup as its fix. */
async function privileged<T>(schema: string, ddl: () => Promise<T>): Promise<T> {
  try {
    return await ddl();
  } catch (error) {
    if ((error as { code?: unknown }).code !== NO_PRIVILEGE) throw error;
    const refusal = new JobsError(
      `JobsModule: schema "${schema}" needs migrating or routines installed, and this role may not (${(error as Error).message}). ` +
        `Potential fix: run "npx nestjs-durable-jobs migrate --schema ${schema}" once per deploy with a role that may CREATE in the database ` +
        `(the app's role then only needs the grants it prints), or give this role that privilege.`,
    );
    (refusal as { cause?: unknown }).cause = error;
    throw refusal;
  }
}

/** One session straight to the server, for this start's migrations; closed after. */
async function directDataSource(direct: pg.ClientConfig, timeouts: ResolvedTimeouts): Promise<DataSource> {
  const ds = ownedDataSource({ extra: direct }, timeouts, ownSessionSettings(null, timeouts), 1);
  await initialize(ds, 'connecting to "directConnection"');
  return ds;
}

/** The warning for a breaking version left for later: which, why, and when it will be applied. */
function deferredLine(schema: string, d: DeferredVersion): string {
  return (
    `Schema "${schema}": version ${d.version} not applied yet: it is breaking (${d.breaking}) and ${d.olderWorkers} ` +
    `worker(s) of an older build are still running. It will be applied at a later start, or by "npx nestjs-durable-jobs migrate", ` +
    `once the older instances have stopped; this build runs without it.`
  );
}
