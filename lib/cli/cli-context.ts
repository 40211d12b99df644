import type { INestApplicationContext } from '@nestjs/common';
import type { JobsAdmin } from '../admin/jobs-admin.service.js';
import { DEFAULT_SCHEMA } from '../jobs-options.interface.js';
import { JobsError, type EncryptionOptions } from '../model/index.js';
import type { JobsMonitor } from '../monitoring/jobs-monitor.service.js';
import type { JobQueue } from '../queue/job-queue.service.js';
import { stringOption, UsageError, type OptionValues } from './cli-args.js';
import type { CliOutput } from './cli-output.js';

/** Where the CLI works: the database and schema from the options or the environment, and the keyring. */
export interface CliTarget {
  databaseUrl: string;
  /**
   * The server itself, not a pooler in front (DIRECT_DATABASE_URL or
   * `migrate --direct-url`): where `migrate` goes, as a transaction pooler
   * cannot carry a migration.
   */
  directUrl?: string;
  /** A read replica for the read commands (JOBS_REPLICA_URL or --replica-url); actions still go to the primary. */
  replicaUrl?: string;
  /** What sits in front of the server on databaseUrl (--pooler or JOBS_POOLER), as JobsModule's `pooler`. */
  pooler?: string;
  schema: string;
  /** From JOBS_ENCRYPTION_KEYS and JOBS_ENCRYPTION_CURRENT: keys stay out of the command line and its history. */
  encryption?: EncryptionOptions;
}

export function cliTarget(options: OptionValues, env: NodeJS.ProcessEnv): CliTarget {
  const givenUrl = stringOption(options, 'database-url');
  // A server named on the command line is this call's: the environment's direct URL may be another's.
  const directUrl = stringOption(options, 'direct-url') ?? (givenUrl ? undefined : env.DIRECT_DATABASE_URL);
  const databaseUrl = givenUrl ?? env.DATABASE_URL ?? directUrl;
  if (!databaseUrl) {
    throw new UsageError('no database: set DATABASE_URL or pass --database-url postgres://user@host/db');
  }
  const encryption = encryptionFromEnv(env);
  const replicaUrl = stringOption(options, 'replica-url') ?? env.JOBS_REPLICA_URL;
  const pooler = stringOption(options, 'pooler') ?? (env.JOBS_POOLER || undefined);
  return {
    databaseUrl,
    ...(directUrl ? { directUrl } : {}),
    ...(pooler ? { pooler } : {}),
    ...(replicaUrl ? { replicaUrl } : {}),
    schema: stringOption(options, 'schema') ?? DEFAULT_SCHEMA,
    ...(encryption ? { encryption } : {}),
  };
}

/**
 * `JOBS_ENCRYPTION_KEYS="2026-12:<base64>,2026-06:<base64>"`, and
 * `JOBS_ENCRYPTION_CURRENT` (default: the first key listed). The keys
 * themselves are checked as JobsModule checks them, at boot.
 */
function encryptionFromEnv(env: NodeJS.ProcessEnv): EncryptionOptions | undefined {
  const listed = env.JOBS_ENCRYPTION_KEYS?.trim();
  if (!listed) return undefined;
  const keys: Record<string, string> = {};
  for (const entry of listed.split(',')) {
    const colon = entry.indexOf(':');
    if (colon <= 0) {
      throw new JobsError(
        `JOBS_ENCRYPTION_KEYS: an entry is not "<key id>:<base64 key>". Potential fix: JOBS_ENCRYPTION_KEYS="2026-12:$(openssl rand -base64 32)".`,
      );
    }
    keys[entry.slice(0, colon).trim()] = entry.slice(colon + 1).trim();
  }
  return { keys, current: env.JOBS_ENCRYPTION_CURRENT?.trim() || Object.keys(keys)[0]! };
}

/** The services a command uses, from an application context booted for this one call. */
interface CliServices {
  admin: JobsAdmin;
  jobs: JobQueue;
  monitor: JobsMonitor;
  out: CliOutput;
}

/**
 * Boots JobsModule as a tool, not as an instance of the app: no worker, no
 * scheduler, the stored code-defined schedules left as they are (this
 * process declares none), and no migration (`migrate` does that on purpose).
 */
export async function withServices<T>(
  target: CliTarget,
  out: CliOutput,
  run: (services: CliServices) => Promise<T>,
): Promise<T> {
  // Loaded here, not at the top: usage errors and --help answer without loading Nest and TypeORM.
  const [{ NestFactory }, { JobsModule }, { JobsAdmin }, { JobQueue }, { JobsMonitor }] = await Promise.all([
    import('@nestjs/core'),
    import('../jobs.module.js'),
    import('../admin/jobs-admin.service.js'),
    import('../queue/job-queue.service.js'),
    import('../monitoring/jobs-monitor.service.js'),
  ]);
  let app: INestApplicationContext;
  try {
    app = await NestFactory.createApplicationContext(
      JobsModule.forRoot({
        connection: target.databaseUrl,
        // Checked by the module: an unknown mode is its JobsError, naming the two.
        ...(target.pooler ? { pooler: target.pooler as 'transaction' } : {}),
        schema: target.schema,
        migrationsRun: false,
        worker: { enabled: false },
        scheduler: { enabled: false, syncCodeSchedules: false },
        ...(target.encryption ? { encryption: target.encryption } : {}),
        ...(target.replicaUrl ? { monitoring: { replica: target.replicaUrl } } : {}),
      }),
      { logger: false, abortOnError: false },
    );
  } catch (error) {
    throw bootError(error, target);
  }
  try {
    return await run({
      admin: app.get(JobsAdmin),
      jobs: app.get(JobQueue),
      monitor: app.get(JobsMonitor),
      out,
    });
  } finally {
    await app.close();
  }
}

/** A schema that is missing or behind this build gets the CLI's own fix. */
function bootError(error: unknown, target: CliTarget): unknown {
  const lacking = error instanceof JobsError ? /lacks migration\(s\) ([\d, ]+)/.exec(error.message) : null;
  if (!lacking) return error;
  return new JobsError(
    `schema "${target.schema}" lacks version(s) ${lacking[1]!.trim()} of the job tables (a wrong --schema, or a schema this build has not migrated). ` +
      `Potential fix: check --schema, or run: nestjs-durable-jobs migrate --schema ${target.schema}`,
  );
}
