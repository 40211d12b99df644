import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { describeValue, JobsError, settlesWithin, toDatabaseError } from '../../model/index.js';
import { quoteIdent } from '../sql/sql-identifiers.js';
import { initialize, ownedDataSource, toPostgresOptions } from './connection-options.js';
import { ownSessionSettings } from '../sql/connection-plan.js';
import type { PoolerMode } from '../sql/session-settings.js';
import type { ResolvedTimeouts } from '../sql/timeouts.js';
import { PRIMARY_WAL_POSITION } from '../sql/wal-position.js';

/** What `monitoring.replica` takes: the app's DataSource on the replica, a postgres URL, or TypeORM postgres options. */
export type ReplicaSource = DataSource | string | Record<string, unknown>;

const FIELD = 'monitoring.replica';
const CLOSE_WITHIN_MS = 5_000;
/** How long a start waits for a standby to replay what the primary has written (its own migration). */
const CATCH_UP_MS = 10_000;

/** Waits until the standby has replayed the primary's current WAL position, at most `ms`; false if it has not. */
async function replayedUpTo(primary: DataSource, replica: DataSource, ms: number): Promise<boolean> {
  const [{ lsn }] = (await primary.query(PRIMARY_WAL_POSITION)) as [{ lsn: string }];
  for (const end = Date.now() + ms; ;) {
    const [{ done }] = (await replica.query('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done', [lsn])) as [
      { done: boolean },
    ];
    if (done) return true;
    if (Date.now() >= end) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The read replica operators' reads go to (`monitoring.replica`), or none.
 * It is checked at start: reachable, holding the module's schema. It closes
 * only a DataSource it opened.
 */
export class ReplicaConnection implements OnApplicationShutdown {
  private static readonly logger = new Logger('JobsModule');

  private constructor(
    /** Null when no replica is configured: operators' reads go to the primary. */
    readonly dataSource: DataSource | null,
    private readonly owned: boolean,
  ) {}

  static none(): ReplicaConnection {
    return new ReplicaConnection(null, false);
  }

  static async open(
    source: ReplicaSource | undefined,
    schema: string,
    timeouts: ResolvedTimeouts,
    primary: DataSource,
    /** The primary's pooler: a replica's URL is taken to go through the same kind. */
    pooler: PoolerMode | null = null,
  ): Promise<ReplicaConnection> {
    if (source === undefined) return ReplicaConnection.none();
    if (source === primary) {
      throw new JobsError(
        `JobsModule: "${FIELD}" is the module's own DataSource, so nothing would be read elsewhere. Potential fix: pass a DataSource, URL or options of a standby, or leave "${FIELD}" out.`,
      );
    }
    let connection: ReplicaConnection;
    if (source instanceof DataSource) {
      if (source.options.type !== 'postgres') {
        throw new JobsError(
          `JobsModule: the "${FIELD}" DataSource is "${source.options.type}"; it must be PostgreSQL (a standby of the primary). Potential fix: pass a postgres DataSource, URL or options.`,
        );
      }
      if (!source.isInitialized) await initialize(source, `connecting to ${FIELD}`);
      connection = new ReplicaConnection(source, false);
    } else {
      if (source === null || (typeof source !== 'string' && typeof source !== 'object')) {
        throw new JobsError(
          `JobsModule: "${FIELD}" must be a DataSource, a postgres URL or TypeORM postgres options, got ${describeValue(source)}. Potential fix: ${FIELD}: process.env.REPLICA_URL.`,
        );
      }
      const ds = ownedDataSource(toPostgresOptions(source, FIELD), timeouts, ownSessionSettings(pooler, timeouts));
      await initialize(ds, `connecting to ${FIELD}`);
      connection = new ReplicaConnection(ds, true);
    }
    try {
      await connection.check(schema, primary);
    } catch (error) {
      await connection.onApplicationShutdown();
      throw error instanceof JobsError ? error : toDatabaseError(`JobsModule: checking ${FIELD}`, error);
    }
    return connection;
  }

  /**
   * The replica holds the schema at the primary's version (it replicates
   * this primary). A standby that has not replayed the primary's latest
   * changes yet (this start's own migration among them) is waited for, a
   * bounded time; a version still behind then, or a non-standby, is logged.
   */
  private async check(schema: string, primary: DataSource): Promise<void> {
    const replica = this.dataSource!;
    const table = `${quoteIdent(schema)}.schema_version`;
    const version = async (ds: DataSource): Promise<number | null> => {
      const [{ present }] = (await ds.query('SELECT to_regclass($1) IS NOT NULL AS present', [table])) as [
        { present: boolean },
      ];
      if (!present) return null;
      return ((await ds.query(`SELECT coalesce(max(version), 0)::int AS v FROM ${table}`)) as [{ v: number }])[0].v;
    };
    const onPrimary = (await version(primary)) ?? 0;
    const [{ standby }] = (await replica.query('SELECT pg_is_in_recovery() AS standby')) as [{ standby: boolean }];
    let onReplica = await version(replica);
    if (standby && (onReplica ?? -1) < onPrimary) {
      await replayedUpTo(primary, replica, CATCH_UP_MS);
      onReplica = await version(replica);
    }
    if (onReplica === null) {
      throw new JobsError(
        `JobsModule: "${FIELD}" has no schema "${schema}" of job tables${standby ? ` (waited ${CATCH_UP_MS / 1000} s for it to replay the primary)` : ''}, so it does not replicate this module's database. ` +
          `Potential fix: point it at a streaming standby of the primary, and check that its replay is running (pg_is_wal_replay_paused()).`,
      );
    }
    if (onReplica < onPrimary) {
      ReplicaConnection.logger.warn(
        `"${FIELD}" holds schema "${schema}" at version ${onReplica}, the primary at ${onPrimary}: reads of what the newer versions added fail until it has replayed them`,
      );
    }
    if (!standby) {
      ReplicaConnection.logger.warn(
        `"${FIELD}" is not a streaming standby (pg_is_in_recovery() is false): operators' reads go there, but JobsMonitor.replicaLag() cannot measure its lag`,
      );
    }
  }

  async onApplicationShutdown(): Promise<void> {
    const ds = this.dataSource;
    if (!this.owned || !ds?.isInitialized) return;
    if (!(await settlesWithin(ds.destroy(), CLOSE_WITHIN_MS))) {
      ReplicaConnection.logger.warn(`Closing "${FIELD}" did not finish within ${CLOSE_WITHIN_MS} ms; going on`);
    }
  }
}
